package kvevents

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseConfig(t *testing.T) {
	def := DefaultConfig()
	with := func(f func(*Config)) Config {
		c := def
		f(&c)
		return c
	}
	tests := []struct {
		name string
		json string
		want Config
	}{
		{"empty object: disabled, publisher resolves to null", `{}`, with(func(c *Config) { c.Publisher = PublisherNull })},
		{"enabled alone resolves publisher to zmq", `{"enable_kv_cache_events": true}`,
			with(func(c *Config) { c.EnableKVCacheEvents, c.Publisher = true, PublisherZMQ })},
		{"null publisher resolves", `{"enable_kv_cache_events": true, "publisher": null}`,
			with(func(c *Config) { c.EnableKVCacheEvents, c.Publisher = true, PublisherZMQ })},
		{"explicit null publisher stays", `{"enable_kv_cache_events": true, "publisher": "null"}`,
			with(func(c *Config) { c.EnableKVCacheEvents, c.Publisher = true, PublisherNull })},
		{"vLLM example", `{"enable_kv_cache_events": true, "publisher": "zmq", "topic": "kv-events"}`,
			with(func(c *Config) { c.EnableKVCacheEvents, c.Publisher, c.Topic = true, PublisherZMQ, "kv-events" })},
		{"every key", `{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://indexer:5557",
			"replay_endpoint":"tcp://*:6557","buffer_steps":5,"hwm":0,"max_queue_size":7,"topic":"kv@10.0.0.1@m"}`,
			Config{EnableKVCacheEvents: true, Publisher: PublisherZMQ, Endpoint: "tcp://indexer:5557",
				ReplayEndpoint: "tcp://*:6557", BufferSteps: 5, HWM: 0, MaxQueueSize: 7, Topic: "kv@10.0.0.1@m"}},
		{"null replay endpoint", `{"replay_endpoint": null}`, with(func(c *Config) { c.Publisher = PublisherNull })},
		{"disabled config does not check endpoints", `{"endpoint": "udp://x"}`,
			with(func(c *Config) { c.Publisher, c.Endpoint = PublisherNull, "udp://x" })},
		{"inproc and ipc", `{"enable_kv_cache_events":true,"endpoint":"inproc://cache","replay_endpoint":"ipc:///tmp/r"}`,
			with(func(c *Config) {
				c.EnableKVCacheEvents, c.Publisher, c.Endpoint, c.ReplayEndpoint = true, PublisherZMQ, "inproc://cache", "ipc:///tmp/r"
			})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseConfig(tt.json)
			if err != nil {
				t.Fatalf("ParseConfig() error: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseConfig() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		json string
		want []string // substrings of the error
	}{
		{"not json", `{`, []string{"JSON object"}},
		{"not an object", `[1]`, []string{"JSON object"}},
		{"null", `null`, []string{"JSON object"}},
		{"unknown key", `{"enable_kv_cache_event": true}`, []string{`unknown key "enable_kv_cache_event"`, "true"}},
		{"bool as string", `{"enable_kv_cache_events": "yes"}`, []string{"enable_kv_cache_events", `"yes"`}},
		{"int as string", `{"buffer_steps": "10"}`, []string{"buffer_steps", `"10"`}},
		{"float int", `{"hwm": 1.5}`, []string{"hwm", "1.5"}},
		{"null endpoint", `{"endpoint": null}`, []string{"endpoint", "null"}},
		{"topic number", `{"topic": 5}`, []string{"topic", "5"}},
		{"bad publisher", `{"publisher": "kafka"}`, []string{"publisher", `"kafka"`}},
		{"negative buffer", `{"buffer_steps": -1}`, []string{"buffer_steps", "-1"}},
		{"negative hwm", `{"hwm": -2}`, []string{"hwm", "-2"}},
		{"zero queue", `{"max_queue_size": 0}`, []string{"max_queue_size", "0"}},
		{"bad scheme", `{"enable_kv_cache_events": true, "endpoint": "udp://*:1"}`, []string{"endpoint", "udp://*:1"}},
		{"tcp without port", `{"enable_kv_cache_events": true, "replay_endpoint": "tcp://host"}`, []string{"replay_endpoint", "tcp://host"}},
		{"every problem at once", `{"hwm": "x", "topic": 1, "zzz": 2}`, []string{"hwm", "topic", `"zzz"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseConfig(tt.json)
			if err == nil {
				t.Fatal("ParseConfig() succeeded, want an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"enable_kv_cache_events": true}`, `{"publisher": "zmq", "endpoint": "tcp://*:5557"}`,
		`{"buffer_steps": -1, "hwm": "x"}`, `{"\u00e9": 1}`, `{"topic": "a\"b"}`, `[]`, `null`, `{"max_queue_size": 1e3}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cfg, err := ParseConfig(s)
		var obj map[string]json.RawMessage
		if json.Unmarshal([]byte(s), &obj) != nil || obj == nil {
			if err == nil {
				t.Fatalf("ParseConfig(%q) accepted a non-object", s)
			}
			return
		}
		if err != nil {
			// Defaults are valid, so every error comes from a key of the input.
			named := false
			for k := range obj {
				if strings.Contains(err.Error(), k) || strings.Contains(err.Error(), fmt.Sprintf("%q", k)) {
					named = true
				}
			}
			if !named {
				t.Fatalf("ParseConfig(%q) error %q names none of the keys", s, err)
			}
			return
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("ParseConfig(%q) returned a config that does not validate: %v", s, err)
		}
		if cfg.Publisher != PublisherNull && cfg.Publisher != PublisherZMQ {
			t.Fatalf("publisher not resolved: %q", cfg.Publisher)
		}
	})
}

func TestEndpointForRank(t *testing.T) {
	tests := []struct {
		endpoint string
		rank     int
		want     string
		wantErr  bool
	}{
		{"tcp://*:5557", 0, "tcp://*:5557", false},
		{"tcp://*:5557", 1, "tcp://*:5558", false},
		{"tcp://*:5557", 3, "tcp://*:5560", false},
		{"tcp://[::]:5557", 2, "tcp://[::]:5559", false},
		{"tcp://indexer:6000", 1, "tcp://indexer:6001", false},
		{"inproc://cache", 2, "inproc://cache_dp2", false},
		{"inproc://cache", 0, "inproc://cache", false},
		{"", 5, "", false},
		{"ipc:///tmp/kv", 0, "ipc:///tmp/kv", false},
		{"ipc:///tmp/kv", 1, "", true}, // vLLM raises for ipc with a rank > 0
		{"tcp://host", 1, "", true},
		{"tcp://*:65535", 1, "", true},
		{"tcp://*:5557", -1, "", true},
	}
	for _, tt := range tests {
		got, err := EndpointForRank(tt.endpoint, tt.rank)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("EndpointForRank(%q, %d) = %q, %v; want %q, error %v", tt.endpoint, tt.rank, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestShouldBind(t *testing.T) {
	tests := []struct {
		endpoint string
		want     bool
	}{
		{"tcp://*:5557", true},
		{"tcp://[::]:5557", true},
		{"tcp://0.0.0.0:5557", false}, // vLLM connects here (SGLang would bind)
		{"tcp://127.0.0.1:5557", false},
		{"tcp://indexer:5557", false},
		{"ipc:///tmp/kv", true},
		{"inproc://cache", true},
	}
	for _, tt := range tests {
		if got := ShouldBind(tt.endpoint); got != tt.want {
			t.Errorf("ShouldBind(%q) = %v, want %v", tt.endpoint, got, tt.want)
		}
	}
}

func TestListenAddress(t *testing.T) {
	tests := []struct{ in, want string }{
		{"tcp://*:5557", "tcp://0.0.0.0:5557"},
		{"tcp://*:0", "tcp://0.0.0.0:0"},
		{"tcp://:::5557", "tcp://[::]:5557"},
		{"tcp://[::]:5557", "tcp://[::]:5557"},
		{"tcp://127.0.0.1:0", "tcp://127.0.0.1:0"},
		{"ipc:///tmp/kv", "ipc:///tmp/kv"},
		{"inproc://cache_dp1", "inproc://cache_dp1"},
	}
	for _, tt := range tests {
		if got := listenAddress(tt.in); got != tt.want {
			t.Errorf("listenAddress(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
