package route

import (
	"testing"

	"github.com/inferrail/inferrail/internal/load"
)

// The load model takes this balancer's share, as the sidecar counted it, out
// of the report's counts, never below zero, and counts the engine's waiting
// requests the sidecar does not proxy as unseen.
func TestLoadOthersAndUnseen(t *testing.T) {
	for _, tc := range []struct {
		name   string
		l      Load
		others Work
		unseen int
	}{
		{name: "others are the report less this balancer's share",
			l: Load{Report: load.Report{InFlight: 9, Pending: 4, PrefillTokens: 12000, Waiting: 4},
				Own: load.Share{InFlight: 2, Pending: 1, PrefillTokens: 2000}},
			others: Work{InFlight: 7, Pending: 3, PrefillTokens: 10000}},
		{name: "a share larger than the totals leaves nothing",
			l:      Load{Report: load.Report{InFlight: 1}, Own: load.Share{InFlight: 3, Pending: 2, PrefillTokens: 5}},
			others: Work{}},
		{name: "engine waiting past the sidecar's pending is unseen",
			l:      Load{Report: load.Report{InFlight: 2, Pending: 2, Waiting: 5}},
			others: Work{InFlight: 2, Pending: 2}, unseen: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.l.Others(); got != tc.others {
				t.Errorf("Others() = %+v, want %+v", got, tc.others)
			}
			if got := tc.l.Unseen(); got != tc.unseen {
				t.Errorf("Unseen() = %d, want %d", got, tc.unseen)
			}
		})
	}
}
