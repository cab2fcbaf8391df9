package hf

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestIDCacheLRU(t *testing.T) {
	// One entry with a 2-byte key and 2 ids costs 2 + 8 + entryOverhead.
	per := entryCost("kk", make([]uint32, 2))
	c := newIDCache(3 * per * cacheShards) // three such entries per shard
	// Put keys until a shard overflows; track the keys of one shard.
	var same []string
	// Two-byte keys (all the same cost); the shard hash is seeded per process,
	// so search enough of them to find four in one shard whatever the seed.
	for i := 0; len(same) < 4; i++ {
		if i >= 1<<16 {
			t.Fatal("could not find four keys of one shard")
		}
		k := string([]byte{byte(i >> 8), byte(i)})
		if len(same) == 0 || c.shard(k) == c.shard(same[0]) {
			same = append(same, k)
		}
	}
	for i, k := range same[:3] {
		c.put(k, []uint32{uint32(i), 0})
	}
	if _, ok := c.get(same[0]); !ok { // touch: same[1] is now the oldest
		t.Fatalf("get(%q) missed", same[0])
	}
	c.put(same[3], []uint32{3, 0})
	if _, ok := c.get(same[1]); ok {
		t.Errorf("get(%q) hit; want it evicted as least recently used", same[1])
	}
	for _, k := range []string{same[0], same[2], same[3]} {
		if _, ok := c.get(k); !ok {
			t.Errorf("get(%q) missed", k)
		}
	}
	hits, misses, entries, bytes := c.stats()
	if hits != 4 || misses != 1 || entries != 3 || bytes != 3*per {
		t.Errorf("stats() = %d hits, %d misses, %d entries, %d bytes; want 4, 1, 3, %d", hits, misses, entries, bytes, 3*per)
	}
}

func TestIDCacheCopiesAndBounds(t *testing.T) {
	c := newIDCache(16 << 10)
	ids := []uint32{1, 2, 3}
	c.put("x", ids)
	ids[0] = 99
	got, _ := c.get("x")
	if diff := cmp.Diff([]uint32{1, 2, 3}, got); diff != "" {
		t.Errorf("cached ids changed with the caller's slice (-want +got):\n%s", diff)
	}
	// An entry larger than a shard is not stored.
	c.put("big", make([]uint32, 16<<10))
	if _, ok := c.get("big"); ok {
		t.Error("oversized entry was stored")
	}
	// Many entries never exceed the bound.
	for i := range 10000 {
		c.put(fmt.Sprint(i), []uint32{uint32(i)})
	}
	if _, _, _, b := c.stats(); b > 16<<10 {
		t.Errorf("cache holds %d bytes, bound %d", b, 16<<10)
	}
	var none *idCache
	none.put("a", nil)
	if _, ok := none.get("a"); ok {
		t.Error("nil cache hit")
	}
}
