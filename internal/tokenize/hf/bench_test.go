package hf

import (
	"math/rand/v2"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// benchText builds a deterministic text of mixed English prose, code, JSON
// and some unicode, about n bytes long.
func benchText(n int) string {
	rnd := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields(`the of and to in is you that it he was for on are as with his they at be
		this have from or one had by word but not what all were we when your can said there use an each
		which she do how their if will up other about out many then them these so some her would make
		like him into time has look two more write go see number no way could people my than first water
		been call who oil its now find long down day did get come made may part prefill decode replica
		tokenization cache router balancer kubernetes latency throughput 2024 3.14 1,000 don't it's we'll`)
	snippets := []string{
		"\n\nfunc (s *Server) handle(w http.ResponseWriter, r *http.Request) {\n\tif err := s.do(r.Context()); err != nil {\n\t\thttp.Error(w, err.Error(), 500)\n\t}\n}\n",
		"\n{\"model\": \"llama\", \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"max_tokens\": 128}\n",
		"\n    for i in range(10):\n        print(i, i ** 2)\n",
		" Naïve café — 東京 and 北京, 😀! ",
		"\n\n## Section\n\n- item one\n- item two\n",
	}
	var b strings.Builder
	for b.Len() < n {
		if rnd.IntN(12) == 0 {
			b.WriteString(snippets[rnd.IntN(len(snippets))])
			continue
		}
		w := words[rnd.IntN(len(words))]
		if rnd.IntN(8) == 0 {
			w = strings.ToUpper(w[:1]) + w[1:]
		}
		b.WriteString(w)
		switch rnd.IntN(15) {
		case 0:
			b.WriteString(". ")
		case 1:
			b.WriteString(", ")
		default:
			b.WriteByte(' ')
		}
	}
	return b.String()
}

var benchFamilies = []string{"llama3_1", "qwen3", "llama2", "gemma3", "deepseek_v3", "gptoss"}

// text8k returns a text of about 8,000 tokens for tk.
func text8k(b *testing.B, tk *Tokenizer) (string, int) {
	text := benchText(28000)
	ids, err := tk.Encode(text, false)
	if err != nil {
		b.Fatal(err)
	}
	return text, len(ids)
}

// cpuTime returns the CPU time (user + system) the process has used. The
// benchmarks report throughput per CPU second as well as per wall second,
// because a machine shared with other work stretches wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportMtok reports tokens per second, by wall clock and by CPU time since
// cpuStart.
func reportMtok(b *testing.B, tokens int, cpuStart time.Duration) {
	total := float64(tokens) * float64(b.N)
	b.ReportMetric(total/b.Elapsed().Seconds()/1e6, "Mtok/s")
	if cpu := cpuTime() - cpuStart; cpu > 0 {
		b.ReportMetric(total/cpu.Seconds()/1e6, "Mtok/cpu-s")
	}
}

// BenchmarkEncode8k measures one core encoding an ~8k-token text:
// cold = no caches; warm = word cache filled, segment cache off (a new text
// made of known words); segment_hit = the same text again (a repeated
// system prompt).
func BenchmarkEncode8k(b *testing.B) {
	for _, fam := range benchFamilies {
		dir := fixtureDir(b, fam)
		b.Run(fam+"/cold", func(b *testing.B) {
			tk, err := LoadWithConfig(dir, Config{DisableCache: true})
			if err != nil {
				b.Fatal(err)
			}
			text, n := text8k(b, tk)
			b.SetBytes(int64(len(text)))
			cpu := cpuTime()
			for b.Loop() {
				if _, err := tk.Encode(text, true); err != nil {
					b.Fatal(err)
				}
			}
			reportMtok(b, n, cpu)
		})
		b.Run(fam+"/warm", func(b *testing.B) {
			tk, err := LoadWithConfig(dir, Config{SegmentCacheBytes: -1})
			if err != nil {
				b.Fatal(err)
			}
			text, n := text8k(b, tk)
			b.SetBytes(int64(len(text)))
			cpu := cpuTime()
			for b.Loop() {
				if _, err := tk.Encode(text, true); err != nil {
					b.Fatal(err)
				}
			}
			reportMtok(b, n, cpu)
		})
		b.Run(fam+"/segment_hit", func(b *testing.B) {
			tk := loadFamily(b, fam)
			text, n := text8k(b, tk)
			b.SetBytes(int64(len(text)))
			cpu := cpuTime()
			for b.Loop() {
				if _, err := tk.Encode(text, true); err != nil {
					b.Fatal(err)
				}
			}
			reportMtok(b, n, cpu)
		})
	}
}

// BenchmarkLoad measures loading a tokenizer directory and reports the heap
// it retains.
func BenchmarkLoad(b *testing.B) {
	for _, fam := range benchFamilies {
		dir := fixtureDir(b, fam)
		b.Run(fam, func(b *testing.B) {
			for b.Loop() {
				if _, err := Load(dir); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			keep, err := Load(dir)
			if err != nil {
				b.Fatal(err)
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "MiB-retained")
			runtime.KeepAlive(keep)
		})
	}
}
