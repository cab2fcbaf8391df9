package blockset

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/inferrail/inferrail/internal/kvblock"
	"github.com/inferrail/inferrail/sidecar/engine"
)

// DefaultMaxPendingChanges bounds the change feed between two Drain calls.
const DefaultMaxPendingChanges = 1 << 20

// Config configures a Set.
type Config struct {
	// Model is the served model name that seeds router hashes (required).
	Model string
	// BlockSize is the engine's block size in tokens, as its metrics report
	// it (SetBlockSize corrects it). BlockStored events of a smaller size are
	// partial entries and of a larger one another KV-cache group's: both are
	// skipped (docs/sidecar.md). 0 learns it from the first full-attention
	// BlockStored, which a partial entry can get wrong: only for tools and
	// tests without the engine's metrics.
	BlockSize int
	// BlocksPerRank bounds the GPU blocks one rank may hold (the engine's
	// num_gpu_blocks per data-parallel engine; SetCapacity corrects it). 0 is
	// no bound.
	BlocksPerRank int
	// MaxPendingChanges bounds the change feed; when more changes accumulate
	// before Drain, the feed reports an overflow and the consumer rebuilds
	// from Blocks. 0 means DefaultMaxPendingChanges.
	MaxPendingChanges int
}

// Validate reports every problem with the configuration.
func (c Config) Validate() error {
	var errs []error
	if c.Model == "" {
		errs = append(errs, errors.New("blockset.model must be set"))
	}
	if c.BlockSize < 0 {
		errs = append(errs, fmt.Errorf("blockset.block_size must be >= 0, got %d", c.BlockSize))
	}
	if c.BlocksPerRank < 0 {
		errs = append(errs, fmt.Errorf("blockset.blocks_per_rank must be >= 0, got %d", c.BlocksPerRank))
	}
	if c.MaxPendingChanges < 0 {
		errs = append(errs, fmt.Errorf("blockset.max_pending_changes must be >= 0, got %d", c.MaxPendingChanges))
	}
	return errors.Join(errs...)
}

// Change is one entry of the change feed.
type Change struct {
	// Hash is the router hash.
	Hash kvblock.Hash
	// Medium is the canonical medium.
	Medium string
	// Added is true when the block gained its first holder in Medium, false
	// when it lost its last.
	Added bool
}

// Stats counts what Apply did, in blocks unless named otherwise.
type Stats struct {
	// Stored blocks re-hashed and held (re-announcements included).
	Stored int
	// Removed holders dropped by BlockRemoved.
	Removed int
	// RemovedUnknown BlockRemoved hashes that were not held (no-ops).
	RemovedUnknown int
	// PlaceholderMapped token-less announcements resolved via a known hash.
	PlaceholderMapped int
	// Skipped blocks, by reason.
	SkippedPlaceholder, SkippedPartial, SkippedGroup, SkippedOrphan, SkippedOpaque, SkippedLoRA int
	// Clears of a rank (AllBlocksCleared, restarts, unfilled gaps, overflows,
	// block-size corrections).
	Clears int
	// Overflows counts ranks cleared for holding more GPU blocks than the
	// engine has.
	Overflows int
}

// maxMedia bounds the distinct media tracked; further ones share the last
// index ("OTHER").
const maxMedia = 8

// Set is the exact set of blocks an engine holds. It is safe for concurrent
// use.
type Set struct {
	cfg Config
	log *slog.Logger
	m   *metrics

	mu        sync.Mutex // protects the fields below
	blockSize int
	capacity  int // GPU blocks per rank, 0 unbounded
	media     []string
	ranks     map[int]*rankState
	blocks    map[kvblock.Hash]*holders
	perMedium [maxMedia]int // blocks held per medium
	changes   []Change
	overflow  bool
	seeds     map[[3]string]kvblock.Hash
	stats     Stats
}

type rankState struct {
	engine     map[uint64]*mapping
	gpu        int // engine hashes with a GPU slot
	incomplete bool
}

// mapping is one engine hash of one rank: its router hash and the (medium,
// group) slots that hold it.
type mapping struct {
	router kvblock.Hash
	slots  []slot
}

type slot struct {
	medium uint8
	group  int32
}

type holders struct {
	counts [maxMedia]int32
}

// New returns an empty Set. reg may be nil.
func New(cfg Config, log *slog.Logger, reg prometheus.Registerer) (*Set, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.MaxPendingChanges == 0 {
		cfg.MaxPendingChanges = DefaultMaxPendingChanges
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Set{
		cfg:       cfg,
		log:       log,
		blockSize: cfg.BlockSize,
		capacity:  cfg.BlocksPerRank,
		media:     []string{engine.MediumGPU, engine.MediumCPU},
		ranks:     map[int]*rankState{},
		blocks:    map[kvblock.Hash]*holders{},
		seeds:     map[[3]string]kvblock.Hash{},
	}
	s.m = newMetrics(s, reg)
	return s, nil
}

// BlockSize returns the block size in use (0 before it is learned).
func (s *Set) BlockSize() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.blockSize
}

