package balancer

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/inferrail/inferrail/balancer/respcache"
	"github.com/inferrail/inferrail/internal/enginesim"
)

// startLatencySim runs an in-process simulator with its default latency
// model (docs/sim.md), so that a miss costs what a small engine would.
func startLatencySim(b *testing.B) string {
	b.Helper()
	cfg := enginesim.DefaultConfig()
	cfg.Port = 0
	addr := make(chan string, 1)
	cfg.OnListening = func(a string) { addr <- a }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- enginesim.Run(ctx, cfg, nil) }()
	b.Cleanup(func() { cancel(); <-done })
	select {
	case a := <-addr:
		return "http://" + a
	case err := <-done:
		b.Fatalf("sim: %v", err)
	}
	return ""
}

// rcSubjects are the benchmark's questions; rcPhrasings the ways each is
// asked.
var rcSubjects = []string{
	"the capital of France", "the boiling point of water at sea level", "the speed of light in a vacuum",
	"the largest planet in the solar system", "the tallest mountain on earth", "the chemical symbol for gold",
	"the longest river in Africa", "the author of Pride and Prejudice", "the square root of one hundred and forty four",
	"the freezing point of water in Fahrenheit", "the smallest prime number", "the capital city of Japan",
	"the main ingredient of guacamole", "the currency of the United Kingdom", "the distance from the earth to the moon",
	"the number of bones in the adult human body", "the hardest natural mineral", "the year the Berlin wall fell",
	"the inventor of the telephone", "the largest ocean on earth", "the deepest point in the ocean",
	"the language spoken in Brazil", "the fastest land animal", "the closest star to the sun", "the melting point of iron",
}

var rcPhrasings = []string{"What is %s?", "what is %s", "Can you tell me what %s is?", "Please tell me %s."}

func rcBody(q string) string {
	return fmt.Sprintf(`{"model":"sim-model","messages":[{"role":"user","content":%q}],"max_tokens":8,"temperature":0}`, q)
}

// rcBalancer starts a balancer in front of simURL with the given caches.
func rcBalancer(b *testing.B, simURL string, exact, semantic bool, maxDistance float64) (string, *prometheus.Registry) {
	b.Helper()
	cfg := DefaultConfig()
	cfg.Gossip.Enabled = false
	cfg.Health.ProbeInterval = 0
	m := defaultModel()
	m.Name, m.Tokenizer = "sim-model", "builtin:sim"
	cfg.Models = []ModelConfig{m}
	cfg.Replicas = []ReplicaConfig{{Name: "sim", URL: simURL, Models: []string{"sim-model"}}}
	rc := &cfg.ResponseCache
	rc.Exact.Enabled = exact
	rc.Semantic.Enabled = semantic
	rc.Semantic.MaxDistance = maxDistance
	rc.Semantic.Embeddings.URL, rc.Semantic.Embeddings.Model = simURL, "sim-model"
	reg := prometheus.NewRegistry()
	bal, err := New(cfg, nil, reg)
	if err != nil {
		b.Fatal(err)
	}
	front := httptest.NewServer(bal.Handler())
	b.Cleanup(front.Close)
	b.Cleanup(bal.proxy.Close)
	return front.URL, reg
}

// rcSend posts one chat and returns its latency, the cache header and the
// body.
func rcSend(b *testing.B, client *http.Client, url, body string) (time.Duration, string, []byte) {
	t0 := time.Now()
	resp, err := client.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	out, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	d := time.Since(t0)
	if err != nil || resp.StatusCode != 200 {
		b.Fatalf("status %d %s %v", resp.StatusCode, out, err)
	}
	return d, resp.Header.Get(respcache.Header), out
}

func rcReport(b *testing.B, name string, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(pct(lat, 0.5).Microseconds()), name+"-p50-µs")
	b.ReportMetric(float64(pct(lat, 0.99).Microseconds()), name+"-p99-µs")
}

