package tokenize

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"

	"github.com/inferrail/inferrail/internal/tokenize/hf"
)

// chatBody builds a multi-turn chat request of about n Llama 3 tokens, with
// a system prompt of sys words and a nonce in the last user message.
func chatBody(n, sys int, nonce string) []byte {
	r := rand.New(rand.NewPCG(7, 7))
	words := strings.Fields("the cache router token block replica prefix prefill decode latency engine vLLM " +
		"batch queue model request answer question summary document section 日本語 données über 🎉")
	text := func(k int) string {
		var b strings.Builder
		for i := range k {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[r.IntN(len(words))])
		}
		return b.String()
	}
	msgs := []map[string]string{{"role": "system", "content": text(sys)}}
	for total := sys; total < n; total += 2 * 400 {
		msgs = append(msgs, map[string]string{"role": "user", "content": text(300)})
		msgs = append(msgs, map[string]string{"role": "assistant", "content": text(300)})
	}
	msgs = append(msgs, map[string]string{"role": "user", "content": nonce + " " + text(50)})
	b, _ := json.Marshal(map[string]any{"model": "m", "messages": msgs})
	return b
}

func benchModel(b *testing.B, opts Options) *Model {
	b.Helper()
	return loadFamily(b, goldenFamilies[0], opts)
}

// cpuSeconds returns the CPU time (user + system) the process has used.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// loop runs fn b.N times and reports tokens per second of wall time and of
// CPU time (the machine is shared, so wall time is stretched by others).
func loop(b *testing.B, tokens int, fn func(i int)) {
	b.ResetTimer()
	cpu0 := cpuSeconds()
	i := 0
	for b.Loop() {
		fn(i)
		i++
	}
	cpu := cpuSeconds() - cpu0
	b.ReportMetric(float64(tokens)*float64(i)/b.Elapsed().Seconds()/1e6, "Mtok/s")
	if cpu > 0 {
		b.ReportMetric(float64(tokens)*float64(i)/cpu/1e6, "Mtok/cpu-s")
	}
	b.ReportMetric(float64(tokens), "tokens/op")
}

// BenchmarkChat8k renders and tokenizes an 8k-token Llama 3.1 chat.
// cold: the tokenizer's caches off and a different request every
// iteration (the whole pipeline every time); warm: the default caches and
// the same request again (every segment from the cache).
func BenchmarkChat8k(b *testing.B) {
	b.Run("cold", func(b *testing.B) {
		enc, err := hf.LoadWithConfig(fixtureDir(b, goldenFamilies[0].fixture), hf.Config{DisableCache: true})
		if err != nil {
			b.Fatal(err)
		}
		m := benchModel(b, Options{Encoder: enc})
		bodies := make([][]byte, 64)
		for i := range bodies {
			bodies[i] = chatBody(8000, 500, fmt.Sprintf("n%d", i))
		}
		p, err := m.Chat(bodies[0])
		if err != nil {
			b.Fatal(err)
		}
		loop(b, len(p.TokenIDs), func(i int) {
			if _, err := m.Chat(bodies[i%len(bodies)]); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("warm", func(b *testing.B) {
		m := benchModel(b, Options{})
		body := chatBody(8000, 500, "n")
		p, err := m.Chat(body)
		if err != nil {
			b.Fatal(err)
		}
		loop(b, len(p.TokenIDs), func(int) {
			if _, err := m.Chat(body); err != nil {
				b.Fatal(err)
			}
		})
	})
}

// BenchmarkSystemPromptHit: requests share a 2k-token system prompt and
// differ in a short user message. nocache: the segment cache off (the word
// cache on); cache: the system prompt's ids come from the segment cache.
func BenchmarkSystemPromptHit(b *testing.B) {
	for _, c := range []struct {
		name  string
		bytes int64
	}{{"nocache", -1}, {"cache", 0}} {
		b.Run(c.name, func(b *testing.B) {
			m := benchModel(b, Options{CacheBytes: c.bytes})
			bodies := make([][]byte, 64)
			for i := range bodies {
				bodies[i] = chatBody(0, 1500, fmt.Sprintf("question %d", i))
			}
			p, err := m.Chat(bodies[0])
			if err != nil {
				b.Fatal(err)
			}
			loop(b, len(p.TokenIDs), func(i int) {
				if _, err := m.Chat(bodies[i%len(bodies)]); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// BenchmarkRender8k is the template alone (no tokenizing).
func BenchmarkRender8k(b *testing.B) {
	m := benchModel(b, Options{})
	body := chatBody(8000, 500, "n")
	p, err := m.Chat(body)
	if err != nil {
		b.Fatal(err)
	}
	loop(b, len(p.TokenIDs), func(int) {
		if _, err := m.RenderChat(body); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkLoad loads each golden family's model directory.
func BenchmarkLoad(b *testing.B) {
	for _, fam := range goldenFamilies {
		b.Run(fam.name, func(b *testing.B) {
			dir := fixtureDir(b, fam.fixture)
			for b.Loop() {
				if _, err := Load(dir, Options{ChatTemplate: fam.template}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
