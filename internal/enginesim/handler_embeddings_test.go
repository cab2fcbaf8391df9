package enginesim

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"testing"
)

func cosine(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

func TestEmbedSharedWordsAreClose(t *testing.T) {
	q := Embed("What is the capital of France?", 256)
	if again := Embed("what is the capital of france", 256); cosine(q, again) < 0.9999 {
		t.Errorf("same words, other case and punctuation: cosine %v", cosine(q, again))
	}
	para := Embed("What is the capital city of France?", 256)
	other := Embed("How do I bake sourdough bread at home?", 256)
	if cp, co := cosine(q, para), cosine(q, other); cp < 0.8 || co > 0.3 || cp <= co {
		t.Errorf("paraphrase cosine %v, unrelated cosine %v", cp, co)
	}
	var n float64
	for _, f := range q {
		n += float64(f) * float64(f)
	}
	if math.Abs(n-1) > 1e-5 {
		t.Errorf("norm² = %v, want 1", n)
	}
	if e := Embed("", 8); cosine(e, e) < 0.9999 {
		t.Errorf("empty text: %v", e)
	}
}

func TestEmbeddingsRoute(t *testing.T) {
	h := newSimHarness(t, simTestConfig())
	rec := h.do("POST", "/v1/embeddings", `{"model":"sim-model","input":["a b","c"],"dimensions":16}`)
	var resp embeddingResponse
	mustJSON(t, rec.Body.Bytes(), &resp)
	if rec.Code != 200 || resp.Object != "list" || len(resp.Data) != 2 || resp.Data[1].Index != 1 || resp.Usage.PromptTokens == 0 {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	if v, ok := resp.Data[0].Embedding.([]any); !ok || len(v) != 16 {
		t.Errorf("embedding %v", resp.Data[0].Embedding)
	}
	rec = h.do("POST", "/v1/embeddings", `{"model":"sim-model","input":"a b","encoding_format":"base64","dimensions":4}`)
	mustJSON(t, rec.Body.Bytes(), &resp)
	b, err := base64.StdEncoding.DecodeString(resp.Data[0].Embedding.(string))
	if err != nil || len(b) != 16 {
		t.Fatalf("base64 embedding: %v %d bytes", err, len(b))
	}
	want := Embed("a b", 4)
	for i := range 4 {
		if got := math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])); got != want[i] {
			t.Errorf("component %d = %v, want %v", i, got, want[i])
		}
	}
	for _, bad := range []struct{ body, param string }{
		{`{"model":"sim-model","input":[]}`, "input"},
		{`{"model":"sim-model","input":"x","dimensions":0}`, "dimensions"},
		{`{"model":"sim-model","input":"x","encoding_format":"int8"}`, "encoding_format"},
	} {
		rec := h.do("POST", "/v1/embeddings", bad.body)
		var e struct{ Error struct{ Param string } }
		mustJSON(t, rec.Body.Bytes(), &e)
		if rec.Code != 400 || e.Error.Param != bad.param {
			t.Errorf("%s: %d %s", bad.body, rec.Code, rec.Body)
		}
	}
	if rec := h.do("POST", "/v1/embeddings", `{"model":"nope","input":"x"}`); rec.Code != 404 {
		t.Errorf("unknown model: %d", rec.Code)
	}
}
