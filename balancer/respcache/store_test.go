package respcache

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func TestMemStoreBudgetTTLAndPurge(t *testing.T) {
	ctx := context.Background()
	clk := &fakeClock{t: time.Unix(1000, 0)}
	m := newMetrics(nil)
	entry := func(model, scope string) *Entry {
		return &Entry{Model: model, Scope: scope, Status: 200, Body: make([]byte, 100)}
	}
	one := entry("m", "a").size()
	s := newMemStore(3*one, clk.now, m)
	for i := range 3 {
		_ = s.Set(ctx, fmt.Sprint(i), entry("m", "a"), time.Minute)
	}
	if e, _ := s.Get(ctx, "0"); e == nil { // 0 becomes the most recently used
		t.Fatal("entry 0 missing")
	}
	_ = s.Set(ctx, "3", entry("m", "a"), time.Minute) // evicts 1, the least recently used
	if e, _ := s.Get(ctx, "1"); e != nil {
		t.Error("entry 1 survived the budget")
	}
	for _, k := range []string{"0", "2", "3"} {
		if e, _ := s.Get(ctx, k); e == nil {
			t.Errorf("entry %s evicted", k)
		}
	}
	if n, size := s.Len(); n != 3 || size != 3*one {
		t.Errorf("Len = %d, %d", n, size)
	}
	if got := testutil.ToFloat64(m.evictions.WithLabelValues(CacheExact, reasonBudget)); got != 1 {
		t.Errorf("budget evictions = %v", got)
	}
	if got := testutil.ToFloat64(m.entries.WithLabelValues(CacheExact)); got != 3 {
		t.Errorf("entries gauge = %v", got)
	}
	clk.t = clk.t.Add(time.Minute)
	if e, _ := s.Get(ctx, "0"); e != nil {
		t.Error("entry 0 outlived its TTL")
	}
	_ = s.Set(ctx, "b1", entry("m", "b"), time.Minute)
	_ = s.Set(ctx, "b2", entry("o", "b"), time.Minute)
	if n, _ := s.Purge(ctx, Filter{Model: "m", Scope: "b"}); n != 1 {
		t.Errorf("purge m/b removed %d", n)
	}
	if e, _ := s.Get(ctx, "b2"); e == nil {
		t.Error("purge of model m removed model o's entry")
	}
	if n, _ := s.Purge(ctx, Filter{}); n != 2 { // b2 and the expired 3
		t.Errorf("purge all removed %d", n)
	}
	huge := &Entry{Status: 200, Body: make([]byte, 10*one)}
	_ = s.Set(ctx, "huge", huge, time.Minute)
	if e, _ := s.Get(ctx, "huge"); e != nil {
		t.Error("an entry larger than the budget was kept")
	}
}

func TestIndexSearchAndMaxEntries(t *testing.T) {
	m := newMetrics(nil)
	x := newIndex(0, 2, m)
	exp := time.Unix(2000, 0)
	now := time.Unix(1000, 0)
	add := func(id, part string, v ...float32) {
		if err := normalizeVector(v); err != nil {
			t.Fatal(err)
		}
		if err := x.Add(&Vector{ID: id, Partition: part, Expires: exp, V: v}, "test"); err != nil {
			t.Fatal(err)
		}
	}
	add("a", "p", 1, 0)
	add("b", "p", 0, 1)
	q := []float32{0.9, 0.1}
	_ = normalizeVector(q)
	best, dist, ok := x.Search("p", q, now)
	if !ok || best.ID != "a" || dist <= 0 || dist > 0.01 {
		t.Errorf("nearest = %v %v %v", best, dist, ok)
	}
	if _, _, ok := x.Search("other", q, now); ok {
		t.Error("found a vector in another partition")
	}
	add("c", "p", -1, 0) // evicts a, the oldest
	if best, dist, _ := x.Search("p", q, now); best.ID == "a" || dist < 0.5 {
		t.Errorf("after the max: nearest %s at %v", best.ID, dist)
	}
	if _, _, ok := x.Search("p", q, exp); ok {
		t.Error("found an expired vector")
	}
	if got := testutil.ToFloat64(m.evictions.WithLabelValues(CacheSemantic, reasonIndex)); got != 1 {
		t.Errorf("max_entries evictions = %v", got)
	}
	if err := normalizeVector([]float32{0, 0}); err == nil {
		t.Error("the zero vector normalized")
	}
}
