package lru

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// model is the obvious LRU: keys most recent first.
type model struct {
	keys []int
	vals map[int]string
}

func (m *model) front(k int) {
	m.keys = slices.DeleteFunc(m.keys, func(x int) bool { return x == k })
	m.keys = slices.Insert(m.keys, 0, k)
}

func entries(l *List[int, string]) (keys []int, vals []string) {
	for k, v := range l.All() {
		keys, vals = append(keys, k), append(vals, v)
	}
	return keys, vals
}

// Every operation agrees with the model, in random sequences that fill,
// drain and reuse slots.
func TestAgreesWithModel(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for seq := range 200 {
		l := New[int, string](0)
		m := &model{vals: map[int]string{}}
		for op := range 300 {
			k := r.IntN(12)
			switch r.IntN(7) {
			case 0:
				v, ok := l.Get(k)
				mv, mok := m.vals[k]
				if ok != mok || v != mv {
					t.Fatalf("seq %d op %d: Get(%d) = %q, %v; want %q, %v", seq, op, k, v, ok, mv, mok)
				}
				if mok {
					m.front(k)
				}
			case 1:
				_, mok := m.vals[k]
				if added := l.Touch(k); added == mok {
					t.Fatalf("seq %d op %d: Touch(%d) added = %v", seq, op, k, added)
				}
				if !mok {
					m.vals[k] = ""
				}
				m.front(k)
			case 2:
				v := string(rune('a' + r.IntN(26)))
				old, replaced := l.Put(k, v)
				mv, mok := m.vals[k]
				if replaced != mok || old != mv {
					t.Fatalf("seq %d op %d: Put(%d) = %q, %v; want %q, %v", seq, op, k, old, replaced, mv, mok)
				}
				m.vals[k] = v
				m.front(k)
			case 3:
				v, ok := l.Remove(k)
				mv, mok := m.vals[k]
				if ok != mok || v != mv {
					t.Fatalf("seq %d op %d: Remove(%d) = %q, %v", seq, op, k, v, ok)
				}
				delete(m.vals, k)
				m.keys = slices.DeleteFunc(m.keys, func(x int) bool { return x == k })
			case 4:
				k, v, ok := l.RemoveOldest()
				if ok != (len(m.keys) > 0) {
					t.Fatalf("seq %d op %d: RemoveOldest ok = %v with %d keys", seq, op, ok, len(m.keys))
				}
				if ok {
					want := m.keys[len(m.keys)-1]
					if k != want || v != m.vals[want] {
						t.Fatalf("seq %d op %d: RemoveOldest = %d, %q; want %d", seq, op, k, v, want)
					}
					m.keys = m.keys[:len(m.keys)-1]
					delete(m.vals, want)
				}
			case 5:
				if l.Contains(k) != (m.vals[k] != "" || slices.Contains(m.keys, k)) {
					t.Fatalf("seq %d op %d: Contains(%d)", seq, op, k)
				}
			case 6:
				if r.IntN(20) == 0 {
					l.Clear()
					m = &model{vals: map[int]string{}}
				}
			}
			keys, vals := entries(l)
			wantVals := make([]string, len(m.keys))
			for i, k := range m.keys {
				wantVals[i] = m.vals[k]
			}
			if diff := cmp.Diff(m.keys, keys, cmpopts.EquateEmpty()); diff != "" || l.Len() != len(m.keys) || !slices.Equal(vals, wantVals) {
				t.Fatalf("seq %d op %d: order (-want +got):\n%s (len %d)", seq, op, diff, l.Len())
			}
			if k, _, ok := l.Oldest(); ok != (len(m.keys) > 0) || ok && k != m.keys[len(m.keys)-1] {
				t.Fatalf("seq %d op %d: Oldest = %d, %v", seq, op, k, ok)
			}
		}
	}
}

// A warm list touches, replaces and evicts without allocating.
func TestWarmListDoesNotAllocate(t *testing.T) {
	l := New[uint64, int](64)
	for i := range uint64(64) {
		l.Put(i, int(i))
	}
	next := uint64(64)
	allocs := testing.AllocsPerRun(1000, func() {
		l.Touch(next - 10)
		l.RemoveOldest()
		l.Put(next, 1)
		next++
	})
	if allocs != 0 {
		t.Errorf("%.1f allocations per touch, evict and insert, want 0", allocs)
	}
}

func BenchmarkTouchEvict(b *testing.B) {
	l := New[uint64, struct{}](1 << 16)
	for i := range uint64(1 << 16) {
		l.Touch(i)
	}
	b.ReportAllocs()
	for i := range uint64(b.N) {
		l.Touch(i + 1<<16)
		l.RemoveOldest()
	}
}
