package sidecar

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/inferrail/inferrail/internal/kvblock"
	"github.com/inferrail/inferrail/sidecar/engine"
)

// This file holds the sidecar's running state: what it learned about its
// engine (model, kind, block size, load), the control loop that acts on it,
// and the accessors the admin server reads.

func (s *Sidecar) setModel(m string) {
	if s.model.CompareAndSwap(nil, &m) {
		close(s.modelKnown)
	}
}

func (s *Sidecar) currentModel() string {
	if p := s.model.Load(); p != nil {
		return *p
	}
	return ""
}

// waitModel returns the served model name once known.
func (s *Sidecar) waitModel(ctx context.Context) (string, error) {
	select {
	case <-s.modelKnown:
		return s.currentModel(), nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// blockSizeNow returns the block size in use: the engine's, else the
// configured one.
func (s *Sidecar) blockSizeNow() int { return int(s.blockSize.Load()) }

// waitScraped waits for the first scrape (readable or not) and returns the
// block size known then: the engine's, else the configured one.
func (s *Sidecar) waitScraped(ctx context.Context) int {
	select {
	case <-s.scraped:
	case <-ctx.Done():
	}
	return int(s.blockSize.Load())
}

func (s *Sidecar) onScrape(l engine.Load, err error) {
	if err == nil && l.BlockSize > 0 {
		s.blockSize.Store(int64(l.BlockSize))
	}
	defer s.scrapedOnce.Do(func() { close(s.scraped) })
	o := &scrapeOutcome{load: l, err: err, at: time.Now(), kvMark: s.kvMark.Load()}
	s.lastLoad.Store(o)
	if err == nil {
		s.lastGood.Store(o)
		if s.proxy != nil {
			s.proxy.counts.markRunning(int(l.Running))
		}
	}
}

// engineStatus returns the load status without the data path's counts: the
// last readable scrape's load (zero before one), whether the last scrape was
// readable, the engine's KV capacity in tokens, the memory the data path
// saw change since the last readable scrape began (UnscrapedKVTokens) and
// the blocks the engine holds now (HeldBlocks).
func (s *Sidecar) engineStatus() LoadStatus {
	var r LoadStatus
	if g := s.lastGood.Load(); g != nil {
		r.Engine, r.ScrapedAt = g.load, g.at
		r.UnscrapedKVTokens = s.proxy.counts.kvTokens() - g.kvMark
		bs := g.load.BlockSize
		if bs <= 0 {
			bs = s.blockSizeNow()
		}
		r.KVCapacityTokens = int64(g.load.NumGPUBlocks) * int64(bs)
	}
	r.HeldBlocks = s.ctl.heldBlocks()
	o := s.lastLoad.Load()
	switch {
	case o == nil:
		r.Err = "no scrape yet"
	case o.err != nil:
		r.Err = o.err.Error()
	default:
		r.Readable = true
	}
	return r
}

// Load returns the current load status. While the engine's page is
// unreadable, Engine and ScrapedAt hold the last readable scrape (if any).
func (s *Sidecar) Load() LoadStatus {
	r := s.engineStatus()
	r.DataPath = s.proxy.counts.Counts()
	return r
}

// Summary describes the current summary.
func (s *Sidecar) Summary() SummaryInfo { return s.feed.info() }

// control runs the state machine and publishes the load every scrape
// interval.
func (s *Sidecar) control(ctx context.Context) error {
	t := time.NewTicker(s.cfg.Scrape.Interval)
	defer t.Stop()
	var seen *scrapeOutcome
	summaryGauges := 0
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if o := s.lastLoad.Load(); o != seen && o != nil {
			seen = o
			if o.err == nil {
				s.ctl.engineSample(o.load)
			}
		}
		s.ctl.tick()
		if s.gossip != nil {
			s.gossip.SetLoad(s.Load().Report())
			if mu, ok := s.gossip.(metaUpdater); ok {
				e := engineMeta{blockSize: int(s.blockSize.Load()), adminAddr: s.adminAddr}
				if s.lastLoad.Load() != nil {
					// Balancers route to a sidecar that advertises its
					// data address: it does so once the engine was
					// scraped, so that they learn its block size and KV
					// capacity with it rather than rebuild the replica
					// when those arrive.
					e.dataAddr = s.dataAddr
				}
				if g := s.lastGood.Load(); g != nil {
					e.kind, e.capacityBlocks = string(g.load.Kind), g.load.NumGPUBlocks
				}
				e.models, e.adapters = s.advertised()
				mu.updateMeta(e)
			}
		}
		if summaryGauges++; summaryGauges%10 == 0 {
			s.feed.info() // refreshes the summary gauges about once a second
		}
	}
}

func (s *Sidecar) healthy() error {
	if s.draining.Load() {
		return errors.New("draining")
	}
	return nil
}

// blocks returns the active block set for /debug/blocks.
func (s *Sidecar) blocks() (string, map[string][]kvblock.Hash) {
	if s.ctl == nil || s.exact == nil || s.ctlMode() != modeLive {
		var hs []kvblock.Hash
		s.approx.withBlocks(func(b []kvblock.Hash) { hs = b })
		return sourceApprox, map[string][]kvblock.Hash{MediumGPU: hs}
	}
	return sourceExact, s.exact.Sets()
}

func (s *Sidecar) ctlMode() string { return s.ctl.modeName() }

// hostPortFor returns the advertised host:port for a listen address.
func hostPortFor(advertise, listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	if advertise != "" {
		if h, _, err := net.SplitHostPort(advertise); err == nil {
			advertise = h
		}
		host = advertise
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}
