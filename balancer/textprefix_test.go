package balancer

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/inferrail/inferrail/internal/kvblock"
)

// textModel returns a model "m" without a tokenizer (block size 16, 4 bytes
// a token: 64-byte chunks).
func textModel(t *testing.T) *model {
	t.Helper()
	cfg := testConfig()
	cfg.Models[0].Tokenizer = ""
	ms, err := newModelsReusing(&cfg, nil, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	return ms.byKey["m"]
}

func chatJSON(msgs ...string) string {
	var parts []string
	for i := 0; i+1 < len(msgs); i += 2 {
		parts = append(parts, fmt.Sprintf(`{"role":%q,"content":%q}`, msgs[i], msgs[i+1]))
	}
	return `{"model":"m","messages":[` + strings.Join(parts, ",") + `]}`
}

func TestTextPrefixIdentity(t *testing.T) {
	m := textModel(t)
	system := strings.Repeat("You are a careful assistant. ", 40) // 1,160 bytes: 18 chunks
	ident := func(chat bool, body string) textPrefix {
		t.Helper()
		tp, reason := m.textPrefix(nil, chat, []byte(body), "")
		if reason != "" {
			t.Fatalf("textPrefix(%s): no identity: %s", body, reason)
		}
		return tp
	}
	shared := func(a, b textPrefix) int {
		n := 0
		for n < len(a.hashes) && n < len(b.hashes) && a.hashes[n] == b.hashes[n] {
			n++
		}
		return n
	}
	a := ident(true, chatJSON("system", system, "user", "What is the capital of France?"))
	b := ident(true, chatJSON("system", system, "user", "Name three rivers of Europe, please."))
	if a.exact || a.tokens < len(system)/4 || len(a.hashes) < 18 {
		t.Fatalf("identity = %d hashes, %d tokens, exact %v; want >= 18 hashes, >= %d tokens, estimated", len(a.hashes), a.tokens, a.exact, len(system)/4)
	}
	if n := shared(a, b); n < 17 {
		t.Errorf("two questions after one system prompt share %d chunks, want >= 17", n)
	}
	// Key order, spaces and escapes in the JSON do not change the identity.
	c := ident(true, `{ "messages" : [ {"content":"`+system+`", "role":"system"}, {"role":"user","content":"What is the capital of Fr\u0061nce?"} ], "model":"m" }`)
	if shared(a, c) != len(a.hashes) || len(c.hashes) != len(a.hashes) {
		t.Error("the same messages in other JSON have another identity")
	}
	// A text part list renders as its text; another role does not.
	d := ident(true, `{"model":"m","messages":[{"role":"system","content":[{"type":"text","text":"`+system+`"}]},{"role":"user","content":"What is the capital of France?"}]}`)
	if shared(a, d) != len(a.hashes) {
		t.Error("content as a text part list has another identity than the string")
	}
	if e := ident(true, chatJSON("user", system, "user", "What is the capital of France?")); shared(a, e) != 0 {
		t.Error("another role kept the identity")
	}
	// Tools come first: other tools, another prefix.
	f := ident(true, `{"model":"m","tools":[{"type":"function","function":{"name":"f"}}],"messages":[{"role":"system","content":"`+system+`"}]}`)
	if shared(a, f) != 0 {
		t.Error("tools did not change the prefix")
	}
	// A cache_salt separates identities.
	g, _ := m.textPrefix(nil, true, []byte(chatJSON("system", system, "user", "What is the capital of France?")), "tenant")
	if shared(a, g) != 0 {
		t.Error("cache_salt did not change the identity")
	}
	// Completions: a string prompt is text; token ids are exact.
	p := ident(false, `{"model":"m","prompt":`+strconv.Quote(system)+`}`)
	if p.exact || len(p.hashes) != len(system)/64 {
		t.Errorf("string prompt: %d hashes, exact %v; want %d, estimated", len(p.hashes), p.exact, len(system)/64)
	}
	ids := ident(false, `{"model":"m","prompt":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17]}`)
	want := kvblock.Hashes(nil, kvblock.NewSeed("m", "", ""), []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17}, 16)
	if !ids.exact || ids.tokens != 17 || len(ids.hashes) != 1 || ids.hashes[0] != want[0] {
		t.Errorf("token id prompt: %+v, want exact, 17 tokens, the engine's block hash", ids)
	}
}

func TestTextPrefixRejects(t *testing.T) {
	m := textModel(t)
	for _, tc := range []struct {
		name string
		chat bool
		body string
		want string
	}{
		{"not json", true, `{"model":`, reasonUnsupported},
		{"no messages", true, `{"model":"m"}`, reasonUnsupported},
		{"messages not a list", true, `{"model":"m","messages":"hi"}`, reasonUnsupported},
		{"empty messages", true, `{"model":"m","messages":[]}`, reasonUnsupported},
		{"content a number", true, `{"model":"m","messages":[{"role":"user","content":5}]}`, reasonUnsupported},
		{"part not an object", true, `{"model":"m","messages":[{"role":"user","content":["x"]}]}`, reasonUnsupported},
		{"no prompt", false, `{"model":"m"}`, reasonUnsupported},
		{"empty prompt", false, `{"model":"m","prompt":""}`, reasonUnsupported},
		{"two prompts", false, `{"model":"m","prompt":["a","b"]}`, reasonMultiPrompt},
		{"prompt an object", false, `{"model":"m","prompt":{}}`, reasonUnsupported},
		{"negative ids", false, `{"model":"m","prompt":[-1]}`, reasonUnsupported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, got := m.textPrefix(nil, tc.chat, []byte(tc.body), ""); got != tc.want {
				t.Errorf("reason = %q, want %q", got, tc.want)
			}
		})
	}
}

