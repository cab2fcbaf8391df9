// Package gossiptest runs gossip clusters inside one process for tests: an
// in-memory memberlist transport (Network) and a helper that starts N nodes
// on it (Start). Both work inside testing/synctest, where failure detection
// takes seconds of fake time and no wall time.
//
// The transport is buffered and never blocks a sender: a packet to a full
// inbox, to an unknown address or to a node that is down is dropped, like
// UDP; dialing a node that is down waits for the dial timeout and fails, like
// TCP to a host that vanished. (memberlist's own MockNetwork cannot be used:
// its unbuffered channels deadlock in synctest and a node it shut down still
// answers, so failures are never detected.)
package gossiptest
