package devfleet_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inferrail/inferrail/balancer/route"
	"github.com/inferrail/inferrail/internal/devfleet"
)

// A balancer with routing.shed_delay refuses what its fleet cannot start in
// time, through the real binaries: 2 simulators with their latency model,
// cost_model with shed_delay 100ms, and 16 requests at once, each with a
// prompt of about 6,000 tokens (a prefill of a few hundred milliseconds on
// the simulator's model). The first request on each replica starts at once;
// the rest would queue behind those prefills, so the balancer answers them
// 503 with Retry-After and an OpenAI error, counts them as shed, and logs
// each as a decision with reason shed and no winner. Every request is
// answered, and the ones sent are served.
func TestShedDelayRefusesWhatCannotStartInTime(t *testing.T) {
	bin := buildBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // hang guard
	t.Cleanup(cancel)
	cfg := devfleet.DefaultConfig()
	cfg.Binary, cfg.Replicas, cfg.Balancers, cfg.Port = bin, 2, 1, 0
	cfg.CacheBlocks, cfg.LogDir = 4000, t.TempDir()
	rc := route.DefaultConfig()
	rc.ShedDelay = 100 * time.Millisecond
	cfg.Routing = &rc
	f := startFleet(t, ctx, cfg)
	bal := f.Balancers[0]

	const n = 16
	type answer struct {
		status     int
		retryAfter string
		body       []byte
		err        error
	}
	answers := make([]answer, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			// Different words per request: nothing is shared, so no
			// cached prefix shortens a prefill.
			prompt := strings.Repeat(fmt.Sprintf("word%d ", i), 6000)
			body, _ := json.Marshal(map[string]any{
				"model":      cfg.Model,
				"messages":   []map[string]string{{"role": "user", "content": prompt}},
				"max_tokens": 4,
			})
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, bal.URL+"/v1/chat/completions", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				answers[i].err = err
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			answers[i] = answer{resp.StatusCode, resp.Header.Get("Retry-After"), b, err}
		})
	}
	wg.Wait()

	shed, served := 0, 0
	for i, a := range answers {
		switch {
		case a.err != nil:
			t.Fatalf("request %d: %v", i, a.err)
		case a.status == http.StatusOK:
			served++
		case a.status == http.StatusServiceUnavailable:
			shed++
			var e struct {
				Error struct {
					Message, Type string
				} `json:"error"`
			}
			if err := json.Unmarshal(a.body, &e); err != nil || !strings.Contains(e.Error.Message, "too loaded") || e.Error.Type == "" {
				t.Errorf("request %d: shed answer %s is not an OpenAI error naming the load", i, a.body)
			}
			if a.retryAfter == "" {
				t.Errorf("request %d: shed without Retry-After", i)
			}
		default:
			t.Errorf("request %d: status %d: %s", i, a.status, a.body)
		}
	}
	if served < cfg.Replicas || shed == 0 {
		t.Fatalf("%d served and %d shed of %d: each replica must take one at once and the rest wait past shed_delay", served, shed, n)
	}

	metrics := get(t, bal.Admin+"/metrics")
	want := fmt.Sprintf(`inferrail_balancer_requests_total{mode="proxy",model="%s",outcome="shed",route="chat"} %d`, cfg.Model, shed)
	if !strings.Contains(metrics, want) {
		t.Errorf("metrics lack %s:\n%s", want, grepLines(metrics, "inferrail_balancer_requests_total"))
	}
	var log struct {
		Decisions []struct {
			Winner, Reason string
		} `json:"decisions"`
	}
	if err := getJSON(ctx, bal.Admin+"/debug/decisions", &log); err != nil {
		t.Fatal(err)
	}
	logged := 0
	for _, d := range log.Decisions {
		if d.Reason == string(route.ReasonShed) {
			logged++
			if d.Winner != "" {
				t.Errorf("a shed decision names winner %q", d.Winner)
			}
		}
	}
	if logged != shed {
		t.Errorf("decision log has %d shed decisions, the clients got %d refusals", logged, shed)
	}
}
