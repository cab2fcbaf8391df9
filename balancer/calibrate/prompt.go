package calibrate

import (
	"math"
	"math/rand/v2"
	"strings"
)

// promptGen writes prompts of random two-letter words. Random words make
// every prompt's first block unique (a cold prompt never hits the cache)
// and keep the token count close to linear in the word count for any
// tokenizer; the count is measured (tokensPerWord, bos) and each request's
// own usage.prompt_tokens is what the fit uses.
type promptGen struct {
	rng           *rand.Rand
	tokensPerWord float64
	bos           float64
}

// words returns n random words, each followed by a space.
func (g *promptGen) words(n int) string {
	var sb strings.Builder
	sb.Grow(3 * n)
	for range n {
		sb.WriteByte(byte('a' + g.rng.IntN(26)))
		sb.WriteByte(byte('a' + g.rng.IntN(26)))
		sb.WriteByte(' ')
	}
	return sb.String()
}

// wordsFor returns how many words make about tokens prompt tokens (at least 1).
func (g *promptGen) wordsFor(tokens int) int {
	return max(1, int(math.Round((float64(tokens)-g.bos)/g.tokensPerWord)))
}

// text returns a prompt of about tokens tokens.
func (g *promptGen) text(tokens int) string { return g.words(g.wordsFor(tokens)) }

// suffix returns text of about tokens tokens to append to a prompt (no BOS).
func (g *promptGen) suffix(tokens int) string {
	return g.words(max(1, int(math.Round(float64(tokens)/g.tokensPerWord))))
}
