package calibrate

import (
	"strings"
	"testing"
	"time"
)

// readStream never panics or hangs on any stream, and every event it
// reports carries at least one token.
func FuzzReadStream(f *testing.F) {
	f.Add(`data: {"choices":[{"index":0,"text":"hi","token_ids":[5,6]}]}` + "\n\n" +
		`data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5,"prompt_tokens_details":{"cached_tokens":0}}}` + "\n\ndata: [DONE]\n\n")
	f.Add("data: {\"error\":{\"message\":\"boom\"}}\n\n")
	f.Add("data: {\"choices\":[{\"text\":\"\"}]}\n\ndata: [DONE]\n\n")
	f.Add(": comment\r\ndata: {\"choices\":[{\"text\":\"a\"}]}\r\n\r\n")
	f.Add("data: not json\n\n")
	f.Fuzz(func(t *testing.T, s string) {
		now := time.Unix(0, 0)
		res, _ := readStream(strings.NewReader(s), func() time.Time { return now })
		for _, ev := range res.Events {
			if ev.Tokens < 1 {
				t.Fatalf("event with %d tokens", ev.Tokens)
			}
		}
	})
}

// DecodeCostModel never panics, and what it accepts is a valid cost model
// that writes back to the same values.
func FuzzDecodeCostModel(f *testing.F) {
	f.Add("cost_model:\n  step_overhead: 2ms\n  linear_tok_per_sec: 15000\n")
	f.Add("cost_model: {attention_per_pair_ns: -1}\n")
	f.Add("cost_model: [1, 2]\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := DecodeCostModel([]byte(s))
		if err != nil {
			return
		}
		var sb strings.Builder
		if err := (&Result{Cost: c}).WriteYAML(&sb); err != nil {
			t.Fatal(err)
		}
		back, err := DecodeCostModel([]byte(sb.String()))
		if err != nil {
			t.Fatalf("the written block does not decode: %v\n%s", err, sb.String())
		}
		if back != c {
			t.Fatalf("round trip changed the cost model: %+v -> %+v", c, back)
		}
	})
}

func TestDecodeObservationNeedsAllDecodingSteps(t *testing.T) {
	t0 := time.Unix(0, 0)
	ev := func(ms ...int) []tokenEvent {
		var out []tokenEvent
		for _, m := range ms {
			out = append(out, tokenEvent{At: t0.Add(time.Duration(m) * time.Millisecond), Tokens: 1})
		}
		return out
	}
	// Two streams that never decode together.
	_, err := decodeObservation("d", []sample{{Events: ev(0, 10, 20)}, {Events: ev(30, 40, 50)}})
	if err == nil {
		t.Error("disjoint streams gave an observation")
	}
	// A stall of 50 ms in the middle shifts the later events but not the
	// fitted step of 10 ms.
	var ms []int
	for i := range 30 {
		m := 10 * i
		if i >= 15 {
			m += 50
		}
		ms = append(ms, m)
	}
	o, err := decodeObservation("d", []sample{{PromptTokens: 100, Events: ev(ms...)}})
	if err != nil {
		t.Fatal(err)
	}
	if o.Measured != 10*time.Millisecond || o.Decodes != 1 || o.DecodeContext != 100+(1+30)/2 {
		t.Errorf("observation %+v, want a 10ms step of 1 decode at context 115", o)
	}
}
