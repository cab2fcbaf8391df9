package summary

import (
	"sync/atomic"

	"github.com/bits-and-blooms/bloom/v3"
	"github.com/inferrail/inferrail/internal/kvblock"
)

// DefaultHashFuncs is the number of hash functions of a filter at the
// default 0.1% false-positive rate (bloom.EstimateParameters gives 10).
var DefaultHashFuncs = func() uint {
	_, k := bloom.EstimateParameters(DefaultConfig().Capacity, DefaultConfig().FalsePositiveRate)
	return k
}()

// Prompt is a prompt's block hashes with their bloom positions computed once,
// so that testing it against many replicas' views costs no hashing and no
// allocation per replica. Reset reuses its buffers.
type Prompt struct {
	k    uint
	keys []Key
	locs []uint64 // len(keys)*k raw positions (before the filter's modulo)
}

// NewPrompt prepares hashes for views whose filters use at most k hash
// functions (DefaultHashFuncs for default summaries).
func NewPrompt(hashes []kvblock.Hash, k uint) *Prompt {
	p := &Prompt{}
	p.Reset(hashes, k)
	return p
}

// Reset prepares p for new hashes.
func (p *Prompt) Reset(hashes []kvblock.Hash, k uint) {
	k = min(max(k, 1), MaxHashFuncs)
	p.k = k
	p.keys, p.locs = p.keys[:0], p.locs[:0]
	for _, h := range hashes {
		key := KeyOf(h)
		b := key.bytes()
		p.keys = append(p.keys, key)
		p.locs = append(p.locs, bloom.Locations(b[:], k)...)
	}
}

// Len returns the number of blocks in the prompt.
func (p *Prompt) Len() int { return len(p.keys) }

// LongestPrefixOf is LongestPrefix for a prepared prompt: the same result,
// without hashing or allocating. A view whose filter uses more hash functions
// than the prompt was prepared for is answered the slow way (recomputing).
func (v *View) LongestPrefixOf(p *Prompt, m Medium) int {
	s := v.state.Load()
	if s == nil || int(m) >= MaxMedia || s.filters[m] == nil {
		return 0
	}
	f := s.filters[m]
	if f.k > p.k {
		for i, key := range p.keys {
			if !f.test(key) {
				return i
			}
		}
		return len(p.keys)
	}
	for i := range p.keys {
		for _, loc := range p.locs[i*int(p.k) : i*int(p.k)+int(f.k)] {
			j := loc % f.m
			if atomic.LoadUint64(&f.words[j>>6])&(1<<(j&63)) == 0 {
				return i
			}
		}
		if f.isGone(p.keys[i]) {
			return i
		}
	}
	return len(p.keys)
}
