package gateway

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// clock is a settable test clock.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *clock                   { return &clock{t: time.Unix(1_700_000_000, 0)} }
func takeN(t *testing.T, s Store, key string, q Quota, op Op) Result {
	t.Helper()
	r, err := s.Take(context.Background(), key, q, op)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestQuotaOf(t *testing.T) {
	tests := []struct {
		name string
		l    Limits
		want Quota
	}{
		{"off", Limits{}, Quota{}},
		{"burst defaults to ceil(rps)", Limits{RequestsPerSecond: 2.5}, Quota{Requests: Bucket{Rate: 2.5, Burst: 3}}},
		{"small rps bursts 1", Limits{RequestsPerSecond: 0.1}, Quota{Requests: Bucket{Rate: 0.1, Burst: 1}}},
		{"explicit burst", Limits{RequestsPerSecond: 5, Burst: 20}, Quota{Requests: Bucket{Rate: 5, Burst: 20}}},
		{"tokens per minute", Limits{TokensPerMinute: 600}, Quota{Tokens: Bucket{Rate: 10, Burst: 600}}},
		{"token burst", Limits{TokensPerMinute: 600, TokenBurst: 100}, Quota{Tokens: Bucket{Rate: 10, Burst: 100}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, QuotaOf(tc.l)); diff != "" {
				t.Errorf("QuotaOf mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMemoryStoreBurstThenRate(t *testing.T) {
	c := newClock()
	s := NewMemoryStore(c.now)
	q := Quota{Requests: Bucket{Rate: 2, Burst: 3}}
	for i := range 3 {
		if !takeN(t, s, "k", q, Op{Requests: 1}).Allowed {
			t.Fatalf("request %d of the burst refused", i)
		}
	}
	if takeN(t, s, "k", q, Op{Requests: 1}).Allowed {
		t.Fatal("request beyond the burst allowed")
	}
	c.advance(499 * time.Millisecond)
	if takeN(t, s, "k", q, Op{Requests: 1}).Allowed {
		t.Fatal("allowed before a unit refilled")
	}
	c.advance(time.Millisecond)
	if !takeN(t, s, "k", q, Op{Requests: 1}).Allowed {
		t.Fatal("refused after a unit refilled (0.5s at 2/s)")
	}
	if !takeN(t, s, "other", q, Op{Requests: 1}).Allowed {
		t.Fatal("another client shares the bucket")
	}
}

func TestMemoryStoreTakesBothOrNothing(t *testing.T) {
	c := newClock()
	s := NewMemoryStore(c.now)
	q := Quota{Requests: Bucket{Rate: 1, Burst: 5}, Tokens: Bucket{Rate: 1, Burst: 100}}
	r := takeN(t, s, "k", q, Op{Requests: 1, Tokens: 80})
	if !r.Allowed || r.Levels != (Levels{Requests: 4, Tokens: 20}) {
		t.Fatalf("first take = %+v", r)
	}
	r = takeN(t, s, "k", q, Op{Requests: 1, Tokens: 30})
	if r.Allowed || r.Levels != (Levels{Requests: 4, Tokens: 20}) {
		t.Fatalf("a request short of tokens took something: %+v", r)
	}
	r = takeN(t, s, "k", q, Op{Tokens: 500, Force: true})
	if !r.Allowed || r.Levels.Tokens != -100 {
		t.Fatalf("forced take = %+v, want debt floored at -burst", r)
	}
	c.advance(150 * time.Second)
	r = takeN(t, s, "k", q, Op{Requests: 1, Tokens: 50})
	if !r.Allowed || r.Levels.Tokens != 0 {
		t.Fatalf("after paying the debt = %+v", r)
	}
}

func TestMemoryStoreSweepsFullClients(t *testing.T) {
	c := newClock()
	s := NewMemoryStore(c.now)
	q := Quota{Requests: Bucket{Rate: 1, Burst: 1}}
	for i := range sweepEvery {
		takeN(t, s, string(rune('a'+i%26))+string(rune(i)), q, Op{Requests: 1})
	}
	c.advance(time.Hour)
	for range sweepEvery {
		takeN(t, s, "last", q, Op{Requests: 1})
	}
	if n := s.Len(); n > 1 {
		t.Errorf("%d clients kept after their buckets refilled, want 1", n)
	}
}

func TestStatusAndHeaders(t *testing.T) {
	b := Bucket{Rate: 2, Burst: 10}
	s := b.status(3.5, 5)
	want := Status{Limit: 10, Remaining: 3, Reset: 3250 * time.Millisecond, Wait: 750 * time.Millisecond}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("status mismatch (-want +got):\n%s", diff)
	}
	if s := b.status(-4, 1); s.Remaining != 0 || s.Wait != 2500*time.Millisecond {
		t.Errorf("status in debt = %+v", s)
	}
}

func TestFormatReset(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{-time.Second, "0s"},
		{time.Second, "1s"},
		{6 * time.Minute, "6m0s"},
		{120 * time.Millisecond, "120ms"},
		{8369 * time.Millisecond, "8.369s"},
		{1500 * time.Microsecond, "2ms"},
		{time.Nanosecond, "1ms"},
	}
	for _, tc := range tests {
		if got := FormatReset(tc.d); got != tc.want {
			t.Errorf("FormatReset(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}
