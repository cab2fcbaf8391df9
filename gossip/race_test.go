//go:build race

package gossip_test

// raceEnabled shrinks the scale test under the race detector, which slows
// 200 memberlist nodes more than tenfold.
const raceEnabled = true
