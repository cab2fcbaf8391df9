package llamacpp

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/inferrail/inferrail/sidecar/engine"
)

// seeds adds every recorded page matching pattern to f's corpus.
func seeds(f *testing.F, pattern string, extra ...string) {
	paths, err := filepath.Glob(filepath.Join("testdata", pattern))
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, e := range extra {
		f.Add([]byte(e))
	}
}

// FuzzParseSlots: any bytes give slots that pass the checks, or an
// ErrUnreadable; never a panic.
func FuzzParseSlots(f *testing.F) {
	seeds(f, "slots-*.json", `[{"id":0,"n_ctx":1,"state":1}]`, `[]`, `[{"next_token":[]}]`)
	f.Fuzz(func(t *testing.T, b []byte) {
		slots, err := ParseSlots(bytes.NewReader(b), 1<<16)
		if err != nil {
			if !errors.Is(err, ErrUnreadable) {
				t.Fatalf("error %v does not wrap ErrUnreadable", err)
			}
			return
		}
		if len(slots) == 0 || len(slots) > MaxSlots {
			t.Fatalf("%d slots", len(slots))
		}
		for _, s := range slots {
			if s.NCtx <= 0 || s.PromptTokens < 0 || s.Decoded < 0 {
				t.Fatalf("slot %+v out of range", s)
			}
		}
		if u := Usage(slots); u < 0 || u > 1 || math.IsNaN(u) {
			t.Fatalf("Usage = %v", u)
		}
	})
}

// FuzzParseProps: any bytes give positive slots and context, or an
// ErrUnreadable.
func FuzzParseProps(f *testing.F) {
	seeds(f, "props.json", `{"total_slots":1,"default_generation_settings":{"n_ctx":1}}`)
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseProps(bytes.NewReader(b), 1<<16)
		if err != nil {
			if !errors.Is(err, ErrUnreadable) {
				t.Fatalf("error %v does not wrap ErrUnreadable", err)
			}
			return
		}
		if p.TotalSlots <= 0 || p.SlotContext <= 0 || CapacityTokens(p, nil) <= 0 {
			t.Fatalf("props %+v", p)
		}
	})
}

// FuzzParseMetrics: any page gives a llama.cpp load with finite,
// non-negative counters, or an error wrapping engine.ErrUnreadable.
func FuzzParseMetrics(f *testing.F) {
	seeds(f, "metrics-*.txt", "llamacpp:requests_processing 1\nllamacpp:requests_deferred 0\n")
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := ParseMetrics(bytes.NewReader(b), 1<<16)
		if err != nil {
			if !errors.Is(err, engine.ErrUnreadable) {
				t.Fatalf("error %v does not wrap engine.ErrUnreadable", err)
			}
			return
		}
		if l.Kind != engine.KindLlamaCpp || l.Engines != 1 {
			t.Fatalf("load %+v", l)
		}
		for _, v := range []float64{l.Running, l.Waiting, l.PromptTokensTotal, l.PrefixQueries, l.PrefixHits} {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("non-finite value in %+v", l)
			}
		}
	})
}
