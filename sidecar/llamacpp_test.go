package sidecar

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/inferrail/inferrail/sidecar/engine"
)

// fakeLlamaCpp serves /props and /slots; slots "" answers 501 as a server
// started with --no-slots does.
func fakeLlamaCpp(t *testing.T, props, slots string) (*url.URL, *atomic.Int64) {
	t.Helper()
	var propsReads atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("GET /props", func(w http.ResponseWriter, r *http.Request) {
		propsReads.Add(1)
		_, _ = w.Write([]byte(props))
	})
	mux.HandleFunc("GET /slots", func(w http.ResponseWriter, r *http.Request) {
		if slots == "" {
			http.Error(w, `{"error":{"code":501,"message":"This server does not support slots endpoint.","type":"not_supported_error"}}`, http.StatusNotImplemented)
			return
		}
		_, _ = w.Write([]byte(slots))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	return u, &propsReads
}

const testProps = `{"total_slots":2,"default_generation_settings":{"n_ctx":4096},"model_alias":"m","build_info":"b1"}`

func TestLlamaCppReaderCompletesTheLoad(t *testing.T) {
	u, propsReads := fakeLlamaCpp(t, testProps,
		`[{"id":0,"n_ctx":4096,"is_processing":true,"n_prompt_tokens":1000,"next_token":[{"n_decoded":24}]},
		  {"id":1,"n_ctx":4096,"is_processing":false,"n_prompt_tokens":3000}]`)
	r := newLlamaCppReader(http.DefaultClient, u, 1<<20, func() int { return 16 }, slog.New(slog.DiscardHandler))
	in := engine.Load{Kind: engine.KindLlamaCpp, Engines: 1, Running: 1}
	got := r.complete(context.Background(), in)
	if want := 2 * 2 * 4096 / 16; got.NumGPUBlocks != want {
		t.Errorf("NumGPUBlocks = %d, want %d", got.NumGPUBlocks, want)
	}
	if want := 1024.0 / 8192; got.KVUsage != want {
		t.Errorf("KVUsage = %v, want %v", got.KVUsage, want)
	}
	r.complete(context.Background(), in)
	if n := propsReads.Load(); n != 1 {
		t.Errorf("/props read %d times in two scrapes, want once", n)
	}
}

func TestLlamaCppReaderWithoutSlots(t *testing.T) {
	u, _ := fakeLlamaCpp(t, testProps, "")
	r := newLlamaCppReader(http.DefaultClient, u, 1<<20, func() int { return 16 }, slog.New(slog.DiscardHandler))
	got := r.complete(context.Background(), engine.Load{Kind: engine.KindLlamaCpp, Engines: 1, Running: 1})
	if got.KVUsage != 0.5 {
		t.Errorf("KVUsage = %v, want the busy share 1/2", got.KVUsage)
	}
	if want := 2 * 2 * 4096 / 16; got.NumGPUBlocks != want {
		t.Errorf("NumGPUBlocks = %d, want %d from /props", got.NumGPUBlocks, want)
	}
}

func TestLlamaCppReaderLeavesOtherEngines(t *testing.T) {
	u, propsReads := fakeLlamaCpp(t, testProps, "[]")
	r := newLlamaCppReader(http.DefaultClient, u, 1<<20, func() int { return 16 }, slog.New(slog.DiscardHandler))
	in := engine.Load{Kind: engine.KindVLLM, Engines: 1, KVUsage: 0.25, NumGPUBlocks: 7}
	if got := r.complete(context.Background(), in); got != in {
		t.Errorf("a vLLM load changed: %+v", got)
	}
	if propsReads.Load() != 0 {
		t.Error("/props read for a vLLM engine")
	}
}
