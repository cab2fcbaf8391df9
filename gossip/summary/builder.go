package summary

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/bits-and-blooms/bloom/v3"
	"github.com/inferrail/inferrail/internal/kvblock"
)

// Config sizes and paces a Builder's summaries.
type Config struct {
	// Capacity is the number of blocks per medium a filter is sized for
	// (default 32768, a little more than vLLM's block count on one H100). A
	// rebuild sizes the filter for max(Capacity, 1.25×blocks held).
	Capacity uint
	// FalsePositiveRate is the target false-positive rate (default 0.001).
	// Every prompt is tested against every replica's filter, so a block no
	// replica holds is matched somewhere with about n × this rate across n
	// replicas; the default keeps that under 2% up to 16 replicas
	// (docs/routing.md#false-matches-across-a-fleet).
	FalsePositiveRate float64
	// RebuildRemovals triggers a rebuild once the blocks removed since the
	// last rebuild exceed this fraction of the blocks held (default 0.25).
	RebuildRemovals float64
	// RebuildPeriod triggers a rebuild this long after the last one even
	// without removals (default 5m).
	RebuildPeriod time.Duration
	// MaxDeltaBytes bounds one encoded delta so it fits a gossip packet
	// (default 1200).
	MaxDeltaBytes int
}

// DefaultConfig returns the defaults documented on Config.
func DefaultConfig() Config {
	return Config{
		Capacity:          32768,
		FalsePositiveRate: 0.001,
		RebuildRemovals:   0.25,
		RebuildPeriod:     5 * time.Minute,
		MaxDeltaBytes:     1200,
	}
}

// Validate reports every invalid field at once.
func (c Config) Validate() error {
	var errs []error
	if c.Capacity == 0 {
		errs = append(errs, errors.New("summary.capacity must be > 0, got 0"))
	}
	if !(c.FalsePositiveRate > 0 && c.FalsePositiveRate < 1) {
		errs = append(errs, fmt.Errorf("summary.false_positive_rate must be in (0,1), got %v", c.FalsePositiveRate))
	}
	if !(c.RebuildRemovals > 0) {
		errs = append(errs, fmt.Errorf("summary.rebuild_removals must be > 0, got %v", c.RebuildRemovals))
	}
	if c.RebuildPeriod <= 0 {
		errs = append(errs, fmt.Errorf("summary.rebuild_period must be > 0, got %v", c.RebuildPeriod))
	}
	if c.MaxDeltaBytes < 64 {
		errs = append(errs, fmt.Errorf("summary.max_delta_bytes must be >= 64, got %d", c.MaxDeltaBytes))
	}
	return errors.Join(errs...)
}

// medium is the builder's state for one medium.
type medium struct {
	set      map[kvblock.Hash]struct{} // the blocks summarized (see Builder)
	keys     map[Key]uint32            // held blocks per key
	gone     map[Key]struct{}          // keys in the filter that no held block has
	filter   *bloom.BloomFilter
	capacity uint // blocks the filter was sized for
	removed  int  // removals since the last rebuild
}

// Builder keeps a replica's exact block set per medium and the summary built
// from it. It is safe for concurrent use: the sidecar's event loop calls Add
// and Remove while the gossip node calls Flush, EncodeSnapshot and Version.
//
// The set of blocks summarized is the Builder's own, although the sidecar's
// exact block set (sidecar/blockset.Set) owns the engine's blocks. It is a
// different piece of state, and it cannot be read from the block set:
//   - it is the set of whichever source is active: the block set while the
//     engine publishes KV events, the data path's approximate set otherwise
//     (sidecar/events.go switches by Reset). Prefix answers from it, so the
//     sidecar counts cached prompt tokens against what it publishes;
//   - it is as of the changes the summary applied, which trail the block
//     set's live state by one drain, and a Remove counts (toward the gone
//     keys and the rebuild threshold) only for a block that was Added;
//   - several engine media fold onto one summary Medium (CPU and CPU_PINNED;
//     every tier past disk), and the set keeps a block held on two of them
//     one member, where a count per key would count it twice.
//
// It costs one map entry per block next to the per-key counts the filter
// needs; docs/benchmarks-gossip.md has the measured time and bytes
// (BenchmarkBuilderAdd, BenchmarkBuilderReset).
type Builder struct {
	cfg Config
	now func() time.Time

	mu          sync.Mutex // protects the fields below
	media       [MaxMedia]*medium
	epoch, seq  uint64
	rebuiltAt   time.Time
	pending     []Change
	oldest      time.Time // when the first pending addition was recorded
	newMedium   bool      // a medium appeared after the last rebuild
	snapCache   []byte
	snapVersion [2]uint64
}

