package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/inferrail/inferrail/internal/dnstest"
)

// dnsReplica is one replica as the balancer's GET /v1/replicas shows it.
type dnsReplica struct {
	Name     string `json:"name"`
	Group    string `json:"group"`
	Health   string `json:"health"`
	InFlight int64  `json:"in_flight"`
}

func dnsReplicas(t *testing.T, b *btBalancer) map[string]dnsReplica {
	t.Helper()
	var list []dnsReplica
	if err := scGetJSON(b.admin+"/v1/replicas", &list); err != nil {
		t.Fatal(err)
	}
	out := map[string]dnsReplica{}
	for _, r := range list {
		out[r.Name] = r
	}
	return out
}

// dnsWantReplicas waits until the balancer routes exactly names, each
// healthy.
func dnsWantReplicas(t *testing.T, b *btBalancer, names ...string) {
	t.Helper()
	scWait(t, fmt.Sprintf("replicas %v", names), func() error {
		got := dnsReplicas(t, b)
		var have []string
		for n, r := range got {
			if r.Health != "healthy" || r.Group != "pool" {
				return fmt.Errorf("replica %+v", r)
			}
			have = append(have, n)
		}
		slices.Sort(have)
		if !slices.Equal(have, names) {
			return fmt.Errorf("replicas %v", have)
		}
		return nil
	})
}

// dnsStream is a streaming completion in progress.
type dnsStream struct {
	resp    *http.Response
	br      *bufio.Reader
	replica string
}

func dnsStartStream(t *testing.T, url string, i int) *dnsStream {
	t.Helper()
	body := fmt.Sprintf(`{"model":"e2e-model","prompt":"stream %d: a long answer, please","max_tokens":800,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`, i)
	resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	s := &dnsStream{resp: resp, br: bufio.NewReader(resp.Body), replica: resp.Header.Get("X-Inferrail-Replica")}
	if line, err := s.br.ReadString('\n'); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("stream %d: %s, first line %q: %v", i, resp.Status, line, err)
	}
	return s
}

// finish reads the stream to its end: the completion tokens its usage
// chunk counts, and whether it ended with [DONE].
func (s *dnsStream) finish() (tokens int, done bool) {
	for {
		line, err := s.br.ReadString('\n')
		if data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok {
			done = data == "[DONE]"
			var chunk struct {
				Usage *struct {
					CompletionTokens int `json:"completion_tokens"`
				} `json:"usage"`
			}
			if json.Unmarshal([]byte(data), &chunk) == nil && chunk.Usage != nil {
				tokens = chunk.Usage.CompletionTokens
			}
		}
		if err != nil {
			return tokens, done
		}
	}
}

// TestDNSDiscovery runs the real binary with its replicas from a DNS server
// the test runs on loopback: three simulators on 127.0.0.2-4, one port, and
// a name whose answers change. A replica that stays keeps its state (its
// in-flight stream is still counted), one that leaves finishes its stream
// and takes no new request, a failing server or a vanished name keeps the
// last known set, and a recovered name's new answer applies.
func TestDNSDiscovery(t *testing.T) {
	bin := scBuild(t)
	srv := dnstest.Start(t)
	port := scFreePort(t)
	sims := map[string]*scSim{}
	for _, ip := range []string{"127.0.0.2", "127.0.0.3", "127.0.0.4"} {
		s := &scSim{bin: bin, port: port, url: fmt.Sprintf("http://%s:%d", ip, port)}
		s.proc = scStart(t, bin, "sim-"+ip, "sim", "--host", ip, "--port", strconv.Itoa(port), "--served-model-name", "e2e-model")
		scWait(t, "sim "+ip, func() error {
			resp, err := http.Get(s.url + "/health")
			if err != nil {
				return err
			}
			resp.Body.Close()
			return nil
		})
		sims[fmt.Sprintf("pool-%s-%d", ip, port)] = s
	}
	name := func(ip string) string { return fmt.Sprintf("pool-%s-%d", ip, port) }
	srv.Set("engines.e2e.test", "127.0.0.2", "127.0.0.3")
	b := tpStart(t, bin, "bal-dns", fmt.Sprintf(`models:
  - name: e2e-model
    block_size: 16
gossip:
  enabled: false
health:
  probe_interval: 200ms
  probe_timeout: 1s
discovery:
  resolver: %s
  dns:
    - group: pool
      names: [engines.e2e.test]
      port: %d
      interval: 100ms
      timeout: 1s
      models: [e2e-model]
      max_concurrency: 1
`, srv.Addr, port))
	dnsWantReplicas(t, b, name("127.0.0.2"), name("127.0.0.3"))

	// One stream on each replica (max_concurrency 1 sends the second to the
	// other one).
	s1, s2 := dnsStartStream(t, b.url, 1), dnsStartStream(t, b.url, 2)
	if s1.replica == s2.replica {
		t.Fatalf("both streams on %s", s1.replica)
	}
	leaving, staying := s1.replica, s2.replica
	var keep string
	for _, ip := range []string{"127.0.0.2", "127.0.0.3"} {
		if name(ip) == staying {
			keep = ip
		}
	}
	srv.Set("engines.e2e.test", keep, "127.0.0.4")
	dnsWantReplicas(t, b, slices.Sorted(slices.Values([]string{staying, name("127.0.0.4")}))...)
	if r := dnsReplicas(t, b)[staying]; r.InFlight != 1 {
		t.Errorf("the replica that stayed shows %d requests in flight, want its stream's 1 (its state was lost)", r.InFlight)
	}
	if n := btEngineInFlight(t, sims[leaving]); n != 1 {
		t.Errorf("the engine that left runs %d requests, want its stream still running", n)
	}
	for i := range 4 {
		r := btComplete(b.url, fmt.Sprintf("after the change %d", i), 2)
		if r.err != nil || r.replica == leaving {
			t.Errorf("request %d: replica %s, err %v (%s left)", i, r.replica, r.err, leaving)
		}
	}
	for _, s := range []*dnsStream{s1, s2} {
		if tokens, done := s.finish(); !done || tokens != 800 {
			t.Errorf("stream on %s ended after %d tokens, [DONE] %v; want all 800 tokens and [DONE]", s.replica, tokens, done)
		}
	}

	// A failing server, then a vanished name, keep the last known set.
	lookupErrors := func() float64 {
		return btMetric(t, b, "inferrail_balancer_discovery_lookups_total", `result="error"`)
	}
	for _, step := range []struct {
		what  string
		apply func()
	}{
		{"the server failing", func() { srv.Fail(true) }},
		{"the name gone (NXDOMAIN)", func() { srv.Fail(false); srv.Set("engines.e2e.test") }},
	} {
		before := lookupErrors()
		step.apply()
		scWait(t, "failed lookups with "+step.what, func() error {
			if n := lookupErrors(); n < before+3 {
				return fmt.Errorf("%v failed lookups", n-before)
			}
			return nil
		})
		dnsWantReplicas(t, b, slices.Sorted(slices.Values([]string{staying, name("127.0.0.4")}))...)
		if r := btComplete(b.url, "during "+step.what, 2); r.err != nil {
			t.Errorf("during %s: %v", step.what, r.err)
		}
	}
	srv.Set("engines.e2e.test", "127.0.0.4")
	dnsWantReplicas(t, b, name("127.0.0.4"))
}
