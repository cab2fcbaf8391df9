package devfleet_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/inferrail/inferrail/internal/devfleet"
)

// A dev fleet with ResponseCache answers a repeated question from the
// exact cache and a paraphrase from the semantic cache, embedding with its
// own simulator: offline.
func TestFleetResponseCache(t *testing.T) {
	bin := buildBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // hang guard
	defer cancel()
	cfg := devfleet.DefaultConfig()
	cfg.Binary, cfg.Replicas, cfg.Balancers, cfg.Port = bin, 1, 1, 0
	cfg.ZeroLatency, cfg.ResponseCache = true, true
	cfg.LogDir = t.TempDir()
	f, err := devfleet.Start(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Stop() }()
	ask := func(q string) string {
		body := fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":%q}],"max_tokens":4,"temperature":0}`, cfg.Model, q)
		resp, err := http.Post(f.Balancers[0].URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		return resp.Header.Get("X-Inferrail-Cache")
	}
	for _, c := range []struct{ q, want string }{
		{"what is the capital of France?", "miss"},
		{"what is the capital of France?", "hit"},
		{"what is the capital city of France?", "hit"},
	} {
		if got := ask(c.q); got != c.want {
			t.Errorf("%q: x-inferrail-cache %q, want %q", c.q, got, c.want)
		}
	}
}
