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
// where an approximate index would be needed. A partition's vectors lie in
// one contiguous slab, so a search streams through memory. At most max
// vectors are kept, the oldest leaving first.
type index struct {
	max int
	m   *metrics

	mu     sync.RWMutex // protects the fields below
	dims   int          // 0: not known yet
	source string       // where dims came from
	parts  map[string]*partition
	byID   map[string]*indexed
	order  *list.List // of *indexed, oldest first
}

// partition holds one partition's vectors: items[i]'s components are
// flat[i*dims:(i+1)*dims].
type partition struct {
	items []*indexed
	flat  []float32
}

type indexed struct {
	v    *Vector
	el   *list.Element
	part *partition
	pos  int
}

func newIndex(dims, max int, m *metrics) *index {
	x := &index{max: max, m: m, dims: dims, parts: map[string]*partition{}, byID: map[string]*indexed{}, order: list.New()}
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
	p := x.parts[partition]
	if p == nil || len(q) != x.dims {
		return nil, 0, false
	}
	d := x.dims
	bestDot := float32(math.Inf(-1))
	for i, it := range p.items {
		if s := dot(q, p.flat[i*d:(i+1)*d]); s > bestDot && now.Before(it.v.Expires) {
			bestDot, best = s, it.v
		}
	}
	if best == nil {
		return nil, 0, false
	}
	return best, min(2, max(0, 1-float64(bestDot))), true
}

// dot is the dot product of two vectors of one length, four lanes at a
// time.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return s0 + s1 + s2 + s3
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
	p := x.parts[v.Partition]
	if p == nil {
		p = &partition{}
		x.parts[v.Partition] = p
	}
	it := &indexed{v: v, part: p, pos: len(p.items)}
	it.el = x.order.PushBack(it)
	x.byID[v.ID] = it
	p.items = append(p.items, it)
	p.flat = append(p.flat, v.V...)
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
	// Swap the last vector of the partition into the hole.
	p, d := it.part, x.dims
	last := len(p.items) - 1
	if it.pos != last {
		moved := p.items[last]
		p.items[it.pos] = moved
		copy(p.flat[it.pos*d:(it.pos+1)*d], p.flat[last*d:(last+1)*d])
		moved.pos = it.pos
	}
	p.items[last] = nil
	p.items, p.flat = p.items[:last], p.flat[:last*d]
	if last == 0 {
		delete(x.parts, it.v.Partition)
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
