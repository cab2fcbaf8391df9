package decisionlog

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Log samples decisions into the ring and the file queue. Add is safe for
// concurrent use and never blocks on the writer; Run is the one writer.
type Log struct {
	cfg Config
	log *slog.Logger
	out io.WriteCloser // nil: no file
	q   chan *Record
	seq atomic.Uint64
	m   metrics

	mu   sync.Mutex // protects ring and next
	ring []Record
	next int // where the next record goes in ring
}

type metrics struct {
	records *prometheus.CounterVec // result: written, dropped, error
}

// Results of a record on its way to the file.
const (
	resultWritten = "written"
	resultDropped = "dropped"
	resultError   = "error"
)

// Open returns a Log writing to cfg.Path (opened for appending, created
// 0644), to standard output for "-", or to no file for "". cfg must be valid.
func Open(cfg Config, log *slog.Logger, reg prometheus.Registerer) (*Log, error) {
	var out io.WriteCloser
	switch cfg.Path {
	case "":
	case "-":
		out = nopCloser{os.Stdout}
	default:
		f, err := os.OpenFile(cfg.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("open decision log: %w", err)
		}
		out = f
	}
	return New(cfg, out, log, reg), nil
}

// New returns a Log writing to out (nil: no file), which Run closes when it
// returns. cfg must be valid; log may be nil.
func New(cfg Config, out io.WriteCloser, log *slog.Logger, reg prometheus.Registerer) *Log {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	l := &Log{cfg: cfg, log: log, out: out, ring: make([]Record, 0, cfg.Recent)}
	if out != nil {
		l.q = make(chan *Record, max(cfg.QueueSize, 1))
	}
	l.m.records = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "inferrail_balancer_decision_log_records_total",
		Help: "Sampled routing decisions on their way to the decision log file, by result: written, dropped (the writer's queue was full) or error (the write failed).",
	}, []string{"result"})
	for _, r := range []string{resultWritten, resultDropped, resultError} {
		l.m.records.WithLabelValues(r)
	}
	if reg != nil {
		reg.MustRegister(l.m.records)
	}
	return l
}

// Sample reports whether the next decision is to be recorded: build a
// Record and Add it only then.
func (l *Log) Sample() bool {
	switch r := l.cfg.SampleRatio; {
	case r >= 1:
		return true
	case r <= 0:
		return false
	default:
		return rand.Float64() < r
	}
}

// Add numbers rec, keeps it in the ring and queues it for the file; when the
// queue is full the file loses it (counted) and Add returns at once. rec
// must not be changed afterwards.
func (l *Log) Add(rec *Record) {
	rec.Seq = l.seq.Add(1)
	if l.cfg.Recent > 0 {
		l.mu.Lock()
		if len(l.ring) < l.cfg.Recent {
			l.ring = append(l.ring, *rec)
		} else {
			l.ring[l.next] = *rec
		}
		l.next = (l.next + 1) % l.cfg.Recent
		l.mu.Unlock()
	}
	if l.q == nil {
		return
	}
	select {
	case l.q <- rec:
	default:
		l.m.records.WithLabelValues(resultDropped).Inc()
	}
}

// Recent returns up to limit of the ring's records with Seq > after, oldest
// first, and the newest Seq assigned so far.
func (l *Log) Recent(after uint64, limit int) ([]Record, uint64) {
	last := l.seq.Load()
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.ring)
	out := make([]Record, 0, min(n, max(limit, 0)))
	// The oldest record is at next once the ring is full, else at 0.
	start := 0
	if n == l.cfg.Recent {
		start = l.next
	}
	for k := range n {
		r := &l.ring[(start+k)%n]
		if r.Seq > after {
			out = append(out, *r)
		}
	}
	if len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out, last
}

// Run writes queued records as JSON lines until ctx ends, then writes what
// is still queued and closes the file. It returns nil: a failed write is
// counted and logged (once until a write succeeds again), never fatal.
func (l *Log) Run(ctx context.Context) error {
	if l.out == nil {
		<-ctx.Done()
		return nil
	}
	defer l.out.Close()
	bw := bufio.NewWriterSize(l.out, 64<<10)
	var line []byte
	failing := false
	write := func(r *Record) {
		line = append(r.AppendJSON(line[:0]), '\n')
		if _, err := bw.Write(line); err != nil {
			l.m.records.WithLabelValues(resultError).Inc()
			if !failing {
				l.log.Warn("decision log write failed", "path", l.cfg.Path, "err", err)
			}
			failing = true
			return
		}
		l.m.records.WithLabelValues(resultWritten).Inc()
	}
	flush := func() {
		if err := bw.Flush(); err != nil {
			l.m.records.WithLabelValues(resultError).Inc()
			bw.Reset(l.out) // a failed bufio.Writer stays failed; start over
			if !failing {
				l.log.Warn("decision log write failed", "path", l.cfg.Path, "err", err)
			}
			failing = true
			return
		}
		failing = false
	}
	for {
		select {
		case r := <-l.q:
			write(r)
			if len(l.q) == 0 {
				flush()
			}
		case <-ctx.Done():
			for {
				select {
				case r := <-l.q:
					write(r)
				default:
					flush()
					return nil
				}
			}
		}
	}
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
