package enginesim

import (
	"encoding/binary"
	"strings"
	"unicode/utf8"

	"github.com/zeebo/xxh3"

	"github.com/inferrail/inferrail/internal/openai"
)

// Natural output lengths: a request that does not ignore EOS ends with EOS
// after a length drawn deterministically from its key in this range.
const (
	minNaturalTokens = 16
	maxNaturalTokens = 400
)

// generationKey derives the key that determines a request's output: the
// client's request id when it chose one (so a test can pin an output), else
// a hash of the prompt (so identical prompts give identical answers).
func generationKey(clientID string, prompt []uint32) uint64 {
	if clientID != "" {
		return xxh3.HashString(clientID)
	}
	buf := make([]byte, 0, 4*len(prompt))
	for _, t := range prompt {
		buf = binary.LittleEndian.AppendUint32(buf, t)
	}
	return xxh3.Hash(buf)
}

// naturalLength is the position of EOS for key, in [minNaturalTokens, maxNaturalTokens].
func naturalLength(key uint64) int {
	return minNaturalTokens + int(mix64(key^0x9E3779B97F4A7C15)%uint64(maxNaturalTokens-minNaturalTokens+1))
}

// mix64 is the splitmix64 finalizer.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xBF58476D1CE4E5B9
	x ^= x >> 27
	x *= 0x94D049BB133111EB
	x ^= x >> 31
	return x
}

// tokenGenerator returns Request.Generate: token i is drawn from vocab by a
// hash of (key, i); from position natural on it is eos, unless ignoreEOS.
func tokenGenerator(key uint64, natural int, ignoreEOS bool, vocab []uint32, eos uint32) func(i int) uint32 {
	n := uint64(len(vocab))
	return func(i int) uint32 {
		if !ignoreEOS && i >= natural {
			return eos
		}
		return vocab[mix64(key+uint64(i)*0x9E3779B97F4A7C15)%n]
	}
}

// textStream turns the engine's tokens into text deltas, applying stop
// strings and stop token ids the way vLLM's detokenizer and stop checker do:
// a matched stop string ends the output (and is cut, unless
// include_stop_str_in_output), and while stop strings are active the last
// len(longest stop)-1 bytes are held back until they cannot start a match.
type textStream struct {
	tok         promptTokenizer
	skipSpecial bool
	stops       []string
	holdBack    int
	includeStop bool
	stopIDs     []uint32
	minTokens   int
	eos         uint32
	ignoreEOS   bool

	text    []byte
	emitted int
	// tokens counts the tokens that belong to the output (those after a stop
	// are not counted).
	tokens  []uint32
	stopped bool
	reason  openai.StopReason
}

func newTextStream(tok promptTokenizer, p *openai.Params) *textStream {
	s := &textStream{tok: tok, skipSpecial: p.SkipSpecialTokens, includeStop: p.IncludeStopStrInOutput,
		stopIDs: p.StopTokenIDs, minTokens: p.MinTokens, eos: tok.EOS(), ignoreEOS: p.IgnoreEOS}
	for _, st := range p.Stop {
		if st == "" {
			continue
		}
		s.stops = append(s.stops, st)
		if !s.includeStop && len(st)-1 > s.holdBack {
			s.holdBack = len(st) - 1
		}
	}
	return s
}

// push consumes tokens and returns the text that may be sent now. After a
// stop matched, stopped reports true and further tokens are ignored.
func (s *textStream) push(toks []uint32) string {
	for _, t := range toks {
		if s.stopped {
			break
		}
		s.tokens = append(s.tokens, t)
		if len(s.tokens) > s.minTokens && containsID(s.stopIDs, t) {
			s.stopped = true
			s.reason = openai.StopReason{TokenID: t, IsToken: true}
			break
		}
		txt, _ := s.tok.TokenText(t, s.skipSpecial)
		if t == s.eos && !s.ignoreEOS && !s.includeStop {
			txt = "" // vLLM never shows the EOS that ended a sequence
		}
		before := len(s.text)
		s.text = append(s.text, txt...)
		if len(s.stops) > 0 && len(s.tokens) > s.minTokens {
			s.checkStops(before)
		}
	}
	limit := len(s.text)
	if !s.stopped {
		limit -= s.holdBack
		for limit > s.emitted && limit < len(s.text) && !utf8.RuneStart(s.text[limit]) {
			limit--
		}
	}
	if limit <= s.emitted {
		return ""
	}
	out := string(s.text[s.emitted:limit])
	s.emitted = limit
	return out
}

// checkStops looks for a stop string ending in the text added after offset
// before (a match wholly inside older text was already checked, or fell
// before min_tokens), and ends the output at the earliest one.
func (s *textStream) checkStops(before int) {
	best, bestStop := -1, ""
	for _, st := range s.stops {
		from := max(0, before-len(st)+1)
		if i := strings.Index(string(s.text[from:]), st); i >= 0 && (best < 0 || from+i < best) {
			best, bestStop = from+i, st
		}
	}
	if best < 0 {
		return
	}
	cut := best
	if s.includeStop {
		cut += len(bestStop)
	}
	s.text = s.text[:cut]
	if s.emitted > cut {
		s.emitted = cut
	}
	s.stopped = true
	s.reason = openai.StopReason{Str: bestStop, IsStr: true}
}

// flush returns the held-back text at the end of the sequence.
func (s *textStream) flush() string {
	if s.emitted >= len(s.text) {
		return ""
	}
	out := string(s.text[s.emitted:])
	s.emitted = len(s.text)
	return out
}

func containsID(ids []uint32, t uint32) bool {
	for _, id := range ids {
		if id == t {
			return true
		}
	}
	return false
}
