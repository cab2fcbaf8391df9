package sidecar

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/inferrail/inferrail/internal/kvblock"
	"github.com/inferrail/inferrail/internal/tokenize/simtok"
)

func TestPromptInspect(t *testing.T) {
	const bs = 4
	seed := kvblock.NewSeed("m", "", "")
	salted := kvblock.NewSeed("m", "", "s1")
	chatIDs := simtok.Encode(simtok.RenderChat([]simtok.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "hello there"}}, true, false), false)
	textIDs := simtok.Encode("the quick brown fox jumps", true)
	// vLLM joins text parts with a newline.
	partsIDs := simtok.Encode(simtok.RenderChat([]simtok.Message{{Role: "system", Content: "be\nbrief"}, {Role: "user", Content: "hello there"}}, true, false), false)
	tests := []struct {
		name  string
		chat  bool
		tok   Tokenizer
		body  string
		want  promptInfo
		wantK bool
	}{
		{"chat string content", true, simTok, `{"model":"m","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hello there"}]}`,
			promptInfo{tokens: len(chatIDs), exact: true, hashes: [][]kvblock.Hash{kvblock.Hashes(nil, seed, chatIDs, bs)}}, true},
		{"chat text parts", true, simTok, `{"messages":[{"role":"system","content":[{"type":"text","text":"be"},{"type":"text","text":"brief"}]},{"role":"user","content":"hello there"}]}`,
			promptInfo{tokens: len(partsIDs), exact: true, hashes: [][]kvblock.Hash{kvblock.Hashes(nil, seed, partsIDs, bs)}}, true},
		{"chat image part rejected by the tokenizer", true, simTok, `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`,
			promptInfo{}, false},
		{"chat no tokenizer with parts", true, nil, `{"messages":[{"role":"user","content":[{"type":"text","text":"abcd"},{"type":"image_url"}]}]}`,
			promptInfo{tokens: 2, noHashes: "no_tokenizer"}, true},
		{"chat no tokenizer estimates", true, nil, `{"messages":[{"role":"user","content":"abcdefgh"}]}`,
			promptInfo{tokens: 3, noHashes: "no_tokenizer"}, true},
		{"completion text", false, simTok, `{"prompt":"the quick brown fox jumps"}`,
			promptInfo{tokens: len(textIDs), exact: true, hashes: [][]kvblock.Hash{kvblock.Hashes(nil, seed, textIDs, bs)}}, true},
		{"completion salted", false, simTok, `{"prompt":"the quick brown fox jumps","cache_salt":"s1"}`,
			promptInfo{tokens: len(textIDs), exact: true, hashes: [][]kvblock.Hash{kvblock.Hashes(nil, salted, textIDs, bs)}}, true},
		{"completion token ids without tokenizer", false, nil, `{"prompt":[1,2,3,4,5,6,7,8,9]}`,
			promptInfo{tokens: 9, exact: true, hashes: [][]kvblock.Hash{kvblock.Hashes(nil, seed, []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9}, bs)}}, true},
		{"completion batch of ids", false, nil, `{"prompt":[[1,2,3,4],[5]]}`,
			promptInfo{tokens: 5, exact: true, hashes: [][]kvblock.Hash{kvblock.Hashes(nil, seed, []uint32{1, 2, 3, 4}, bs), nil}}, true},
		{"completion text without tokenizer", false, nil, `{"prompt":["abcd","efghi"]}`,
			promptInfo{tokens: 3, noHashes: "no_tokenizer"}, true},
		{"ids and text without tokenizer", false, nil, `{"prompt":[1,2,3,4]}`,
			promptInfo{tokens: 4, exact: true, hashes: [][]kvblock.Hash{kvblock.Hashes(nil, seed, []uint32{1, 2, 3, 4}, bs)}}, true},
		{"not json", false, simTok, `{"prompt":`, promptInfo{}, false},
		{"no prompt", false, simTok, `{"model":"m"}`, promptInfo{}, false},
		{"no messages", true, simTok, `{"model":"m"}`, promptInfo{}, false},
		{"bad content", true, simTok, `{"messages":[{"role":"user","content":7}]}`, promptInfo{}, false},
	}
	tests = append(tests, struct {
		name  string
		chat  bool
		tok   Tokenizer
		body  string
		want  promptInfo
		wantK bool
	}{"model unknown", false, simTok, `{"prompt":"the quick brown fox jumps"}`, promptInfo{tokens: len(textIDs), exact: true, noHashes: "model_unknown"}, true})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			model := "m"
			if tt.name == "model unknown" {
				model = ""
			}
			p := &promptInspector{tok: tt.tok, model: func() string { return model }, blockSize: func() int { return bs }}
			got, ok := p.inspect([]byte(tt.body), tt.chat)
			if ok != tt.wantK {
				t.Fatalf("ok = %v, want %v", ok, tt.wantK)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(promptInfo{})); diff != "" {
				t.Errorf("inspect (-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzPromptInspect(f *testing.F) {
	for _, s := range []string{`{"prompt":"x"}`, `{"prompt":[1,2]}`, `{"messages":[{"role":"u","content":[{"type":"text","text":"a"}]}]}`, `[]`, `null`} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, b []byte, chat bool) {
		p := &promptInspector{tok: simTok, model: func() string { return "m" }, blockSize: func() int { return 16 }}
		info, ok := p.inspect(b, chat)
		if !ok && (info.tokens != 0 || info.hashes != nil) {
			t.Errorf("rejected body yielded %+v", info)
		}
		if info.tokens < 0 {
			t.Errorf("negative token count %d", info.tokens)
		}
	})
}

// simTok is the builtin:sim tokenizer as the sidecar loads it.
var simTok = func() Tokenizer {
	tok, err := loadTokenizer(TokenizerSim, nil)
	if err != nil {
		panic(err)
	}
	return tok
}()

// TestSimTokenizerMatchesSimtok pins the loaded builtin:sim tokenizer to the
// simulator's own rendering and encoding, so approximate blocks hash like the
// simulator's cache.
func TestSimTokenizerMatchesSimtok(t *testing.T) {
	chat, err := simTok.Chat([]byte(`{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hello there"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := simtok.Encode(simtok.RenderChat([]simtok.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "hello there"}}, true, false), false)
	if diff := cmp.Diff(want, chat); diff != "" {
		t.Errorf("chat ids (-simtok +tokenizer):\n%s", diff)
	}
	comp, err := simTok.Completion([]byte(`{"prompt":"the quick brown fox"}`))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([][]uint32{simtok.Encode("the quick brown fox", true)}, comp); diff != "" {
		t.Errorf("completion ids (-simtok +tokenizer):\n%s", diff)
	}
}
