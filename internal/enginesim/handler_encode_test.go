package enginesim

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/inferrail/inferrail/internal/jsonenc"
	"github.com/inferrail/inferrail/internal/openai"
)

func randomText(r *rand.Rand) string {
	alphabet := []string{"a", " ", "\"", "\\", "\n", "\t", "\x01", "\x1f", "é", "漢", "<", ">", "&", "\u2028", "😀", "\xff"}
	n := r.IntN(12)
	s := ""
	for i := 0; i < n; i++ {
		s += alphabet[r.IntN(len(alphabet))]
	}
	return s
}

// TestChunkEncoderMatchesStructs: the hand-written chunks decode to the
// same JSON as the openai types encoded with encoding/json.
func TestChunkEncoderMatchesStructs(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for i := 0; i < 2000; i++ {
		id, model, text := "chatcmpl-"+randomText(r), randomText(r), randomText(r)
		finish := []string{"", "stop", "length", "abort"}[r.IntN(4)]
		var stop openai.StopReason
		switch r.IntN(3) {
		case 1:
			stop = openai.StopReason{Str: randomText(r), IsStr: true}
		case 2:
			stop = openai.StopReason{TokenID: r.Uint32(), IsToken: true}
		}
		if finish == "" {
			stop = openai.StopReason{}
		}
		enc := newChunkEncoder(id, openai.ObjectChatCompletionChunk, 123, model)
		choice := openai.ChatChunkChoice{Delta: openai.ChatDelta{Content: openai.Some(text)}, TokenIDs: openai.Null[[]uint32]()}
		if finish != "" {
			choice.FinishReason = &finish
			choice.StopReason = openai.Some(stop)
		}
		want, _ := json.Marshal(openai.ChatCompletionChunk{ID: id, Object: openai.ObjectChatCompletionChunk, Created: 123, Model: model,
			Choices: []openai.ChatChunkChoice{choice}})
		sameJSON(t, want, enc.chatDelta(text, finish, stop))

		cenc := newChunkEncoder(id, openai.ObjectTextCompletion, 123, model)
		cc := openai.CompletionChunkChoice{Text: text}
		if finish != "" {
			cc.FinishReason, cc.StopReason = &finish, stop
		}
		want, _ = json.Marshal(openai.CompletionChunk{ID: id, Object: openai.ObjectTextCompletion, Created: 123, Model: model,
			Choices: []openai.CompletionChunkChoice{cc}, Usage: openai.Null[openai.Usage]()})
		sameJSON(t, want, cenc.completionDelta(text, finish, stop))
	}
}

func sameJSON(t *testing.T, want, got []byte) {
	t.Helper()
	var w, g any
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("want: %v", err)
	}
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("got is not JSON: %v\n%s", err, got)
	}
	if diff := cmp.Diff(w, g); diff != "" {
		t.Fatalf("chunk differs (-struct +fast):\n%s\nfast: %s", diff, got)
	}
	ws, _ := jsonShape(want)
	gs, _ := jsonShape(got)
	if ws != gs {
		t.Fatalf("key order differs:\n%s\n%s", ws, gs)
	}
}

func TestAppendJSONStringNoHTMLEscaping(t *testing.T) {
	if got := string(jsonenc.AppendString(nil, "<|end|> & \"q\"\n")); got != `"<|end|> & \"q\"\n"` {
		t.Errorf("got %s", got)
	}
}
