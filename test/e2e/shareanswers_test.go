package e2e

import (
	"context"
	"fmt"
	"testing"
)

// TestBalancersShareAnswers checks, through the real binaries, that a
// stream one balancer is proxying counts among the followed answers of
// another balancer's wait for KV memory, on the replica it runs on only, and
// leaves them when it ends: the second balancer proxies nothing, so only the
// answers the first one sends with its load over the gossip can tell it
// (docs/routing.md, "Answers shared between balancers").
func TestBalancersShareAnswers(t *testing.T) {
	bin := scBuild(t)
	f := btStartFleetWith(t, bin, 2, 8000, []string{"bal-ans-a", "bal-ans-b"}, nil)
	a, b := f.bals[0], f.bals[1]
	answers := func() map[string]int {
		var ex struct {
			Candidates []struct {
				ID      string `json:"id"`
				Answers int    `json:"answers"`
			} `json:"candidates"`
		}
		btExplain(t, b, "how many answers are there", 16, &ex)
		m := map[string]int{}
		for _, c := range ex.Candidates {
			m[c.ID] = c.Answers
		}
		return m
	}
	if m := answers(); m["replica-0"] != 0 || m["replica-1"] != 0 {
		t.Fatalf("before any request bal-ans-b counts answers %v", m)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp := btLongStream(t, ctx, a)
	home := resp.Header.Get("X-Inferrail-Replica")
	other := "replica-0"
	if home == other {
		other = "replica-1"
	}
	scWait(t, "bal-ans-b counting the stream's answer on "+home, func() error {
		if m := answers(); m[home] != 1 || m[other] != 0 {
			return fmt.Errorf("answers %v", m)
		}
		return nil
	})
	cancel()
	scWait(t, "bal-ans-b seeing the answer end", func() error {
		if m := answers(); m[home] != 0 {
			return fmt.Errorf("answers %v", m)
		}
		return nil
	})
}
