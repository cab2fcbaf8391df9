package sidecar

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/inferrail/inferrail/sidecar/engine"
	"github.com/prometheus/client_golang/prometheus"
)

type sample struct {
	at   time.Duration
	load engine.Load
	err  error
}

// TestScraperCadence runs the loop in fake time: the first scrape after the
// jitter, then one per interval; an unreadable page or a failed fetch is
// reported as an error (unknown load), never as a zero load.
func TestScraperCadence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var mu sync.Mutex
		var got []sample
		n := 0
		fetch := func(ctx context.Context) (io.ReadCloser, error) {
			n++
			switch n {
			case 3:
				return nil, errors.New("connection refused")
			case 4:
				return io.NopCloser(strings.NewReader("garbage")), nil
			}
			return io.NopCloser(strings.NewReader(fmt.Sprint(n))), nil
		}
		parse := func(r io.Reader, max int64) (engine.Load, error) {
			b, _ := io.ReadAll(r)
			var v float64
			if _, err := fmt.Sscan(string(b), &v); err != nil {
				return engine.Load{}, fmt.Errorf("%w: %v", engine.ErrUnreadable, err)
			}
			return engine.Load{Running: v}, nil
		}
		m := newMetrics(prometheus.NewRegistry(), nil)
		cfg := DefaultConfig().Scrape
		s := newScraper(cfg, fetch, parse, func(l engine.Load, err error) {
			mu.Lock()
			got = append(got, sample{time.Since(start), l, err})
			mu.Unlock()
		}, slog.New(slog.DiscardHandler), m)
		s.firstDelay = func(d time.Duration) time.Duration {
			if d != cfg.Interval {
				t.Errorf("jitter bound %v, want %v", d, cfg.Interval)
			}
			return 37 * time.Millisecond
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- s.Run(ctx) }()
		time.Sleep(37*time.Millisecond + 4*cfg.Interval + time.Millisecond) // fake time
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run: %v", err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(got) != 5 {
			t.Fatalf("got %d scrapes, want 5: %+v", len(got), got)
		}
		for i, g := range got {
			if want := 37*time.Millisecond + time.Duration(i)*cfg.Interval; g.at != want {
				t.Errorf("scrape %d at %v, want %v", i, g.at, want)
			}
		}
		if got[0].err != nil || got[0].load.Running != 1 {
			t.Errorf("scrape 0 = %+v, want running 1", got[0])
		}
		if got[2].err == nil || errors.Is(got[2].err, engine.ErrUnreadable) {
			t.Errorf("scrape 2 err = %v, want a fetch error", got[2].err)
		}
		if !errors.Is(got[3].err, engine.ErrUnreadable) {
			t.Errorf("scrape 3 err = %v, want unreadable", got[3].err)
		}
		for res, want := range map[string]float64{"ok": 3, "error": 1, "unreadable": 1} {
			if v := metricValue(t, m.scrapes.WithLabelValues(res)); v != want {
				t.Errorf("scrapes{result=%q} = %v, want %v", res, v, want)
			}
		}
		if v := metricValue(t, m.loadReadable); v != 1 {
			t.Errorf("load readable = %v after a good scrape, want 1", v)
		}
	})
}

func TestHTTPPageFetcher(t *testing.T) {
	page := strings.Repeat("x", 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/metrics":
			_, _ = io.WriteString(w, page)
		case "/slow":
			<-r.Context().Done()
		default:
			http.Error(w, "no", http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	tests := []struct {
		name, path string
		timeout    time.Duration
		wantErr    string
	}{
		{"ok", "/metrics", time.Minute, ""},
		{"status", "/down", time.Minute, "status 503"},
		{"timeout", "/slow", time.Millisecond, "deadline exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), tt.timeout)
			defer cancel()
			body, err := httpPageFetcher(srv.Client(), srv.URL+tt.path)(ctx)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(body)
			body.Close()
			if string(b) != page {
				t.Errorf("body %q", b)
			}
		})
	}
}
