package route

import (
	"time"

	"github.com/inferrail/inferrail/internal/kvblock"
)

// predict fills s.cached with the predicted cached prompt tokens of every
// candidate (-1 where not eligible) and reports whether the stale-summary
// fallback was used. The prediction per eligible candidate is the longer of
// its summary's longest prefix (when fresh) and the overlay's, capped the way
// vLLM caps a prefix hit: whole blocks, and never the prompt's last token.
//
// When some eligible candidate has no fresh summary, the prefix's
// prefix_hash owner is assumed to hold the first PrefixBlocks blocks if its
// own summary is unknown: balancers that cannot see summaries still converge
// on one replica per prefix. A text prefix identity (Request.TextPrefix) asks
// no summary: the overlay and that assumption are its whole prediction, and
// it is not reported as a fallback. s.load must be filled.
func (b *base) predict(req *Request, cands []Candidate, s *Scratch, now time.Time) (fallback bool) {
	s.cached = grow(s.cached, len(cands))
	for i := range s.cached {
		s.cached[i] = -1
	}
	bs := req.blockSize()
	maxBlocks := (req.promptTokens() - 1) / bs
	hashes := req.Hashes
	if len(hashes) > maxBlocks {
		hashes = hashes[:maxBlocks]
	}
	s.hits = s.hits[:0]
	if b.overlay != nil && len(hashes) > 0 {
		s.hits = b.overlay.lookup(req.Hashes, now, s.hits)
	}
	prep := req.Prompt
	if prep != nil && prep.Len() != len(req.Hashes) {
		prep = nil
	}
	unknown := false
	for _, i := range s.elig {
		c := &cands[i]
		blocks := 0
		if len(hashes) > 0 && (req.TextPrefix || c.BlockSize == 0 || c.BlockSize == bs) {
			if !req.TextPrefix && b.summaryFresh(c, now, bs) {
				blocks = longestPrefix(c.Prefix, prep, hashes)
			} else {
				unknown = true
			}
			if len(s.hits) > 0 {
				id := c.key()
				for _, h := range s.hits {
					if h.replica == id {
						blocks = max(blocks, min(h.blocks, len(hashes)))
					}
				}
			}
		}
		s.cached[i] = int32(blocks * bs)
	}
	if !unknown {
		return false
	}
	key, ok := b.prefixKey(req)
	if !ok {
		return false
	}
	k, _ := b.owner(cands, s, key)
	i := s.elig[k]
	c := &cands[i]
	if !req.TextPrefix && (b.summaryFresh(c, now, bs) || c.BlockSize != 0 && c.BlockSize != bs) {
		return false
	}
	own := int32(min(b.cfg.PrefixBlocks, len(hashes)) * bs)
	s.cached[i] = max(s.cached[i], own)
	// A text prefix has no summary to be stale: the fallback is its rule,
	// not a degraded view.
	return !req.TextPrefix
}

// longestPrefix asks idx how many leading blocks of hashes it holds, through
// the prepared prompt when there is one and idx understands it. prep was
// prepared from the whole prompt, which may be longer than hashes (the last
// token is never cached), so its answer is capped the same way: a walk that
// stops at the first miss gives min(longest of the whole, len(hashes)).
func longestPrefix(idx PrefixIndex, prep PreparedPrompt, hashes []kvblock.Hash) int {
	if prep != nil {
		if pi, ok := idx.(PromptIndex); ok {
			if n, ok := pi.LongestPrefixOf(prep); ok {
				return min(n, len(hashes))
			}
		}
	}
	return min(idx.LongestPrefix(hashes), len(hashes))
}

// grow returns a slice of length n reusing buf's storage when it can.
func grow[T any](buf []T, n int) []T {
	if cap(buf) >= n {
		return buf[:n]
	}
	return make([]T, n)
}

// scoredPick finishes a prefix-aware pick of eligible position k: the
// Decision (scores in s.score, divided by 1), ReasonOnlyCandidate when k was
// the only choice, and the placement in the overlay.
func (b *base) scoredPick(req *Request, cands []Candidate, s *Scratch, k int, reason Reason, fallback bool, now time.Time) (int, Decision, error) {
	if len(s.elig) == 1 {
		reason = ReasonOnlyCandidate
	}
	i := int(s.elig[k])
	d := Decision{
		Reason:          reason,
		CachedTokens:    int(s.cached[i]),
		UncachedTokens:  req.promptTokens() - int(s.cached[i]),
		Score:           s.score[k],
		Eligible:        len(s.elig),
		SummaryFallback: fallback,
		Cached:          s.cached,
		Scores:          candidateScores(s, len(cands), 1),
	}
	b.place(req, cands[i].key(), now)
	return i, d, nil
}

// place records the pick of replica id for req in the overlay, unless there
// is none or req is a dry run.
func (b *base) place(req *Request, id uint64, now time.Time) {
	if b.overlay != nil && !req.DryRun {
		b.overlay.place(req, id, now)
	}
}
