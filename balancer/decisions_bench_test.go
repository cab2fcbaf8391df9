package balancer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inferrail/inferrail/balancer/decisionlog"
)

// BenchmarkDecisionLog is the cost the decision log adds to one decision:
// the routing work of BenchmarkDecide's request after tokenization (block
// hashes, 8 candidates, the cost_model pick), then recordDecision. off is
// sample_ratio 0; ring is every decision sampled into the ring only (the
// default); file is every decision also written to a JSON-lines file, with
// the writer goroutine's encoding and writes counted (the timer stops after
// the queue is drained), and a queue large enough that nothing is dropped.
// docs/decisions.md has the figures.
func BenchmarkDecisionLog(b *testing.B) {
	prompt := strings.Repeat("You are a careful assistant; answer briefly and cite the document. ", 30)
	body := []byte(fmt.Sprintf(`{"model":"m","messages":[{"role":"system","content":%q},{"role":"user","content":"hi"}],"max_tokens":1}`, prompt))
	for _, mode := range []string{"off", "ring", "file"} {
		b.Run("log="+mode, func(b *testing.B) {
			cfg := testConfig()
			for i := range 8 {
				cfg.Replicas = append(cfg.Replicas, ReplicaConfig{Name: fmt.Sprintf("r%d", i), URL: "http://127.0.0.1:1", Models: []string{"m"}})
			}
			cfg.DecisionLog = decisionlog.DefaultConfig()
			cfg.DecisionLog.QueueSize = 1 << 20
			switch mode {
			case "off":
				cfg.DecisionLog.SampleRatio = 0
			case "file":
				cfg.DecisionLog.Path = filepath.Join(b.TempDir(), "decisions.jsonl")
			}
			bal, err := New(cfg, nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			ctx, stop := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- bal.decisions.Run(ctx) }()
			p, oerr := bal.resolveDecoded(body)
			if oerr != nil || p.reason != "" {
				b.Fatal(oerr, p.reason)
			}
			sc := bal.getScratch()
			rq := request{id: "0123456789abcdef0123456789abcdef", kind: kindChat, model: p.model, tokens: len(p.ids), mode: modeProxy}
			b.ReportAllocs()
			for b.Loop() {
				sc.hashes = rq.model.hashes(sc.hashes[:0], p.ids, p.salt)
				rq.hashes = sc.hashes
				now := bal.now()
				set := bal.fleet.Snapshot().Models["m"]
				idx, d, err := bal.decide(&rq, set, now, nil, sc)
				if err != nil {
					b.Fatal(err)
				}
				bal.recordDecision(&rq, set, sc, idx, 1, d, now)
			}
			stop()
			if err := <-done; err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if mode == "file" {
				data, err := os.ReadFile(cfg.DecisionLog.Path)
				if err != nil {
					b.Fatal(err)
				}
				if lines := strings.Count(string(data), "\n"); lines != b.N {
					b.Fatalf("%d lines for %d decisions", lines, b.N)
				}
			}
		})
	}
}