// SetBlockSize sets the engine's block size as its metrics report it. When
// it differs from the size in use, the blocks held were hashed with the wrong
// size and those skipped are unknown: every rank is cleared and marked
// incomplete (until the engine clears or restarts it).
func (s *Set) SetBlockSize(n int) {
	if n <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if n == s.blockSize {
		return
	}
	old := s.blockSize
	s.blockSize = n
	before := s.stats
	for r, rs := range s.ranks {
		if len(rs.engine) > 0 || old != 0 {
			s.clearRank(r, true)
		}
	}
	s.m.observe(before, s.stats)
	s.log.Warn("the engine's block size differs from the one the block set used: ranks cleared, incomplete until the engine clears them",
		"block_size", n, "was", old)
}

// SetCapacity sets the GPU blocks one rank may hold (0: no bound). A rank
// over it is cleared at once, as in Apply.
func (s *Set) SetCapacity(blocksPerRank int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.capacity = max(blocksPerRank, 0)
	before := s.stats
	for r := range s.ranks {
		s.checkCapacity(r)
	}
	s.m.observe(before, s.stats)
}

// Apply applies a batch's events to the rank named by b.Rank (0 when
// negative), in order. A rank that then holds more GPU blocks than the
// engine's capacity has diverged from the engine (a lost removal, a bogus
// replay): it is cleared and marked incomplete.
func (s *Set) Apply(b engine.Batch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rank := max(b.Rank, 0)
	before := s.stats
	for _, ev := range b.Events {
		switch ev := ev.(type) {
		case engine.BlockStored:
			s.stored(rank, ev)
		case engine.BlockRemoved:
			s.removed(rank, ev)
		case engine.AllBlocksCleared:
			s.clearRank(rank, false)
		}
	}
	s.checkCapacity(rank)
	s.m.observe(before, s.stats)
}

// checkCapacity clears rank r as incomplete when it holds more GPU blocks
// than the capacity.
func (s *Set) checkCapacity(r int) {
	rs := s.ranks[r]
	if s.capacity <= 0 || rs == nil || rs.gpu <= s.capacity {
		return
	}
	held := rs.gpu
	s.stats.Overflows++
	s.clearRank(r, true)
	s.m.overflowLog.Warn("block set rank holds more GPU blocks than the engine has: diverged, cleared and incomplete until the engine clears it",
		"rank", r, "blocks", held, "capacity", s.capacity)
}

// ClearRank drops every block of a rank: after a publisher restart
// (incomplete false: the engine starts empty) or a gap that could not be
// filled (incomplete true: blocks stored before the gap are unknown).
func (s *Set) ClearRank(rank int, incomplete bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	before := s.stats
	s.clearRank(max(rank, 0), incomplete)
	s.m.observe(before, s.stats)
}

// Incomplete reports whether any rank was cleared after a gap it could not
// recover, and has not been cleared by the engine or restarted since.
func (s *Set) Incomplete() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.ranks {
		if r.incomplete {
			return true
		}
	}
	return false
}

func (s *Set) rank(r int) *rankState {
	rs := s.ranks[r]
	if rs == nil {
		rs = &rankState{engine: map[uint64]*mapping{}}
		s.ranks[r] = rs
	}
	return rs
}

func (s *Set) clearRank(r int, incomplete bool) {
	s.stats.Clears++
	rs := s.rank(r)
	for _, m := range rs.engine {
		for _, sl := range m.slots {
			s.release(m.router, sl.medium)
		}
	}
	clear(rs.engine)
	rs.gpu = 0
	rs.incomplete = incomplete
}

// mediumIndex interns a medium, in its canonical spelling.
func (s *Set) mediumIndex(name string) uint8 {
	name = engine.NormalizeMedium(name)
	for i, m := range s.media {
		if m == name {
			return uint8(i)
		}
	}
	if len(s.media) < maxMedia-1 {
		s.media = append(s.media, name)
		return uint8(len(s.media) - 1)
	}
	if len(s.media) == maxMedia-1 {
		s.media = append(s.media, "OTHER")
	}
	return maxMedia - 1
}

func (s *Set) seed(lora, salt string) kvblock.Hash {
	k := [3]string{s.cfg.Model, lora, salt}
	h, ok := s.seeds[k]
	if !ok {
		h = kvblock.NewSeed(s.cfg.Model, lora, salt)
		if len(s.seeds) > 4096 {
			clear(s.seeds)
		}
		s.seeds[k] = h
	}
	return h
}

// hold adds a holder of router hash h in medium m.
func (s *Set) hold(h kvblock.Hash, m uint8) {
	e := s.blocks[h]
	if e == nil {
		e = &holders{}
		s.blocks[h] = e
	}
	e.counts[m]++
	if e.counts[m] == 1 {
		s.perMedium[m]++
		s.change(Change{Hash: h, Medium: s.media[m], Added: true})
	}
}

// release drops a holder of router hash h in medium m.
func (s *Set) release(h kvblock.Hash, m uint8) {
	e := s.blocks[h]
	if e == nil || e.counts[m] == 0 {
		return
	}
	e.counts[m]--
	if e.counts[m] == 0 {
		s.perMedium[m]--
		s.change(Change{Hash: h, Medium: s.media[m], Added: false})
		if e.counts == ([maxMedia]int32{}) {
			delete(s.blocks, h)
		}
	}
}

func (s *Set) change(c Change) {
	if s.overflow {
		return
	}
	if len(s.changes) >= s.cfg.MaxPendingChanges {
		s.overflow = true
		s.changes = nil
		return
	}
	s.changes = append(s.changes, c)
}
