package enginesim

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/inferrail/inferrail/internal/kvblock"
	"github.com/inferrail/inferrail/internal/openai"
)

// simHarness is a front end over real ZeroLatency (or latency-modelled)
// engines, driven in-process through its http.Handler.
type simHarness struct {
	t       testing.TB
	fe      *frontEnd
	engines []*Engine
	reg     *prometheus.Registry
	stop    context.CancelFunc
	wg      sync.WaitGroup
}

// simTestConfig is a small, fast simulator configuration.
func simTestConfig() Config {
	cfg := DefaultConfig()
	cfg.Port = 0
	cfg.ServedModelName = []string{"sim-model", "alias"}
	cfg.Engine.ZeroLatency = true
	cfg.Engine.NumGPUBlocks = 2048
	cfg.Engine.MaxModelLen = 4096
	return cfg
}

// newSimHarness starts cfg.DataParallelSize engines and a front end; the
// engines stop at cleanup (or with h.close inside a synctest bubble).
func newSimHarness(t testing.TB, cfg Config) *simHarness {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("config: %v", err)
	}
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg, cfg.MetricsFlavor, cfg.modelName())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &simHarness{t: t, reg: reg, stop: cancel}
	ranks := make([]*rankState, cfg.DataParallelSize)
	for r := range ranks {
		ecfg := cfg.Engine
		ecfg.Model, ecfg.Rank = cfg.modelName(), r
		eng, err := NewEngine(ecfg, nil, m, nil)
		if err != nil {
			t.Fatal(err)
		}
		h.engines = append(h.engines, eng)
		ranks[r] = &rankState{rank: r, core: eng, load: eng.Load, finished: eng.FinishedRequests, cachedHashes: func() []kvblock.Hash {
			var hs []kvblock.Hash
			for _, b := range eng.CachedBlocks() {
				hs = append(hs, b.Hash)
			}
			return hs
		}}
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			_ = eng.Run(ctx)
		}()
	}
	tok, err := newTokenizer(cfg.Tokenizer, cfg.ChatTemplate)
	if err != nil {
		t.Fatal(err)
	}
	h.fe = newFrontEnd(cfg, nil, tok, ranks, reg)
	t.Cleanup(h.close)
	return h
}

func (h *simHarness) close() {
	h.stop()
	h.wg.Wait()
}

// do sends one request through the handler and returns the recorded response.
func (h *simHarness) do(method, path, body string, hdr ...string) *httptest.ResponseRecorder {
	h.t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.fe.ServeHTTP(rec, req)
	return rec
}

// sseData splits an SSE body into its data payloads.
func sseData(t testing.TB, body []byte) []string {
	t.Helper()
	rd := openai.NewReader(bytes.NewReader(body))
	var out []string
	for {
		ev, err := rd.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("sse: %v", err)
		}
		out = append(out, ev.Data)
	}
}

// counterValue returns the value of a counter series with the given labels.
func counterValue(t testing.TB, g prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if labelsMatch(m, labels) {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func labelsMatch(m *dto.Metric, want map[string]string) bool {
	n := 0
	for _, lp := range m.GetLabel() {
		if v, ok := want[lp.GetName()]; ok {
			if v != lp.GetValue() {
				return false
			}
			n++
		}
	}
	return n == len(want)
}

func mustJSON(t testing.TB, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
}

var _ http.Handler = (*frontEnd)(nil)
