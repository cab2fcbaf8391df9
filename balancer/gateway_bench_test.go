package balancer

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/inferrail/inferrail/balancer/gateway"
	"github.com/inferrail/inferrail/internal/redistest"
)

// gatewayCases are the configurations the gateway benchmarks compare: the
// same requests without the gateway, with key checks only, and with key
// checks plus request and token limits in memory and through Redis. The
// limits are high enough never to reject.
func gatewayCases(redisAddr string) []struct {
	name  string
	apply func(*Config)
} {
	keys := func(c *Config) {
		c.Gateway.Auth.Keys = []gateway.KeyConfig{{Name: "other", Key: "sk-other"}, {Name: "bench", Key: "sk-bench"}}
	}
	limits := func(c *Config) {
		keys(c)
		c.Gateway.RateLimits.Default = gateway.Limits{RequestsPerSecond: 1e9, Burst: 1 << 30, TokensPerMinute: 1e15}
	}
	return []struct {
		name  string
		apply func(*Config)
	}{
		{"gateway=off", func(*Config) {}},
		{"gateway=keys", keys},
		{"gateway=keys+limits/store=memory", limits},
		{"gateway=keys+limits/store=redis", func(c *Config) {
			limits(c)
			c.Gateway.RateLimits.Redis.Addr = redisAddr
		}},
	}
}

// completionHandler answers like an engine: a completion with usage.
func completionHandler(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"id":"cmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"length"}],"usage":{"prompt_tokens":120,"completion_tokens":1,"total_tokens":121}}`)
}

// BenchmarkGatewayRequest is the latency of one request through the
// balancer's handler (HTTP on loopback, cost_model routing, builtin:sim
// tokenizer) to a fake engine, one request at a time, for each gateway
// configuration: the difference to gateway=off is what keys and limits
// add to a request.
func BenchmarkGatewayRequest(b *testing.B) {
	redis := redistest.Start(b)
	up := httptest.NewServer(http.HandlerFunc(completionHandler))
	defer up.Close()
	prompt := strings.Repeat("You are a careful assistant; answer briefly and cite the document. ", 8)
	body := `{"model":"m","messages":[{"role":"system","content":"` + prompt + `"},{"role":"user","content":"hi"}],"max_tokens":1}`
	for _, tc := range gatewayCases(redis.Addr) {
		b.Run(tc.name, func(b *testing.B) {
			cfg := testConfig(up.URL)
			tc.apply(&cfg)
			bal, err := New(cfg, nil, prometheus.NewRegistry())
			if err != nil {
				b.Fatal(err)
			}
			front := httptest.NewServer(bal.Handler())
			defer front.Close()
			defer bal.proxy.Close()
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
			defer client.CloseIdleConnections()
			do := func() {
				req, _ := http.NewRequest("POST", front.URL+"/v1/chat/completions", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer sk-bench")
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Fatalf("status %d", resp.StatusCode)
				}
			}
			do() // warm the connections and the tokenizer cache
			b.ReportAllocs()
			for b.Loop() {
				do()
			}
		})
	}
}

// BenchmarkGatewayAdmit is the gateway's own work per request, without
// HTTP: authenticate (SHA-256 of the key, constant-time compare with each
// of two keys), admit (one request and the prompt's tokens) and charge the
// completion tokens after the response: in memory, one Redis script call
// for admit and one for charge.
func BenchmarkGatewayAdmit(b *testing.B) {
	redis := redistest.Start(b)
	for _, tc := range gatewayCases(redis.Addr) {
		b.Run(tc.name, func(b *testing.B) {
			cfg := testConfig("http://127.0.0.1:1")
			tc.apply(&cfg)
			bal, err := New(cfg, nil, prometheus.NewRegistry())
			if err != nil {
				b.Fatal(err)
			}
			g := bal.cur().gate
			r := httptest.NewRequest("POST", "/v1/chat/completions", nil)
			r.Header.Set("Authorization", "Bearer sk-bench")
			h := http.Header{}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				id, oerr := g.Authenticate(r)
				if oerr != nil {
					b.Fatal(oerr)
				}
				a, oerr := g.Admit(ctx, h, id, "m", 120)
				if oerr != nil {
					b.Fatal(oerr)
				}
				a.Charge(ctx, 1)
			}
		})
	}
}
