package balancer

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// garbageBody is what the simulator's garbage fault answers.
const garbageBody = "\x00\xff{\"choices\": [garbage\r\ndata: {not json\n\n\xfe\xfe"

// TestMalformedAnswerMovesAndEjects: a replica answering 200 with a body
// that is not an OpenAI answer (garbage under application/json, HTML, a
// stream of something else, an empty body) never reaches the client: the
// request moves to another replica, and the bad one is ejected after
// FailureThreshold such answers.
func TestMalformedAnswerMovesAndEjects(t *testing.T) {
	for _, tc := range []struct {
		name, ct, body string
	}{
		{"garbage json", "application/json", garbageBody},
		{"html", "text/html", "<html>502 from a proxy in the way</html>"},
		{"not an event stream", "text/event-stream", "garbage garbage\n"},
		{"empty", "application/json", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tc.ct)
				_, _ = io.WriteString(w, tc.body)
			})
			good := newUpstream(t, okHandler)
			cfg := testConfig(bad.srv.URL, good.srv.URL)
			cfg.Models[0].Routing.Policy = "round_robin"
			cfg.Health.FailureThreshold = 3
			cfg.Health.BaseEjection = time.Hour
			cfg.Health.MaxEjection = time.Hour
			b, srv := newTestBalancer(t, cfg)
			for i := range 10 {
				resp, body := post(t, srv.URL+"/v1/completions", `{"model":"m","prompt":"x"}`)
				if resp.StatusCode != 200 || body != `{"ok":true}` || resp.Header.Get(HeaderReplica) != "r1" {
					t.Fatalf("request %d: %d from %q: %q", i, resp.StatusCode, resp.Header.Get(HeaderReplica), body)
				}
			}
			if got := len(bad.hits); got != 3 {
				t.Errorf("the bad replica got %d requests, want 3 (ejected after its third bad answer)", got)
			}
			if b.fleet.Snapshot().Replica("r0").Healthy(time.Now()) {
				t.Error("the bad replica is still healthy")
			}
		})
	}
}

// TestMalformedEverywhereIs502: when every attempt gets a malformed answer
// the client gets a 502 in the OpenAI shape, never the garbage.
func TestMalformedEverywhereIs502(t *testing.T) {
	bad := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, garbageBody)
	})
	_, srv := newTestBalancer(t, testConfig(bad.srv.URL))
	resp, body := post(t, srv.URL+"/v1/completions", `{"model":"m","prompt":"x"}`)
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, `"error"`) || strings.Contains(body, "garbage") {
		t.Fatalf("%d: %q; want a 502 error body", resp.StatusCode, body)
	}
}

// TestStreamTurningMalformed: a stream whose events turn into garbage after
// its first one is cut before the garbage (the client gets the good events,
// then an aborted response) and counts toward ejecting its replica.
func TestStreamTurningMalformed(t *testing.T) {
	const first = "data: {\"choices\":[{\"index\":0,\"text\":\"a\"}]}\n\n"
	next := make(chan struct{}, 2)
	bad := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, first)
		w.(http.Flusher).Flush()
		<-next // the client has the first event: the stream has begun
		_, _ = io.WriteString(w, "<html>garbage</html>\n\ndata: [DONE]\n\n")
	})
	cfg := testConfig(bad.srv.URL)
	cfg.Health.FailureThreshold = 2
	cfg.Health.MaxEjectedShare = 1
	cfg.Health.BaseEjection = time.Hour
	cfg.Health.MaxEjection = time.Hour
	b, srv := newTestBalancer(t, cfg)
	for i := range 2 {
		if !b.fleet.Snapshot().Replica("r0").Healthy(time.Now()) {
			t.Fatalf("ejected after %d broken streams, want 2", i)
		}
		resp, err := http.Post(srv.URL+"/v1/completions", "application/json", strings.NewReader(`{"model":"m","prompt":"x","stream":true}`))
		if err != nil {
			t.Fatal(err)
		}
		head := make([]byte, len(first))
		if _, err := io.ReadFull(resp.Body, head); err != nil || string(head) != first {
			t.Fatalf("stream %d: first event %q, %v", i, head, err)
		}
		next <- struct{}{}
		rest, rerr := io.ReadAll(resp.Body)
		resp.Body.Close()
		body := append(head, rest...)
		if rerr == nil {
			t.Errorf("stream %d ended cleanly; want it aborted", i)
		}
		if string(body) != first {
			t.Errorf("stream %d: the client got %q, want only the first event", i, body)
		}
	}
	if b.fleet.Snapshot().Replica("r0").Healthy(time.Now()) {
		t.Error("the replica whose streams turned malformed is still healthy")
	}
}
