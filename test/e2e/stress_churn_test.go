//go:build stress

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inferrail/inferrail/gossip"
)

// stChurnSeries finds the churn replicas a metrics page names.
var stChurnSeries = regexp.MustCompile(`replica="churn-(\d+)"`)

// stChurnIndexes returns the indexes of the churn replicas the page names.
func stChurnIndexes(page []byte) map[int]bool {
	out := map[int]bool{}
	for _, m := range stChurnSeries.FindAllSubmatch(page, -1) {
		i, _ := strconv.Atoi(string(m[1]))
		out[i] = true
	}
	return out
}

// stChurnBatch is one batch of in-process sidecar nodes.
type stChurnBatch struct {
	first, n int
	cancel   []context.CancelFunc
	done     []chan struct{}
}

// leave makes the batch's nodes leave, group nodes at a time, and waits for
// them to shut down.
func (b *stChurnBatch) leave(group int) {
	for i := 0; i < len(b.cancel); i += group {
		end := min(i+group, len(b.cancel))
		for _, c := range b.cancel[i:end] {
			c()
		}
		for _, d := range b.done[i:end] {
			<-d
		}
	}
}

// TestStressChurn: 5,000 replicas pass through the real balancer's gossip
// view, 50 at a time, as in a rolling restart: sidecar nodes (the gossip
// package, in this process) that advertise a data address nobody listens on,
// so that the balancer's probes fail and count, join and are listed; then
// the batch before them leaves. Every series of a replica that left is
// deleted, the page with one batch listed does not grow from batch to batch,
// and after the last batch left the page is back to its size before the
// first.
func TestStressChurn(t *testing.T) {
	const batch = 50
	batches := 5000 / batch
	if v := os.Getenv("INFERRAIL_CHURN_REPLICAS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 2*batch {
			t.Fatalf("INFERRAIL_CHURN_REPLICAS=%q: want an integer >= %d", v, 2*batch)
		}
		batches = n / batch
	}
	bin := scBuild(t)
	// memberlist's LAN timings on both sides: a hundred nodes in one test
	// process on a loaded machine miss the local profile's 200 ms probes.
	l, a, g := scFreePort(t), scFreePort(t), scFreePort(t)
	bal := &btBalancer{url: fmt.Sprintf("http://127.0.0.1:%d", l), admin: fmt.Sprintf("http://127.0.0.1:%d", a), gossip: fmt.Sprintf("127.0.0.1:%d", g)}
	cfgPath := filepath.Join(t.TempDir(), "bal-churn.yaml")
	cfgText := strings.Replace(btConfig(fmt.Sprintf("127.0.0.1:%d", l), fmt.Sprintf("127.0.0.1:%d", a), bal.gossip, nil, "500ms"),
		"profile: local", "profile: lan", 1)
	if err := os.WriteFile(cfgPath, []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}
	bal.proc = scStart(t, bin, "bal-churn", "balancer", "--config", cfgPath, "--node-name", "bal-churn")
	scWait(t, "bal-churn admin", func() error {
		resp, err := http.Get(bal.admin + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err
	})
	page := func() []byte {
		b, err := scMetricPage(bal.admin)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	startBatch := func(k int) *stChurnBatch {
		b := &stChurnBatch{first: k * batch, n: batch}
		for i := range batch {
			cfg := gossip.DefaultConfig()
			cfg.NodeName = fmt.Sprintf("churn-%d", b.first+i)
			cfg.Role = gossip.RoleSidecar
			cfg.BindAddr, cfg.BindPort = "127.0.0.1", 0
			cfg.Profile = gossip.ProfileLAN
			cfg.Join = []string{bal.gossip}
			cfg.JoinRetryMin, cfg.JoinRetryMax = 50*time.Millisecond, 500*time.Millisecond
			cfg.Meta = gossip.Meta{Models: []string{"e2e-model"}, DataAddr: "127.0.0.1:1", BlockSize: 16, Engine: "sim"}
			n, err := gossip.New(cfg, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			b.cancel, b.done = append(b.cancel, cancel), append(b.done, done)
			go func() { defer close(done); _ = n.Run(ctx) }()
		}
		return b
	}
	// waitListed waits until the page names exactly the replicas of b.
	waitListed := func(what string, b *stChurnBatch) []byte {
		var p []byte
		scWaitLong(t, what, 3*time.Minute, func() error {
			p = page()
			got := stChurnIndexes(p)
			for i := range batch {
				if b != nil && !got[b.first+i] {
					return fmt.Errorf("churn-%d not listed (%d listed)", b.first+i, len(got))
				}
			}
			want := 0
			if b != nil {
				want = batch
			}
			if len(got) != want {
				return fmt.Errorf("%d churn replicas named, want %d", len(got), want)
			}
			return nil
		})
		return p
	}
	lines := func(p []byte) int { return bytes.Count(p, []byte("\n")) }
	p0 := page()
	before, beforeBytes := lines(p0), len(p0)
	start := time.Now()
	var sizes, bytesAt []int
	var prev *stChurnBatch
	for k := range batches {
		cur := startBatch(k)
		scWaitLong(t, fmt.Sprintf("batch %d listed", k), 3*time.Minute, func() error {
			got := stChurnIndexes(page())
			for i := range batch {
				if !got[cur.first+i] {
					return fmt.Errorf("churn-%d not listed", cur.first+i)
				}
			}
			return nil
		})
		if prev != nil {
			prev.leave(batch)
		}
		p := waitListed(fmt.Sprintf("only batch %d listed", k), cur)
		sizes, bytesAt = append(sizes, lines(p)), append(bytesAt, len(p))
		t.Logf("batch %d: %d lines, %d bytes with it alone listed (%v)", k, sizes[k], len(p), time.Since(start).Round(time.Second))
		prev = cur
	}
	prev.leave(10) // the last ones have nobody to relay their leave: a few at a time
	pEnd := waitListed("no churn replica listed", nil)
	after, afterBytes := lines(pEnd), len(pEnd)
	elapsed := time.Since(start)
	stRecord(t, stRow{Row: "13-churn", Fault: fmt.Sprintf("%d replicas churned through a balancer's gossip view, %d at a time (each probed, failing)", batches*batch, batch),
		Result: fmt.Sprintf("no series of a replica that left remains; with one batch listed the metrics page has %d lines for the first batch, %d a tenth of the way, %d for the last (%d and %d bytes); %d lines before the churn, %d after (%d and %d bytes); %.0f s",
			sizes[0], sizes[len(sizes)/10], sizes[len(sizes)-1], bytesAt[0], bytesAt[len(bytesAt)-1], before, after, beforeBytes, afterBytes, elapsed.Seconds()),
		Figures: map[string]any{"replicas": batches * batch, "lines_first_batch": sizes[0], "lines_tenth_batch": sizes[len(sizes)/10], "lines_last_batch": sizes[len(sizes)-1],
			"lines_before": before, "lines_after": after, "bytes_before": beforeBytes, "bytes_after": afterBytes, "seconds": int(elapsed.Seconds())}})
	// Families that appear once (memberlist's own counters, the probe and
	// ejection families, histogram buckets) show up during the first
	// batches: the reference is the page a tenth of the way in. Per-replica
	// series may not accumulate after it.
	ref := sizes[len(sizes)/10]
	if last := sizes[len(sizes)-1]; last > ref+20 {
		t.Errorf("the page with one batch listed grew from %d lines (batch %d) to %d over the churn", ref, len(sizes)/10, last)
	}
	if after > before+100 {
		t.Errorf("the page grew from %d lines before the churn to %d after", before, after)
	}
}