// Through the HTTP API: without a tokenizer, a repeated long prompt goes to
// the replica the first went to, with estimated prompt and cached token
// headers; with text_prefix off it is routed blind and says nothing.
func TestTextPrefixThroughHandler(t *testing.T) {
	ups := []*upstream{newUpstream(t, okHandler), newUpstream(t, okHandler), newUpstream(t, okHandler), newUpstream(t, okHandler)}
	urls := make([]string, len(ups))
	for i, u := range ups {
		urls[i] = u.srv.URL
	}
	system := strings.Repeat("Answer in the voice of a ship's log. ", 100)
	for _, on := range []bool{true, false} {
		t.Run(fmt.Sprintf("enabled=%v", on), func(t *testing.T) {
			cfg := testConfig(urls...)
			cfg.Models[0].Tokenizer = ""
			cfg.Models[0].TextPrefix.Enabled = on
			_, srv := newTestBalancer(t, cfg)
			var first string
			for i := range 6 {
				resp, _ := post(t, srv.URL+"/v1/chat/completions", chatJSON("system", system, "user", fmt.Sprintf("entry %d", i)))
				rep := resp.Header.Get(HeaderReplica)
				if !on {
					if h := resp.Header.Get(HeaderCachedTokens) + resp.Header.Get(HeaderTokensEstimated); h != "" {
						t.Errorf("text_prefix off: token headers %q", h)
					}
					continue
				}
				if resp.Header.Get(HeaderTokensEstimated) != "true" || resp.Header.Get(HeaderPromptTokens) == "" {
					t.Fatalf("headers = %v, want estimated prompt and cached tokens", resp.Header)
				}
				cached, _ := strconv.Atoi(resp.Header.Get(HeaderCachedTokens))
				if i == 0 {
					first = rep
					continue
				}
				if rep != first {
					t.Errorf("request %d went to %s, the prefix is on %s", i, rep, first)
				}
				if cached < len(system)/4-64 {
					t.Errorf("request %d: predicted %d cached tokens, want about the %d of the system prompt", i, cached, len(system)/4)
				}
			}
		})
	}
}

func FuzzTextPrefix(f *testing.F) {
	for _, s := range []string{
		chatJSON("system", "abc", "user", "def"), `{"messages":[{"role":"user","content":[{"type":"text","text":"x"},{"type":"image_url","image_url":{"url":"data:"}}]}]}`,
		`{"tools":[{}],"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"1"}]},{"role":"tool","tool_call_id":"1","content":"r"}]}`,
		`{"prompt":"hello"}`, `{"prompt":[[1,2],[3]]}`, `{"prompt":[1,2,3]}`, `{"prompt":["a"]}`, "\xff", `{"messages":[{"role":1}]}`,
	} {
		f.Add(true, []byte(s))
		f.Add(false, []byte(s))
	}
	cfg := testConfig()
	cfg.Models[0].Tokenizer = ""
	ms, err := newModelsReusing(&cfg, nil, nil, 0)
	if err != nil {
		f.Fatal(err)
	}
	m := ms.byKey["m"]
	f.Fuzz(func(t *testing.T, chat bool, body []byte) {
		tp, reason := m.textPrefix(nil, chat, body, "")
		if reason != "" {
			if len(tp.hashes) != 0 || tp.tokens != 0 {
				t.Fatalf("reason %q with an identity %+v", reason, tp)
			}
			return
		}
		if tp.tokens < 0 || (!tp.exact && len(tp.hashes)*64 > tp.tokens*4) {
			t.Fatalf("identity %d hashes for %d estimated tokens", len(tp.hashes), tp.tokens)
		}
	})
}

// BenchmarkTextPrefix: the text prefix identity of a chat request with a
// 12 KB system prompt (about 3,000 tokens), the work a request of a model
// without a tokenizer costs before routing.
func BenchmarkTextPrefix(b *testing.B) {
	cfg := testConfig()
	cfg.Models[0].Tokenizer = ""
	ms, err := newModelsReusing(&cfg, nil, nil, 0)
	if err != nil {
		b.Fatal(err)
	}
	m := ms.byKey["m"]
	body := []byte(chatJSON("system", strings.Repeat("You are a careful assistant; cite sources. ", 280), "user", "What changed in the last release?"))
	dst := make([]kvblock.Hash, 0, 256)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		tp, _ := m.textPrefix(dst[:0], true, body, "")
		dst = tp.hashes
	}
}
