// Package lru is a least-recently-used order over keys with values: a map to
// slots of one slice, the slots doubly linked by index, freed slots reused.
// A touch or an insert into a warm list allocates nothing and the garbage
// collector sees no per-entry pointers (docs/adr/0012-lru.md).
//
// The sidecar's approximate block set, the hit-rate bounds of bench and the
// tokenizer's id cache keep their recency order in a List. Capacity and
// eviction stay with the caller (a count of blocks, a byte budget), which
// calls RemoveOldest while it is over. A List is not safe for concurrent use.
package lru

import "iter"

// none marks the end of the links.
const none = -1

// List orders keys from the most to the least recently used. The zero value
// is not ready: use New.
type List[K comparable, V any] struct {
	items      map[K]int32
	slots      []slot[K, V]
	head, tail int32 // most and least recently used; none when empty
	free       int32 // first free slot, linked through next; none when none
}

type slot[K comparable, V any] struct {
	key        K
	val        V
	prev, next int32
}

// New returns an empty list sized for about hint entries.
func New[K comparable, V any](hint int) *List[K, V] {
	return &List[K, V]{items: make(map[K]int32, max(hint, 0)), head: none, tail: none, free: none}
}

// Len returns the number of entries.
func (l *List[K, V]) Len() int { return len(l.items) }

// Contains reports whether k is present, without touching it.
func (l *List[K, V]) Contains(k K) bool {
	_, ok := l.items[k]
	return ok
}

// Get returns k's value and makes k the most recently used.
func (l *List[K, V]) Get(k K) (v V, ok bool) {
	i, ok := l.items[k]
	if !ok {
		return v, false
	}
	l.moveToFront(i)
	return l.slots[i].val, true
}

// Touch makes k the most recently used, adding it with the zero value when
// absent, and reports whether it was added.
func (l *List[K, V]) Touch(k K) (added bool) {
	if i, ok := l.items[k]; ok {
		l.moveToFront(i)
		return false
	}
	var zero V
	l.insert(k, zero)
	return true
}

// Put sets k's value and makes k the most recently used. It returns the
// value it replaced, if k was present.
func (l *List[K, V]) Put(k K, v V) (old V, replaced bool) {
	if i, ok := l.items[k]; ok {
		old, l.slots[i].val = l.slots[i].val, v
		l.moveToFront(i)
		return old, true
	}
	l.insert(k, v)
	return old, false
}

// Remove removes k and returns its value, if present.
func (l *List[K, V]) Remove(k K) (v V, ok bool) {
	i, ok := l.items[k]
	if !ok {
		return v, false
	}
	return l.release(i), true
}

// Oldest returns the least recently used entry (ok false when empty).
func (l *List[K, V]) Oldest() (k K, v V, ok bool) {
	if l.tail == none {
		return k, v, false
	}
	s := &l.slots[l.tail]
	return s.key, s.val, true
}

// RemoveOldest removes the least recently used entry and returns it (ok
// false when empty).
func (l *List[K, V]) RemoveOldest() (k K, v V, ok bool) {
	if l.tail == none {
		return k, v, false
	}
	k = l.slots[l.tail].key
	return k, l.release(l.tail), true
}

// All yields the entries from the most to the least recently used. The list
// must not change during the iteration.
func (l *List[K, V]) All() iter.Seq2[K, V] {
	return func(yield func(K, V) bool) {
		for i := l.head; i != none; i = l.slots[i].next {
			if !yield(l.slots[i].key, l.slots[i].val) {
				return
			}
		}
	}
}

// Clear removes every entry; the list keeps its storage.
func (l *List[K, V]) Clear() {
	clear(l.items)
	clear(l.slots) // drop references held by keys and values
	l.slots = l.slots[:0]
	l.head, l.tail, l.free = none, none, none
}

func (l *List[K, V]) insert(k K, v V) {
	var i int32
	if l.free != none {
		i = l.free
		l.free = l.slots[i].next
		l.slots[i] = slot[K, V]{key: k, val: v}
	} else {
		i = int32(len(l.slots))
		l.slots = append(l.slots, slot[K, V]{key: k, val: v})
	}
	l.items[k] = i
	l.pushFront(i)
}

// release unlinks slot i, forgets its key and puts it on the free list.
func (l *List[K, V]) release(i int32) V {
	l.unlink(i)
	s := &l.slots[i]
	delete(l.items, s.key)
	v := s.val
	*s = slot[K, V]{next: l.free}
	l.free = i
	return v
}

func (l *List[K, V]) moveToFront(i int32) {
	if l.head == i {
		return
	}
	l.unlink(i)
	l.pushFront(i)
}

func (l *List[K, V]) unlink(i int32) {
	s := &l.slots[i]
	if s.prev != none {
		l.slots[s.prev].next = s.next
	} else {
		l.head = s.next
	}
	if s.next != none {
		l.slots[s.next].prev = s.prev
	} else {
		l.tail = s.prev
	}
}

func (l *List[K, V]) pushFront(i int32) {
	s := &l.slots[i]
	s.prev, s.next = none, l.head
	if l.head != none {
		l.slots[l.head].prev = i
	}
	l.head = i
	if l.tail == none {
		l.tail = i
	}
}
