//go:build stress

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/inferrail/inferrail/gossip"
)

// stChurnReplicas counts the churn replicas the balancer's metrics page
// names.
var stChurnSeries = regexp.MustCompile(`(?m)^inferrail_balancer_replica_state\{replica="(churn-\d+)",state="[a-z]+"\} 1$`)

// TestStressChurn: 5,000 replicas pass through the real balancer's gossip
// view, 100 at a time: sidecar nodes (the gossip package, in this process)
// that advertise a data address nobody listens on, so that the balancer's
// probes fail and count, join, are listed, then leave. Every series of a
// replica that left is deleted, and the metrics page after the last batch
// is no larger than after the first.
func TestStressChurn(t *testing.T) {
	const batches, batch = 50, 100
	bin := scBuild(t)
	bal := btStartBalancer(t, bin, "bal-churn", nil, "500ms")
	page := func() []byte {
		b, err := stMetricPage(bal.admin)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	listed := func() int { return len(stChurnSeries.FindAll(page(), -1)) }
	var sizes []int
	var peak int
	start := time.Now()
	for k := range batches {
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for i := range batch {
			cfg := gossip.DefaultConfig()
			cfg.NodeName = fmt.Sprintf("churn-%d", k*batch+i)
			cfg.Role = gossip.RoleSidecar
			cfg.BindAddr, cfg.BindPort = "127.0.0.1", 0
			cfg.Profile = gossip.ProfileLocal
			cfg.Join = []string{bal.gossip}
			cfg.JoinRetryMin, cfg.JoinRetryMax = 50*time.Millisecond, 500*time.Millisecond
			cfg.Meta = gossip.Meta{Models: []string{"e2e-model"}, DataAddr: "127.0.0.1:1", BlockSize: 16, Engine: "sim"}
			n, err := gossip.New(cfg, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() { _ = n.Run(ctx) })
		}
		scWait(t, fmt.Sprintf("batch %d listed", k), func() error {
			if n := listed(); n != batch {
				return fmt.Errorf("%d of %d listed", n, batch)
			}
			return nil
		})
		if len(page()) > peak {
			peak = len(page())
		}
		cancel() // every node of the batch leaves
		wg.Wait()
		scWait(t, fmt.Sprintf("batch %d gone", k), func() error {
			p := page()
			if bytes.Contains(p, []byte(`replica="churn-`)) {
				return fmt.Errorf("%d churn replicas listed, series left: %d", listed(), bytes.Count(p, []byte(`replica="churn-`)))
			}
			return nil
		})
		sizes = append(sizes, len(page()))
	}
	elapsed := time.Since(start)
	first, last := sizes[0], sizes[len(sizes)-1]
	stRecord(t, stRow{Row: "13-churn", Fault: fmt.Sprintf("%d replicas churned through a balancer's gossip view, %d at a time (each probed and failing)", batches*batch, batch),
		Result: fmt.Sprintf("no series of a replica that left remains; the metrics page is %d bytes after the first batch left, %d after the last (%d with %d replicas listed); %.0f s",
			first, last, peak, batch, elapsed.Seconds()),
		Figures: map[string]any{"replicas": batches * batch, "page_after_first": first, "page_after_last": last, "page_peak": peak,
			"seconds": int(elapsed.Seconds())}})
	if last > first+first/20 {
		t.Errorf("the metrics page grew from %d to %d bytes over the churn", first, last)
	}
}
