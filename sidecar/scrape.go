package sidecar

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/inferrail/inferrail/sidecar/engine"
)

// pageParser reads a metrics page (at most maxBytes) into an engine load; an
// error means the page is unreadable.
type pageParser func(r io.Reader, maxBytes int64) (engine.Load, error)

// pageFetcher fetches the engine's metrics page.
type pageFetcher func(ctx context.Context) (io.ReadCloser, error)

// scraper reads the engine's metrics page every interval, after a random
// first delay so a fleet does not scrape in lockstep.
type scraper struct {
	cfg   ScrapeConfig
	fetch pageFetcher
	parse pageParser
	// onSample receives every scrape's outcome, from the scrape goroutine.
	onSample func(engine.Load, error)
	log      *slog.Logger
	m        *metrics
	readable atomic.Bool
	// firstDelay picks the jittered first delay (tests pin it).
	firstDelay func(time.Duration) time.Duration
	// complete, when set, adds what the metrics page lacks to a readable
	// load (llama.cpp's capacity and usage from /props and /slots).
	complete func(context.Context, engine.Load) engine.Load
}

func newScraper(cfg ScrapeConfig, fetch pageFetcher, parse pageParser, onSample func(engine.Load, error), log *slog.Logger, m *metrics) *scraper {
	return &scraper{
		cfg: cfg, fetch: fetch, parse: parse, onSample: onSample, log: log, m: m,
		firstDelay: func(d time.Duration) time.Duration { return rand.N(d) },
	}
}

// Run scrapes until ctx is done. A scrape that overruns the interval delays
// the next one; missed ticks are dropped, never queued.
func (s *scraper) Run(ctx context.Context) error {
	t := time.NewTimer(s.firstDelay(s.cfg.Interval))
	defer t.Stop()
	s.readable.Store(true) // so the first failure is logged
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		start := time.Now()
		s.scrapeOnce(ctx)
		t.Reset(max(s.cfg.Interval-time.Since(start), 0))
	}
}

func (s *scraper) scrapeOnce(ctx context.Context) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	load, err := s.read(ctx)
	s.m.scrapeSeconds.Observe(time.Since(start).Seconds())
	if ctx.Err() != nil && err != nil && errors.Is(ctx.Err(), context.Canceled) {
		return // shutting down
	}
	switch {
	case err == nil:
		s.m.scrapes.WithLabelValues("ok").Inc()
		s.m.loadReadable.Set(1)
		s.m.engineRunning.Set(load.Running)
		s.m.engineWaiting.Set(load.Waiting)
		s.m.engineKVUsage.Set(load.KVUsage)
		if load.NumGPUBlocks > 0 {
			s.m.engineCapacity.Set(float64(load.NumGPUBlocks))
		}
		if !s.readable.Swap(true) {
			s.log.Info("engine load readable again")
		}
	case errors.Is(err, engine.ErrUnreadable):
		s.m.scrapes.WithLabelValues("unreadable").Inc()
		s.m.loadReadable.Set(0)
		if s.readable.Swap(false) {
			s.log.Warn("engine metrics page unreadable; load reported as unknown", "err", err)
		}
	default:
		s.m.scrapes.WithLabelValues("error").Inc()
		s.m.loadReadable.Set(0)
		if s.readable.Swap(false) {
			s.log.Warn("engine metrics scrape failed; load reported as unknown", "err", err)
		}
	}
	s.onSample(load, err)
}

func (s *scraper) read(ctx context.Context) (engine.Load, error) {
	body, err := s.fetch(ctx)
	if err != nil {
		return engine.Load{}, err
	}
	defer body.Close()
	l, err := s.parse(body, s.cfg.MaxBytes)
	if err != nil || s.complete == nil {
		return l, err
	}
	return s.complete(ctx, l), nil
}

// httpPageFetcher returns a fetcher that GETs url with client and accepts
// only a 200 answer.
func httpPageFetcher(client *http.Client, url string) pageFetcher {
	return func(ctx context.Context) (io.ReadCloser, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, fmt.Errorf("scrape %s: %w", url, err)
		}
		req.Header.Set("Accept", "text/plain;version=0.0.4")
		resp, err := client.Do(req)
		if err != nil {
			return nil, fmt.Errorf("scrape %s: %w", url, err)
		}
		if resp.StatusCode != http.StatusOK {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			return nil, fmt.Errorf("scrape %s: status %s", url, resp.Status)
		}
		return resp.Body, nil
	}
}

// autoParser detects the engine kind from the first page that names one and
// keeps that kind's table from then on. With a single table it still checks
// the page carries that engine's families.
type autoParser struct {
	tables []engine.MetricNames
	kind   atomic.Pointer[engine.MetricNames]
}

func (a *autoParser) parse(r io.Reader, maxBytes int64) (engine.Load, error) {
	p, err := engine.ParsePageFor(r, maxBytes, a.tables...)
	if err != nil {
		return engine.Load{}, err
	}
	t := a.kind.Load()
	if t == nil {
		k, ok := engine.DetectKind(p, a.tables...)
		if !ok {
			return engine.Load{}, fmt.Errorf("detect engine kind: %w: no known metric family on the page", engine.ErrUnreadable)
		}
		for i := range a.tables {
			if a.tables[i].Kind == k {
				t = &a.tables[i]
			}
		}
		if t == nil {
			return engine.Load{}, fmt.Errorf("detect engine kind: %w: no table for %q", engine.ErrUnreadable, k)
		}
		a.kind.Store(t)
	}
	return engine.ExtractLoad(p, *t)
}
