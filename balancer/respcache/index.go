package respcache

import (
	"container/list"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
)

// DimensionError is an embedding whose size is not the index's.
type DimensionError struct {
	Got, Want int
	// Source says where Want came from: the config or the first embedding.
	Source string
}

func (e *DimensionError) Error() string {
	return fmt.Sprintf("the embedding has %d dimensions but the semantic index holds %d (set by %s): "+
		"response_cache.semantic.dimensions and the embedding model must agree", e.Got, e.Want, e.Source)
}

// errZeroVector is an embedding with no direction.
var errZeroVector = errors.New("the embedding is the zero vector")

// index is the in-process vector index of the semantic cache: an exact
// cosine search (a dot product of unit vectors) over the vectors of one
// partition, which is linear in the partition's size; docs/gateway.md says
// where an approximate index would be needed. At most max vectors are
// kept, the oldest leaving first.
type index struct {
	max int
	m   *metrics

	mu     sync.RWMutex // protects the fields below
	dims   int          // 0: not known yet
	source string       // where dims came from
	parts  map[string]map[string]*indexed
	byID   map[string]*indexed
	order  *list.List // of *indexed, oldest first
}

type indexed struct {
	v  *Vector
	el *list.Element
}

func newIndex(dims, max int, m *metrics) *index {
	x := &index{max: max, m: m, dims: dims, parts: map[string]map[string]*indexed{}, byID: map[string]*indexed{}, order: list.New()}
	if dims > 0 {
		x.source = "response_cache.semantic.dimensions"
	}
	return x
}

// normalizeVector scales v to unit length in place.
func normalizeVector(v []float32) error {
	var s float64
	for _, f := range v {
		s += float64(f) * float64(f)
	}
	if s == 0 || math.IsNaN(s) || math.IsInf(s, 0) {
		return errZeroVector
	}
	inv := 1 / math.Sqrt(s)
	for i := range v {
		v[i] = float32(float64(v[i]) * inv)
	}
	return nil
}

// check reports a DimensionError when v's size is not the index's; the
// first vector of an index without a configured size sets it.
func (x *index) check(n int, first string) error {
	x.mu.RLock()
	dims, src := x.dims, x.source
	x.mu.RUnlock()
	if dims == 0 {
		x.mu.Lock()
		if x.dims == 0 {
			x.dims, x.source = n, first
		}
		dims, src = x.dims, x.source
		x.mu.Unlock()
	}
	if n != dims {
		return &DimensionError{Got: n, Want: dims, Source: src}
	}
	return nil
}

// Dims returns the index's vector size (0: not known yet).
func (x *index) Dims() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.dims
}

// Search returns the vector of partition nearest to q (unit length) and
// its cosine distance, skipping expired ones; ok is false when the
// partition has none.
func (x *index) Search(partition string, q []float32, now time.Time) (best *Vector, dist float64, ok bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	bestDot := math.Inf(-1)
	for _, it := range x.parts[partition] {
		if !now.Before(it.v.Expires) || len(it.v.V) != len(q) {
			continue
		}
		if d := dot(q, it.v.V); d > bestDot {
			bestDot, best = d, it.v
		}
	}
	if best == nil {
		return nil, 0, false
	}
	return best, min(2, max(0, 1-bestDot)), true
}

func dot(a, b []float32) float64 {
	var s float32
	b = b[:len(a)]
	for i := range a {
		s += a[i] * b[i]
	}
	return float64(s)
}

// Add indexes v (replacing a vector with its ID), after checking its size.
func (x *index) Add(v *Vector, first string) error {
	if err := x.check(len(v.V), first); err != nil {
		return err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if old := x.byID[v.ID]; old != nil {
		x.removeLocked(old, "")
	}
	it := &indexed{v: v}
	it.el = x.order.PushBack(it)
	x.byID[v.ID] = it
	p := x.parts[v.Partition]
	if p == nil {
		p = map[string]*indexed{}
		x.parts[v.Partition] = p
	}
	p[v.ID] = it
	for x.order.Len() > x.max {
		x.removeLocked(x.order.Front().Value.(*indexed), reasonIndex)
	}
	x.gauges()
	return nil
}

// Remove drops the vector id, if indexed.
func (x *index) Remove(id, reason string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if it := x.byID[id]; it != nil {
		x.removeLocked(it, reason)
		x.gauges()
	}
}

// PurgeTags drops the vectors whose scope and model tags match ("": any)
// and returns how many.
func (x *index) PurgeTags(scopeTag, modelTag string) int {
	x.mu.Lock()
	defer x.mu.Unlock()
	n := 0
	for el := x.order.Front(); el != nil; {
		next := el.Next()
		it := el.Value.(*indexed)
		if (scopeTag == "" || Tag(it.v.Scope) == scopeTag) && (modelTag == "" || Tag(it.v.Model) == modelTag) {
			x.removeLocked(it, reasonPurge)
			n++
		}
		el = next
	}
	x.gauges()
	return n
}

// Expire drops the vectors whose TTL ended.
func (x *index) Expire(now time.Time) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for el := x.order.Front(); el != nil; {
		next := el.Next()
		if it := el.Value.(*indexed); !now.Before(it.v.Expires) {
			x.removeLocked(it, reasonTTL)
		}
		el = next
	}
	x.gauges()
}

func (x *index) removeLocked(it *indexed, reason string) {
	x.order.Remove(it.el)
	delete(x.byID, it.v.ID)
	if p := x.parts[it.v.Partition]; p != nil {
		delete(p, it.v.ID)
		if len(p) == 0 {
			delete(x.parts, it.v.Partition)
		}
	}
	if reason != "" {
		x.m.evictions.WithLabelValues(CacheSemantic, reason).Inc()
	}
}

// gauges sets the semantic gauges (under mu).
func (x *index) gauges() {
	n := x.order.Len()
	x.m.entries.WithLabelValues(CacheSemantic).Set(float64(n))
	x.m.size.WithLabelValues(CacheSemantic).Set(float64(n * (4*x.dims + 200)))
}

// Len returns how many vectors are indexed.
func (x *index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.order.Len()
}

// Retain drops the vectors whose IDs are not in keep (after a full scan of
// the shared store: they expired or were purged there).
func (x *index) Retain(keep map[string]bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for el := x.order.Front(); el != nil; {
		next := el.Next()
		if it := el.Value.(*indexed); !keep[it.v.ID] {
			x.removeLocked(it, "")
		}
		el = next
	}
	x.gauges()
}
