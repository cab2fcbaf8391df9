package tokenize

import "testing"

// Completions get the special tokens transformers adds (and so vLLM), not
// only those of tokenizer.json's post-processor: DeepSeek V3 ships a
// post-processor without BOS, but its LlamaTokenizerFast class adds one
// (add_bos_token true in tokenizer_config.json).
func TestCompletionAddsTransformersBOS(t *testing.T) {
	for _, tc := range []struct {
		fixture string
		bos     string
	}{
		{"tokenizer-deepseek_v3", "<｜begin▁of▁sentence｜>"},
		{"tokenizer-llama3_1", "<|begin_of_text|>"},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			m, err := Load(fixtureDir(t, tc.fixture), Options{})
			if err != nil {
				t.Fatal(err)
			}
			ps, err := m.Completion([]byte(`{"model":"m","prompt":"hello world"}`))
			if err != nil {
				t.Fatal(err)
			}
			bos, err := m.Raw(tc.bos)
			if err != nil || len(bos) != 1 {
				t.Fatalf("Raw(%q) = %v, %v; want one special token", tc.bos, bos, err)
			}
			ids := ps[0].TokenIDs
			if len(ids) < 2 || ids[0] != bos[0] || ids[1] == bos[0] {
				t.Fatalf("completion ids %v: want exactly one leading BOS %d", ids, bos[0])
			}
		})
	}
}
