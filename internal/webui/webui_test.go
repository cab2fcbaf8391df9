package webui

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestQuantile checks the bucket interpolation against hand-computed values.
func TestQuantile(t *testing.T) {
	bounds := []float64{0.01, 0.1, 1, math.Inf(1)}
	tests := []struct {
		name   string
		q      float64
		counts []float64
		want   float64 // ms; NaN: nil
	}{
		{"empty", 0.5, []float64{0, 0, 0, 0}, math.NaN()},
		{"first bucket", 0.5, []float64{10, 10, 10, 10}, 5},
		{"second bucket middle", 0.5, []float64{0, 10, 10, 10}, 55},
		{"inf bucket takes the last finite bound", 0.95, []float64{0, 0, 0, 10}, 1000},
		{"p95 across buckets", 0.95, []float64{50, 90, 100, 100}, 550},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := quantileMS(tc.q, bounds, tc.counts)
			switch {
			case math.IsNaN(tc.want) && got != nil:
				t.Errorf("got %v, want nil", *got)
			case !math.IsNaN(tc.want) && (got == nil || math.Abs(*got-tc.want) > 1e-9):
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestSeriesFromRegistry checks a Series over a real registry: rates, the
// hit ratio and the TTFT of each interval, and the ring's bound and order.
func TestSeriesFromRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	reqs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "req_total"}, []string{"model"})
	ttft := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "ttft_seconds", Buckets: []float64{0.01, 0.1, 1}}, []string{"model"})
	prompt := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "prompt_tokens"})
	cached := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "cached_tokens"})
	reg.MustRegister(reqs, ttft, prompt, cached)
	read := GathererTotals(reg, "req_total", "ttft_seconds", "prompt_tokens", "cached_tokens")
	s := NewSeries(read, time.Second, 2)
	t0 := time.Unix(1000, 0)

	prev := read()
	reqs.WithLabelValues("a").Add(3)
	reqs.WithLabelValues("b").Add(1)
	ttft.WithLabelValues("a").Observe(0.05)
	ttft.WithLabelValues("b").Observe(0.05)
	prompt.Observe(100)
	prompt.Observe(300)
	cached.Observe(100)
	cur := read()
	p := interval(prev, cur, t0, t0.Add(2*time.Second))
	if p.RequestsPerSecond != 2 {
		t.Errorf("rate %v, want 2", p.RequestsPerSecond)
	}
	if p.HitRatio == nil || *p.HitRatio != 0.25 {
		t.Errorf("hit ratio %v, want 0.25", p.HitRatio)
	}
	if p.TTFTP50MS == nil || math.Abs(*p.TTFTP50MS-55) > 1e-9 {
		t.Errorf("p50 %v, want 55 ms", p.TTFTP50MS)
	}
	idle := interval(cur, read(), t0, t0.Add(time.Second))
	if idle.HitRatio != nil || idle.TTFTP50MS != nil || idle.RequestsPerSecond != 0 {
		t.Errorf("an idle interval = %+v, want no ratio, no TTFT, rate 0", idle)
	}
	for i := range 3 {
		s.add(Point{Time: t0.Add(time.Duration(i) * time.Second)})
	}
	pts := s.Points()
	if len(pts) != 2 || !pts[0].Time.Equal(t0.Add(time.Second)) || !pts[1].Time.Equal(t0.Add(2*time.Second)) {
		t.Errorf("ring = %+v, want the last two, oldest first", pts)
	}
}

// TestHandler checks the routes Mount adds.
func TestHandler(t *testing.T) {
	u := New(Info{Role: "balancer", Name: "b0", Version: "v1", Gossip: true}, func() Totals { return Totals{} })
	u.series.add(Point{Time: time.Unix(5, 0), RequestsPerSecond: 3})
	mux := http.NewServeMux()
	u.Mount(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(path string) (*http.Response, string) {
		resp, err := client.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	if resp, _ := get("/"); resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/ui/" {
		t.Errorf("GET / = %d to %q, want 302 to /ui/", resp.StatusCode, resp.Header.Get("Location"))
	}
	for _, tc := range []struct{ path, ctype, contains string }{
		{"/ui/", "text/html", `<script src="app.js">`},
		{"/ui/app.js", "javascript", "getJSON"},
		{"/ui/style.css", "text/css", ".card"},
	} {
		resp, body := get(tc.path)
		if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Type"), tc.ctype) || !strings.Contains(body, tc.contains) {
			t.Errorf("GET %s = %d %q, body without %q", tc.path, resp.StatusCode, resp.Header.Get("Content-Type"), tc.contains)
		}
	}
	if resp, _ := get("/ui/nope.js"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /ui/nope.js = %d, want 404", resp.StatusCode)
	}
	_, body := get("/ui/info")
	var info Info
	if err := json.Unmarshal([]byte(body), &info); err != nil || info != (Info{Role: "balancer", Name: "b0", Version: "v1", Gossip: true}) {
		t.Errorf("GET /ui/info = %s (%v)", body, err)
	}
	_, body = get("/debug/series")
	var sr SeriesResponse
	if err := json.Unmarshal([]byte(body), &sr); err != nil || sr.StepSeconds != 1 || len(sr.Points) != 1 || sr.Points[0].RequestsPerSecond != 3 {
		t.Errorf("GET /debug/series = %s (%v)", body, err)
	}
}

// TestSeriesRun checks that Run adds one point a step, in fake time.
func TestSeriesRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n float64
		s := NewSeries(func() Totals { n += 2; return Totals{Requests: n} }, time.Second, 10)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- s.Run(ctx) }()
		time.Sleep(3*time.Second + time.Millisecond)
		synctest.Wait()
		pts := s.Points()
		if len(pts) != 3 {
			t.Fatalf("%d points after 3 steps, want 3", len(pts))
		}
		for _, p := range pts {
			if p.RequestsPerSecond != 2 {
				t.Errorf("rate %v, want 2", p.RequestsPerSecond)
			}
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}