// BenchmarkResponseCache measures, in one run on a simulator with its
// default latency model (8 output tokens a request), side by side: an
// exact hit against a miss, a semantic hit against a miss (exact cache
// off), one embedding call to the simulator, and the hit rates on a
// workload of 25 questions each asked in 4 phrasings, every phrasing
// twice, in a shuffled order, at three max_distance values: the share of
// hits and of hits that answered another question than the one asked. Run
// with -benchtime=1x (docs/gateway.md#what-the-caches-cost).
func BenchmarkResponseCache(b *testing.B) {
	simURL := startLatencySim(b)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	defer client.CloseIdleConnections()
	questions := make([]string, len(rcSubjects))
	for i, s := range rcSubjects {
		questions[i] = fmt.Sprintf(rcPhrasings[0], s)
	}
	b.Run("layer=exact", func(b *testing.B) {
		url, _ := rcBalancer(b, simURL, true, false, 0.35)
		rcSend(b, client, url, rcBody("warm up"))
		for range b.N {
			var miss, hit []time.Duration
			for pass := range 2 {
				for _, q := range questions {
					d, h, _ := rcSend(b, client, url, rcBody(fmt.Sprintf("%s (run %d)", q, b.N)))
					if pass == 0 && h == respcache.StatusMiss {
						miss = append(miss, d)
					} else if pass == 1 && h == respcache.StatusHit {
						hit = append(hit, d)
					}
				}
			}
			rcReport(b, "miss", miss)
			rcReport(b, "hit", hit)
		}
	})
	b.Run("layer=semantic", func(b *testing.B) {
		url, _ := rcBalancer(b, simURL, false, true, 0.35)
		rcSend(b, client, url, rcBody("warm up"))
		for range b.N {
			var miss, hit []time.Duration
			for i, s := range rcSubjects {
				d, h, _ := rcSend(b, client, url, rcBody(questions[i]))
				if h == respcache.StatusMiss {
					miss = append(miss, d)
				}
				d, h, _ = rcSend(b, client, url, rcBody(fmt.Sprintf(rcPhrasings[2], s))) // a paraphrase
				if h == respcache.StatusHit {
					hit = append(hit, d)
				}
			}
			rcReport(b, "miss", miss)
			rcReport(b, "hit", hit)
			b.ReportMetric(100*float64(len(hit))/float64(len(rcSubjects)), "paraphrase-hit-%")
		}
	})
	b.Run("embedding-call", func(b *testing.B) {
		var lat []time.Duration
		for range b.N {
			for _, q := range questions {
				t0 := time.Now()
				resp, err := client.Post(simURL+"/v1/embeddings", "application/json",
					strings.NewReader(fmt.Sprintf(`{"model":"sim-model","input":%q,"encoding_format":"float"}`, q)))
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				lat = append(lat, time.Since(t0))
			}
		}
		rcReport(b, "embed", lat)
	})
	for _, c := range []struct {
		name            string
		exact, semantic bool
		maxDistance     float64
	}{
		{"workload=paraphrased/caches=exact", true, false, 0},
		{"workload=paraphrased/caches=exact+semantic/max_distance=0.1", true, true, 0.1},
		{"workload=paraphrased/caches=exact+semantic/max_distance=0.2", true, true, 0.2},
		{"workload=paraphrased/caches=exact+semantic/max_distance=0.35", true, true, 0.35},
	} {
		b.Run(c.name, func(b *testing.B) {
			url, _ := rcBalancer(b, simURL, c.exact, c.semantic, c.maxDistance)
			type ask struct{ subject, text string }
			var asks []ask
			for i, s := range rcSubjects {
				for _, p := range rcPhrasings {
					q := ask{subject: rcSubjects[i], text: fmt.Sprintf(p, s)}
					asks = append(asks, q, q)
				}
			}
			rng := rand.New(rand.NewPCG(1, 2))
			rng.Shuffle(len(asks), func(i, j int) { asks[i], asks[j] = asks[j], asks[i] })
			for range b.N {
				answerOf := map[string]string{} // stored answer → its subject
				hits, wrong := 0, 0
				for _, a := range asks {
					_, h, body := rcSend(b, client, url, rcBody(a.text))
					key := string(bytes.TrimSpace(body))
					switch h {
					case respcache.StatusHit:
						hits++
						if answerOf[key] != a.subject {
							wrong++
						}
					case respcache.StatusMiss:
						answerOf[key] = a.subject
					}
				}
				b.ReportMetric(100*float64(hits)/float64(len(asks)), "hit-%")
				b.ReportMetric(100*float64(wrong)/float64(len(asks)), "wrong-subject-hit-%")
			}
		})
	}
}
