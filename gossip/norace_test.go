//go:build !race

package gossip_test

// raceEnabled shrinks the scale test under the race detector.
const raceEnabled = false
