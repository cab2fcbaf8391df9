package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	extprocfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// eppBalancer is a running balancer in endpoint-picker mode.
type eppBalancer struct {
	*btBalancer
	conn *grpc.ClientConn
}

// eppStartBalancer starts a balancer whose endpoint picker listens on a free
// port: through the --epp flag (flag set) or the config's epp section, with
// endpoint (data or engine) and maxConcurrency per gossip replica (0: none).
func eppStartBalancer(t *testing.T, bin, name string, join []string, endpoint string, maxConcurrency int, flag bool) *eppBalancer {
	t.Helper()
	l, a, g, e := scFreePort(t), scFreePort(t), scFreePort(t), scFreePort(t)
	b := &btBalancer{url: fmt.Sprintf("http://127.0.0.1:%d", l), admin: fmt.Sprintf("http://127.0.0.1:%d", a),
		gossip: fmt.Sprintf("127.0.0.1:%d", g)}
	j, _ := json.Marshal(join)
	eppAddr := fmt.Sprintf("127.0.0.1:%d", e)
	listen := strconv.Quote(eppAddr)
	if flag {
		listen = `""`
	}
	cfg := fmt.Sprintf(`listen: 127.0.0.1:%d
admin: 127.0.0.1:%d
models:
  - name: e2e-model
    aliases: [e2e-alias]
    tokenizer: builtin:sim
    block_size: 16
replica_defaults:
  max_concurrency: %d
gossip:
  enabled: true
  bind: %s
  join: %s
  profile: local
health:
  probe_interval: 500ms
epp:
  listen: %s
  endpoint: %s
  fallbacks: 1
`, l, a, maxConcurrency, b.gossip, j, listen, endpoint)
	path := filepath.Join(t.TempDir(), name+".yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"balancer", "--config", path, "--node-name", name, "--log-level", "debug"}
	if flag {
		args = append(args, "--epp", eppAddr)
	}
	b.proc = scStart(t, bin, name, args...)
	conn, err := grpc.NewClient(eppAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	eb := &eppBalancer{btBalancer: b, conn: conn}
	scWait(t, name+" liveness", func() error { return eb.wantHealth("liveness", healthpb.HealthCheckResponse_SERVING) })
	return eb
}

// wantHealth checks one health service's status.
func (b *eppBalancer) wantHealth(service string, want healthpb.HealthCheckResponse_ServingStatus) error {
	r, err := healthpb.NewHealthClient(b.conn).Check(context.Background(), &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		return err
	}
	if r.GetStatus() != want {
		return fmt.Errorf("%s is %v, want %v", service, r.GetStatus(), want)
	}
	return nil
}

// eppPrompt is a chat body with a long prompt for group g.
func eppPrompt(model string, g int) string {
	return fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":%q}],"max_tokens":2}`, model, btPrefix(g))
}

// TestEPP runs balancers in endpoint-picker mode against simulators and
// sidecars, with a Go ext_proc client playing the gateway in each body mode.
func TestEPP(t *testing.T) {
	bin := scBuild(t)
	data := eppStartBalancer(t, bin, "epp-data", nil, "data", 0, true)
	engine := eppStartBalancer(t, bin, "epp-engine", []string{data.gossip}, "engine", 1, false)

	// No replica yet: alive, not ready.
	for _, svc := range []string{"readiness", eppService, ""} {
		if err := data.wantHealth(svc, healthpb.HealthCheckResponse_NOT_SERVING); err != nil {
			t.Fatalf("before any replica: %v", err)
		}
	}
	dataAddrs, engineAddrs := map[string]bool{}, map[string]bool{}
	var sidecars []*scSidecar
	for i := range 2 {
		sim := btStartSim(t, bin, fmt.Sprintf("epp-sim-%d", i), 2000, "--zero-latency")
		sc := scStartSidecar(t, bin, sim.url, sim.pub, sim.replay,
			"--node-name", fmt.Sprintf("epp-replica-%d", i), "--join", data.gossip, "--model", "e2e-model")
		sidecars = append(sidecars, sc)
		dataAddrs[strings.TrimPrefix(sc.data, "http://")] = true
		engineAddrs[strings.TrimPrefix(sim.url, "http://")] = true
	}
	for _, b := range []*eppBalancer{data, engine} {
		scWait(t, "every replica healthy", func() error { return b.replicasHealthy(2) })
		for _, svc := range []string{"readiness", eppService, "", "liveness"} {
			scWait(t, svc+" serving", func() error { return b.wantHealth(svc, healthpb.HealthCheckResponse_SERVING) })
		}
	}

	t.Run("FullDuplexStreamed", func(t *testing.T) {
		var first string
		for round := range 2 { // the same prompt twice: the second finds it cached
			s := data.open(t, extprocfilterv3.ProcessingMode_FULL_DUPLEX_STREAMED)
			body := eppPrompt("e2e-model", 1)
			s.headers("/v1/chat/completions", nil, false)
			s.body(body, 700)
			p := s.readPick()
			eps := strings.Split(p.header, ",")
			if p.header != p.metadata || len(eps) != 2 || !dataAddrs[eps[0]] || !dataAddrs[eps[1]] || eps[0] == eps[1] {
				t.Fatalf("header %q, metadata %q: want the pick and its fallback among the sidecars %v", p.header, p.metadata, dataAddrs)
			}
			if p.body != body || p.rewrite != "" {
				t.Fatalf("forwarded body changed (%q rewrite): %s", p.rewrite, p.body)
			}
			rh := s.forward(eps[0], "/v1/chat/completions", p.body)
			cached, _ := strconv.Atoi(rh["x-inferrail-cached-tokens"])
			if !strings.HasPrefix(rh["x-inferrail-replica"], "epp-replica-") || rh["x-inferrail-prompt-tokens"] == "" ||
				(round == 1 && cached == 0) {
				t.Errorf("round %d: response headers %v, want the replica, the prompt tokens and (repeated) cached tokens", round, rh)
			}
			if round == 0 {
				first = eps[0]
			} else if eps[0] != first {
				t.Errorf("the repeated prompt went to %s, not %s where it is cached", eps[0], first)
			}
		}
		scWait(t, "epp requests counted", func() error {
			if n := btMetric(t, data.btBalancer, "inferrail_balancer_requests_total", `mode="epp",model="e2e-model",outcome="ok",route="chat"`); n != 2 {
				return fmt.Errorf("%v ok epp requests", n)
			}
			return nil
		})
		if n := btMetric(t, data.btBalancer, "inferrail_balancer_route_decision_seconds_count", `mode="epp"`); n < 2 {
			t.Errorf("%v epp decisions timed", n)
		}
		for _, m := range []string{"inferrail_balancer_replica_in_flight", "inferrail_balancer_replica_pending"} {
			if n := btMetric(t, data.btBalancer, m, ""); n != 0 {
				t.Errorf("%s = %v after every stream ended, want 0", m, n)
			}
		}
	})

	t.Run("BufferedWithAlias", func(t *testing.T) {
		s := data.open(t, extprocfilterv3.ProcessingMode_BUFFERED)
		body := eppPrompt("e2e-alias", 2)
		s.headers("/v1/chat/completions", nil, false)
		if r := s.recv(); r.GetRequestHeaders() == nil || r.GetRequestHeaders().GetResponse() != nil {
			t.Fatalf("buffered headers answer %v, want an empty headers response", r)
		}
		s.body(body, len(body)) // BUFFERED: the whole body in one message
		r := s.recv()
		br := r.GetRequestBody()
		if br == nil {
			t.Fatalf("response %v, want the body response", r)
		}
		p := pickedFrom(br.GetResponse(), r)
		p.body = string(br.GetResponse().GetBodyMutation().GetBody())
		want := strings.Replace(body, "e2e-alias", "e2e-model", 1)
		if p.rewrite != "e2e-model" || p.body != want || p.length != strconv.Itoa(len(want)) || p.header != p.metadata {
			t.Fatalf("alias pick %+v", p)
		}
		s.forward(strings.Split(p.header, ",")[0], "/v1/chat/completions", p.body)
	})

	t.Run("Subset", func(t *testing.T) {
		var only string
		for a := range dataAddrs {
			only = a
			break
		}
		for range 3 {
			s := data.open(t, extprocfilterv3.ProcessingMode_FULL_DUPLEX_STREAMED)
			s.headers("/v1/chat/completions", []string{only}, false)
			s.body(eppPrompt("e2e-model", 3), 4096)
			if p := s.readPick(); p.header != only {
				t.Fatalf("subset [%s]: picked %q", only, p.header)
			}
			s.close()
		}
		s := data.open(t, extprocfilterv3.ProcessingMode_FULL_DUPLEX_STREAMED)
		s.headers("/v1/chat/completions", []string{"192.0.2.7:8000"}, false)
		s.body(eppPrompt("e2e-model", 3), 4096)
		if code, body := s.immediate(); code != 503 || !strings.Contains(body, `"code":503`) {
			t.Fatalf("foreign subset: %d %s, want 503 with an OpenAI error", code, body)
		}
	})

	t.Run("EngineEndpointsAndShedding", func(t *testing.T) {
		// Each replica takes one request from this balancer: two held
		// streams fill the fleet and the third is shed with 429.
		var held []*eppStream
		for i := range 2 {
			s := engine.open(t, extprocfilterv3.ProcessingMode_FULL_DUPLEX_STREAMED)
			s.headers("/v1/completions", nil, false)
			s.body(fmt.Sprintf(`{"model":"e2e-model","prompt":"held %d","max_tokens":1}`, i), 16)
			p := s.readPick()
			if ep := strings.Split(p.header, ",")[0]; !engineAddrs[ep] {
				t.Fatalf("engine endpoint %q is not a simulator's address %v", ep, engineAddrs)
			}
			held = append(held, s)
		}
		if n := btMetric(t, engine.btBalancer, "inferrail_balancer_replica_in_flight", ""); n != 2 {
			t.Fatalf("%v requests in flight with two held streams, want 2", n)
		}
		s := engine.open(t, extprocfilterv3.ProcessingMode_FULL_DUPLEX_STREAMED)
		s.headers("/v1/completions", nil, false)
		s.body(`{"model":"e2e-model","prompt":"one too many","max_tokens":1}`, 16)
		if code, body := s.immediate(); code != 429 || !strings.Contains(body, "capacity") {
			t.Fatalf("full fleet: %d %s, want 429", code, body)
		}
		for _, h := range held { // the gateway drops the streams: the slots free
			h.cancel()
		}
		scWait(t, "slots freed after the streams ended", func() error {
			s := engine.open(t, extprocfilterv3.ProcessingMode_FULL_DUPLEX_STREAMED)
			defer s.cancel()
			s.headers("/v1/completions", nil, false)
			s.body(`{"model":"e2e-model","prompt":"after","max_tokens":1}`, 16)
			r := s.recv()
			if r.GetRequestHeaders() == nil {
				return fmt.Errorf("still refused: %v", r)
			}
			return nil
		})
	})

	t.Run("NotReadyWithoutReplicas", func(t *testing.T) {
		for _, sc := range sidecars {
			sc.proc.kill(syscall.SIGKILL)
		}
		scWait(t, "readiness drops with the fleet", func() error {
			return data.wantHealth("readiness", healthpb.HealthCheckResponse_NOT_SERVING)
		})
		if err := data.wantHealth("liveness", healthpb.HealthCheckResponse_SERVING); err != nil {
			t.Fatal(err)
		}
		s := data.open(t, extprocfilterv3.ProcessingMode_FULL_DUPLEX_STREAMED)
		s.headers("/v1/completions", nil, false)
		s.body(`{"model":"e2e-model","prompt":"anyone?","max_tokens":1}`, 16)
		if code, _ := s.immediate(); code != 503 {
			t.Fatalf("no replica: %d, want 503", code)
		}
	})
}
