package sidecar

import (
	"context"
	"log/slog"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/inferrail/inferrail/internal/kvblock"
	"github.com/inferrail/inferrail/sidecar/engine"
	"github.com/prometheus/client_golang/prometheus"
)

// TestExactPipeline feeds batches through the pipeline with a fake
// subscriber and checks the sink mirrors the exact set, with router hashes.
func TestExactPipeline(t *testing.T) {
	m := newMetrics(prometheus.NewRegistry(), nil)
	sink := &setSink{set: map[kvblock.Hash]int{}}
	cfg := DefaultConfig()
	cfg.BlockSize = 4
	cfg.KVEvents.Endpoint = "tcp://127.0.0.1:5557"
	p, err := newExactPipeline(cfg, func(context.Context) (string, error) { return "m", nil }, sink, slog.New(slog.DiscardHandler), prometheus.NewRegistry(), m)
	if err != nil {
		t.Fatal(err)
	}
	tokens := []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	seed := kvblock.NewSeed("m", "", "")
	router := kvblock.Hashes(nil, seed, tokens, 4)
	parent := uint64(101)
	steps := []struct {
		name string
		do   func(p *exactPipeline)
		want []kvblock.Hash
	}{
		{"store two blocks", func(p *exactPipeline) {
			p.applyBatch(engine.Batch{Seq: 0, Events: []engine.Event{engine.BlockStored{EngineHashes: []uint64{100, 101}, Tokens: tokens[:8], BlockSize: 4, Medium: engine.MediumGPU}}})
		}, router[:2]},
		{"store a child", func(p *exactPipeline) {
			p.applyBatch(engine.Batch{Seq: 1, Events: []engine.Event{engine.BlockStored{EngineHashes: []uint64{102}, Parent: &parent, Tokens: tokens[8:], BlockSize: 4, Medium: engine.MediumGPU}}})
		}, router},
		{"remove the first", func(p *exactPipeline) {
			p.applyBatch(engine.Batch{Seq: 2, Events: []engine.Event{engine.BlockRemoved{EngineHashes: []uint64{100}, Medium: engine.MediumGPU}}})
		}, router[1:]},
		{"gap not recovered", func(p *exactPipeline) {
			p.gap(false)
			p.clearRank(0, true)
		}, nil},
	}
	done := make(chan struct{})
	step := make(chan func(*exactPipeline))
	p.subscribe = func(ctx context.Context, p *exactPipeline) error {
		for f := range step {
			f(p)
			done <- struct{}{}
		}
		return nil
	}
	errc := make(chan error, 1)
	go func() { errc <- p.Run(t.Context()) }()
	for _, s := range steps {
		step <- s.do
		<-done
		var got []kvblock.Hash
		for h := range sink.set {
			got = append(got, h)
		}
		slices.Sort(got)
		want := slices.Clone(s.want)
		slices.Sort(want)
		if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b []kvblock.Hash) bool { return slices.Equal(a, b) })); diff != "" {
			t.Errorf("%s: sink (-want +got):\n%s", s.name, diff)
		}
		var resynced []kvblock.Hash
		p.Resync(func(sets map[string][]kvblock.Hash, _ bool) { resynced = sets[engine.MediumGPU] })
		slices.Sort(resynced)
		if !slices.Equal(want, resynced) {
			t.Errorf("%s: Resync gave %v, want %v", s.name, resynced, want)
		}
	}
	close(step)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	st := p.Status()
	if st.Batches != 3 || st.Complete || st.Blocks != 0 {
		t.Errorf("status %+v, want 3 batches, incomplete, empty", st)
	}
	if v := metricValue(t, m.eventGaps); v != 1 {
		t.Errorf("gaps = %v, want 1", v)
	}
}

func TestSplitTCPEndpoint(t *testing.T) {
	tests := []struct {
		in       string
		host     string
		port     int
		wantFail bool
	}{
		{"tcp://127.0.0.1:5557", "127.0.0.1", 5557, false},
		{"tcp://*:5557", "127.0.0.1", 5557, false},
		{"tcp://0.0.0.0:6557", "127.0.0.1", 6557, false},
		{"tcp://[::]:6557", "127.0.0.1", 6557, false},
		{"tcp://engine.ns.svc:5557", "engine.ns.svc", 5557, false},
		{"ipc:///tmp/x", "", 0, true},
		{"tcp://h:0", "", 0, true},
		{"tcp://h", "", 0, true},
	}
	for _, tt := range tests {
		host, port, err := splitTCPEndpoint(tt.in)
		if (err != nil) != tt.wantFail || host != tt.host || port != tt.port {
			t.Errorf("splitTCPEndpoint(%q) = %q, %d, %v; want %q, %d, fail %v", tt.in, host, port, err, tt.host, tt.port, tt.wantFail)
		}
	}
}
