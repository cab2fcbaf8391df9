package balancer

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/inferrail/inferrail/balancer/route"
	"github.com/inferrail/inferrail/internal/tokenize"
)

// parseResult is what a test compares of parse's answer.
type parseResult struct {
	Model, Body, Salt, Reason string
	Tokens                    bool       // ids were produced
	Turn                      route.Turn // where it stands in its conversation
	Err                       string
}

// parse reads the fields from the tokenizer's single decode and tokenizes;
// when the tokenizer cannot decode the body or the pool turns it away, the
// fields come from parseFields and the request is routed without a
// prediction; a model without a tokenizer, or an embeddings request, never
// needs the tokenizer's decode.
func TestParseDecodesOnce(t *testing.T) {
	cfg := testConfig("http://127.0.0.1:1")
	plain := defaultModel()
	plain.Name = "plain"
	cfg.Models = append(cfg.Models, plain)
	cfg.Replicas[0].Models = []string{"m", "plain"}
	cfg.Tokenize.MaxSize = 4096
	b, _ := newTestBalancer(t, cfg)

	deep := `{"model":"m","messages":[{"role":"user","content":"hi"}],"x":` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `}`
	big := `{"model":"alias-m","prompt":"` + strings.Repeat("a", 5000) + `"}`
	tests := []struct {
		name string
		k    kind
		body string
		want parseResult
	}{
		{name: "chat", k: kindChat, body: `{"model":"m","cache_salt":"s","messages":[{"role":"user","content":"hi"}]}`,
			want: parseResult{Model: "m", Salt: "s", Tokens: true, Turn: route.TurnFirst}},
		{name: "chat with an answer in it", k: kindChat, body: `{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"},{"role":"assistant","content":"yo"},{"role":"user","content":"and?"}]}`,
			want: parseResult{Model: "m", Tokens: true, Turn: route.TurnLater}},
		{name: "alias rewritten", k: kindCompletions, body: `{"model":"alias-m","prompt":"hello"}`,
			want: parseResult{Model: "m", Body: `{"model":"m","prompt":"hello"}`, Tokens: true}},
		{name: "sole model", k: kindCompletions, body: `{"prompt":[1,2,3]}`,
			want: parseResult{Err: "model is required"}},
		{name: "repeated model: last wins", k: kindCompletions, body: `{"model":"x","model":"m","prompt":[1]}`,
			want: parseResult{Model: "m", Tokens: true}},
		{name: "model not a string", k: kindChat, body: `{"model":5,"messages":[]}`,
			want: parseResult{Err: "model must be a string"}},
		{name: "salt not a string", k: kindChat, body: `{"model":"m","cache_salt":[],"messages":[]}`,
			want: parseResult{Err: "cache_salt must be a string"}},
		{name: "invalid json", k: kindChat, body: `{"model":"m",`, want: parseResult{Err: "invalid JSON body"}},
		{name: "not an object", k: kindChat, body: `["m"]`, want: parseResult{Err: "body must be a JSON object"}},
		{name: "too deep for the tokenizer", k: kindChat, body: deep,
			want: parseResult{Model: "m", Reason: reasonUnsupported}},
		{name: "unsupported content", k: kindChat, body: `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url"}]}]}`,
			want: parseResult{Model: "m", Reason: reasonUnsupported}},
		{name: "pool rejects: fields still read", k: kindCompletions, body: big,
			want: parseResult{Model: "m", Body: strings.Replace(big, "alias-m", "m", 1), Reason: tokenize.ReasonTooLarge}},
		{name: "model without tokenizer", k: kindChat, body: `{"model":"plain","cache_salt":"s","messages":[]}`,
			want: parseResult{Model: "plain", Salt: "s", Reason: reasonNoTokenizer}},
		{name: "embeddings", k: kindEmbeddings, body: `{"model":"alias-m","input":"x"}`,
			want: parseResult{Model: "m", Body: `{"model":"m","input":"x"}`, Reason: reasonNoTokenizer}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, oerr := b.parse(context.Background(), tc.k, []byte(tc.body), b.fleet.Snapshot())
			var got parseResult
			if oerr != nil {
				got.Err = oerr.Message
				if strings.HasPrefix(got.Err, tc.want.Err) {
					got.Err = tc.want.Err // compare the stable prefix
				}
			} else {
				got = parseResult{Model: p.model.cfg.Name, Salt: p.salt, Reason: p.reason, Tokens: len(p.ids) > 0, Turn: p.turn}
				if string(p.body) != tc.body {
					got.Body = string(p.body)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("parse mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
