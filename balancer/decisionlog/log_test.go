package decisionlog

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// blockedWriter blocks every Write until release is closed.
type blockedWriter struct {
	release chan struct{}
	mu      sync.Mutex
	buf     bytes.Buffer
}

func (w *blockedWriter) Write(p []byte) (int, error) {
	<-w.release
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func (w *blockedWriter) Close() error { return nil }

func rec(id string) *Record {
	return &Record{RequestID: id, Model: "m", Policy: "cost_model", Mode: "proxy", Attempt: 1, PromptTokens: 100,
		Winner: "r0", Reason: "lowest_ttft", Candidates: []Candidate{{ID: "r0", State: "healthy"}}}
}

// TestAddNeverWaitsForTheDisk checks that with the writer stuck, Add still
// returns and the records beyond the queue are dropped and counted.
func TestAddNeverWaitsForTheDisk(t *testing.T) {
	w := &blockedWriter{release: make(chan struct{})}
	reg := prometheus.NewRegistry()
	cfg := DefaultConfig()
	cfg.QueueSize = 4
	l := New(cfg, w, nil, reg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- l.Run(ctx) }()
	const n = 100
	for i := range n {
		l.Add(rec(string(rune('a' + i%26))))
	}
	dropped := testutil.ToFloat64(l.m.records.WithLabelValues(resultDropped))
	// The queue holds four; the writer takes a few before its flush blocks.
	if dropped < n/2 {
		t.Errorf("dropped %v records with the writer stuck, want >= %d", dropped, n/2)
	}
	close(w.release)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	written := testutil.ToFloat64(l.m.records.WithLabelValues(resultWritten))
	if written+dropped != n {
		t.Errorf("written %v + dropped %v != %d", written, dropped, n)
	}
	if lines := strings.Count(w.buf.String(), "\n"); float64(lines) != written {
		t.Errorf("file has %d lines, written counts %v", lines, written)
	}
}

// TestRunWritesJSONLines checks one JSON object per line, numbered in order,
// and that what is queued when ctx ends is still written.
func TestRunWritesJSONLines(t *testing.T) {
	var buf closeBuffer
	l := New(DefaultConfig(), &buf, nil, nil)
	for _, id := range []string{"x", "y", "z"} {
		l.Add(rec(id))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if !buf.closed {
		t.Error("Run did not close the file")
	}
	sc := bufio.NewScanner(&buf.Buffer)
	var got []Record
	for sc.Scan() {
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		got = append(got, r)
	}
	if len(got) != 3 {
		t.Fatalf("got %d lines, want 3", len(got))
	}
	for i, r := range got {
		if r.Seq != uint64(i+1) || r.RequestID != []string{"x", "y", "z"}[i] || r.Candidates[0].ID != "r0" {
			t.Errorf("line %d = %+v", i, r)
		}
	}
}

type closeBuffer struct {
	bytes.Buffer
	closed bool
}

func (b *closeBuffer) Close() error { b.closed = true; return nil }

// failWriter fails its first fails writes.
type failWriter struct {
	fails int
	buf   bytes.Buffer
}

func (w *failWriter) Write(p []byte) (int, error) {
	if w.fails > 0 {
		w.fails--
		return 0, errors.New("disk full")
	}
	return w.buf.Write(p)
}
func (w *failWriter) Close() error { return nil }

// TestWriteErrorRecovers checks that a failed write is counted and later
// records are written again.
func TestWriteErrorRecovers(t *testing.T) {
	w := &failWriter{fails: 1}
	l := New(DefaultConfig(), w, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- l.Run(ctx) }()
	l.Add(rec("a"))
	waitFor(t, func() bool { return testutil.ToFloat64(l.m.records.WithLabelValues(resultError)) >= 1 })
	l.Add(rec("b"))
	waitFor(t, func() bool { return strings.Contains(w.buf.String(), `"request_id":"b"`) })
	cancel()
	<-done
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestRecent checks the ring: oldest first, only after the cursor, bounded
// by limit and by Recent.
func TestRecent(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Recent = 3
	l := New(cfg, nil, nil, nil)
	for i := range 5 {
		l.Add(rec(string(rune('a' + i))))
	}
	got, last := l.Recent(0, 10)
	if last != 5 {
		t.Errorf("last = %d, want 5", last)
	}
	var seqs []uint64
	for _, r := range got {
		seqs = append(seqs, r.Seq)
	}
	if want := []uint64{3, 4, 5}; !equal(seqs, want) {
		t.Errorf("Recent(0) seqs = %v, want %v", seqs, want)
	}
	got, _ = l.Recent(3, 10)
	if len(got) != 2 || got[0].Seq != 4 {
		t.Errorf("Recent(3) = %v", got)
	}
	got, _ = l.Recent(0, 1)
	if len(got) != 1 || got[0].Seq != 5 {
		t.Errorf("Recent(0, 1) = %v, want the newest", got)
	}
	if got, _ := l.Recent(5, 10); len(got) != 0 {
		t.Errorf("Recent(5) = %v, want none", got)
	}
}

func equal(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestSample checks the two ends of SampleRatio.
func TestSample(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ratio float64
		want  bool
	}{{"all", 1, true}, {"none", 0, false}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.SampleRatio = tc.ratio
			l := New(cfg, nil, nil, nil)
			for range 100 {
				if l.Sample() != tc.want {
					t.Fatalf("Sample() = %v at ratio %v", !tc.want, tc.ratio)
				}
			}
		})
	}
}

// TestConfigValidate checks every bad value is reported with its path.
func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate("decision_log"); err != nil {
		t.Errorf("defaults: %v", err)
	}
	c := Config{SampleRatio: 1.5, QueueSize: 0, Recent: -1}
	err := c.Validate("decision_log")
	for _, want := range []string{"decision_log.sample_ratio must be in [0, 1], got 1.5",
		"decision_log.queue_size must be in [1, 1048576], got 0", "decision_log.recent must be in [0, 65536], got -1"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to contain %q", err, want)
		}
	}
}
