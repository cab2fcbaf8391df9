package sidecar

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/inferrail/inferrail/sidecar/engine"
	"github.com/inferrail/inferrail/sidecar/engine/llamacpp"
)

// propsRefresh is how often a known /props answer is read again (a restarted
// server may run with another --parallel or context size).
const propsRefresh = 30 * time.Second

// llamacppReader completes the load read from a llama.cpp metrics page,
// which has no usage gauge nor capacity: the capacity comes from /props (and
// /slots when served), the KV usage from /slots, else from the share of busy
// slots. It runs on the scrape goroutine only.
type llamacppReader struct {
	client    *http.Client
	propsURL  string
	slotsURL  string
	maxBytes  int64
	blockSize func() int
	log       *slog.Logger

	mu        sync.Mutex // protects the fields below (read by the admin server in tests)
	props     *llamacpp.Props
	propsAt   time.Time
	slotsWarn bool // a /slots failure was logged
}

func newLlamaCppReader(client *http.Client, base *url.URL, maxBytes int64, blockSize func() int, log *slog.Logger) *llamacppReader {
	return &llamacppReader{
		client: client, maxBytes: maxBytes, blockSize: blockSize, log: log,
		propsURL: base.JoinPath("/props").String(),
		slotsURL: base.JoinPath("/slots").String(),
	}
}

// complete fills l's KV usage and capacity when l was read from a llama.cpp
// page; a load of another engine is returned unchanged. A failed /props or
// /slots read leaves the page's numbers as they are: the page itself was
// readable.
func (r *llamacppReader) complete(ctx context.Context, l engine.Load) engine.Load {
	if l.Kind != engine.KindLlamaCpp {
		return l
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.props == nil || time.Since(r.propsAt) > propsRefresh {
		var p llamacpp.Props
		err := r.get(ctx, r.propsURL, func(b io.Reader) (err error) { p, err = llamacpp.ParseProps(b, r.maxBytes); return err })
		switch {
		case err == nil:
			if r.props == nil || *r.props != p {
				r.log.Info("llama.cpp server properties", "slots", p.TotalSlots, "slot_context", p.SlotContext, "model", p.ModelAlias, "build", p.BuildInfo)
			}
			r.props, r.propsAt = &p, time.Now()
		case r.props == nil:
			r.log.Debug("llama.cpp /props unreadable", "err", err)
		}
	}
	var slots []llamacpp.Slot
	err := r.get(ctx, r.slotsURL, func(b io.Reader) (err error) { slots, err = llamacpp.ParseSlots(b, r.maxBytes); return err })
	if err != nil {
		slots = nil
		if !r.slotsWarn && ctx.Err() == nil {
			r.slotsWarn = true
			r.log.Warn("llama.cpp /slots unreadable: KV usage estimated from the busy slots", "err", err)
		}
	} else {
	}

	var props llamacpp.Props
	if r.props != nil {
		props = *r.props
	}
	switch {
	case len(slots) > 0:
		l.KVUsage = llamacpp.Usage(slots)
	case props.TotalSlots > 0:
		l.KVUsage = min(max(l.Running/float64(props.TotalSlots), 0), 1)
	}
	if tokens := llamacpp.CapacityTokens(props, slots); tokens > 0 {
		if bs := r.blockSize(); bs > 0 {
			l.NumGPUBlocks = max(tokens/bs, 1)
		}
	}
	return l
}

// get GETs url and hands a 200 answer's body to parse.
func (r *llamacppReader) get(ctx context.Context, url string, parse func(io.Reader) error) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("get %s: %w", url, err)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return fmt.Errorf("get %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("get %s: status %s", url, resp.Status)
	}
	return parse(resp.Body)
}