// NewBuilder returns a builder with an empty set at a fresh epoch. The epoch
// starts from the clock, so a restarted sidecar's epochs are newer than its
// previous life's. now may be nil (time.Now).
func NewBuilder(cfg Config, now func() time.Time) (*Builder, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("summary: %w", err)
	}
	if now == nil {
		now = time.Now
	}
	b := &Builder{cfg: cfg, now: now}
	t := now()
	b.epoch = uint64(t.UnixNano())
	b.rebuiltAt = t
	b.medium(MediumGPU) // always present, so an empty first snapshot has it
	b.newMedium = false
	return b, nil
}

func (b *Builder) medium(m Medium) *medium {
	md := b.media[m]
	if md == nil {
		md = &medium{set: make(map[kvblock.Hash]struct{}), keys: make(map[Key]uint32), gone: make(map[Key]struct{}), capacity: b.cfg.Capacity}
		md.filter = newBloom(md.capacity, b.cfg.FalsePositiveRate)
		b.media[m] = md
		// Receivers have no filter for it until the next snapshot.
		b.newMedium = true
	}
	return md
}

// Add records that the replica holds block h on medium m. A new block is
// added to the filter at once and queued for the next delta.
func (b *Builder) Add(h kvblock.Hash, m Medium) {
	if int(m) >= MaxMedia {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	md := b.medium(m)
	if _, ok := md.set[h]; ok {
		return
	}
	md.set[h] = struct{}{}
	key := KeyOf(h)
	md.keys[key]++
	delete(md.gone, key)
	k := key.bytes()
	md.filter.Add(k[:])
	b.record(Change{Medium: m, Key: key})
}

// record queues a change for the next delta.
func (b *Builder) record(c Change) {
	if len(b.pending) == 0 {
		b.oldest = b.now()
	}
	b.pending = append(b.pending, c)
}

// Remove records that the replica dropped block h from medium m. Its bits
// stay in the filter until the next rebuild, but once no held block shares
// its key the key is sent as removed, and receivers stop matching it;
// removals count toward the rebuild threshold.
func (b *Builder) Remove(h kvblock.Hash, m Medium) {
	if int(m) >= MaxMedia {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	md := b.media[m]
	if md == nil {
		return
	}
	if _, ok := md.set[h]; !ok {
		return
	}
	delete(md.set, h)
	md.removed++
	key := KeyOf(h)
	if md.keys[key]--; md.keys[key] > 0 {
		return // another held block has the same key
	}
	delete(md.keys, key)
	md.gone[key] = struct{}{}
	b.record(Change{Medium: m, Key: key, Removed: true})
}

// Reset replaces the exact set (for example after the engine restarted or a
// full resync from its events) and rebuilds at a new epoch.
func (b *Builder) Reset(sets map[Medium][]kvblock.Hash) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.media = [MaxMedia]*medium{}
	b.medium(MediumGPU)
	for m, hs := range sets {
		if int(m) >= MaxMedia {
			continue
		}
		md := b.medium(m)
		for _, h := range hs {
			if _, ok := md.set[h]; !ok {
				md.set[h] = struct{}{}
				md.keys[KeyOf(h)]++
			}
		}
	}
	b.rebuildLocked()
}

// Len returns the number of blocks held on medium m.
func (b *Builder) Len(m Medium) int {
	if int(m) >= MaxMedia {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.media[m] == nil {
		return 0
	}
	return len(b.media[m].set)
}

// Prefix returns how many leading blocks of hs the exact set holds on
// medium m: the cached prefix of a prompt whose full blocks hash to hs.
func (b *Builder) Prefix(hs []kvblock.Hash, m Medium) int {
	if int(m) >= MaxMedia {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	md := b.media[m]
	if md == nil {
		return 0
	}
	for i, h := range hs {
		if _, ok := md.set[h]; !ok {
			return i
		}
	}
	return len(hs)
}

// Version returns the current epoch and the sequence of the last delta.
func (b *Builder) Version() (epoch, seq uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.epoch, b.seq
}

// RebuildDue reports whether removals passed the threshold, a filter holds
// more blocks than it was sized for, or the rebuild period elapsed.
func (b *Builder) RebuildDue() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.rebuildDueLocked()
}

func (b *Builder) rebuildDueLocked() bool {
	if b.newMedium || b.now().Sub(b.rebuiltAt) >= b.cfg.RebuildPeriod {
		return true
	}
	for _, md := range b.media {
		if md == nil {
			continue
		}
		if uint(len(md.set)) > md.capacity {
			return true
		}
		if md.removed > 0 && float64(md.removed) > b.cfg.RebuildRemovals*float64(max(len(md.set), 1)) {
			return true
		}
	}
	return false
}

// Rebuild starts a new epoch: every filter is rebuilt from the exact set,
// dropping removed blocks, and pending additions are discarded (the new
// snapshot includes them).
func (b *Builder) Rebuild() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.rebuildLocked()
}

func (b *Builder) rebuildLocked() {
	for _, md := range b.media {
		if md == nil {
			continue
		}
		md.capacity = max(b.cfg.Capacity, uint(len(md.set))*5/4)
		md.filter = newBloom(md.capacity, b.cfg.FalsePositiveRate)
		for h := range md.set {
			k := KeyOf(h).bytes()
			md.filter.Add(k[:])
		}
		md.removed = 0
		clear(md.gone)
	}
	b.epoch++
	b.seq = 0
	b.newMedium = false
	b.pending = b.pending[:0]
	b.rebuiltAt = b.now()
	b.snapCache = nil
}

// Flush returns what the gossip should send now. When a rebuild is due it
// rebuilds and returns newEpoch = true and no deltas: the caller sends
// Snapshot to every receiver. Otherwise it turns pending additions into
// encoded deltas (each within MaxDeltaBytes, with consecutive sequence
// numbers) and returns them; nil when nothing is pending.
func (b *Builder) Flush() (deltas [][]byte, newEpoch bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.rebuildDueLocked() {
		b.rebuildLocked()
		return nil, true
	}
	oldest := b.oldest.UnixNano()
	for len(b.pending) > 0 {
		// Take changes while they fit: KeySize bytes each plus a run header
		// (medium byte and a length varint of at most 3 bytes) per run.
		size := DeltaSize(b.epoch, b.seq+1, oldest, 0) - 2
		n := 0
		for n < len(b.pending) {
			cost := KeySize
			if n == 0 || b.pending[n].Medium != b.pending[n-1].Medium || b.pending[n].Removed != b.pending[n-1].Removed {
				cost += 4
			}
			if n > 0 && size+cost > b.cfg.MaxDeltaBytes {
				break
			}
			size += cost
			n++
		}
		b.seq++
		d := Delta{Epoch: b.epoch, Seq: b.seq, Oldest: oldest, Changes: b.pending[:n]}
		deltas = append(deltas, d.Marshal(nil))
		b.pending = b.pending[n:]
	}
	b.pending = nil
	return deltas, false
}

// countAtVersionLocked returns the blocks medium m held at the builder's
// current (epoch, seq): the held set without the changes still pending for
// the next delta, which a view applies on top of the snapshot. (The filter
// may already carry them: setting bits and marking gone is idempotent,
// counting is not.) b.mu must be held.
func (b *Builder) countAtVersionLocked(m Medium) int {
	n := len(b.media[m].set)
	for _, c := range b.pending {
		if c.Medium != m {
			continue
		}
		if c.Removed {
			n++
		} else {
			n--
		}
	}
	return max(n, 0)
}

// EncodeSnapshot returns the summary at the current (epoch, seq) encoded as a
// Snapshot message. The result is shared: callers must not modify it.
func (b *Builder) EncodeSnapshot() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.snapCache != nil && b.snapVersion == [2]uint64{b.epoch, b.seq} {
		return b.snapCache
	}
	s := Snapshot{Epoch: b.epoch, Seq: b.seq}
	size := 32
	for m, md := range b.media {
		if md == nil {
			continue
		}
		words := md.filter.BitSet().Words()
		gone := make([]Key, 0, len(md.gone))
		for k := range md.gone {
			gone = append(gone, k)
		}
		slices.Sort(gone)
		s.Filters = append(s.Filters, Filter{
			Medium: Medium(m),
			Count:  uint64(b.countAtVersionLocked(Medium(m))),
			M:      uint64(md.filter.Cap()),
			K:      uint8(md.filter.K()),
			Words:  words,
			Gone:   gone,
		})
		size += 24 + 8*len(words) + KeySize*len(gone)
	}
	b.snapCache = s.Marshal(make([]byte, 0, size))
	b.snapVersion = [2]uint64{b.epoch, b.seq}
	return b.snapCache
}
