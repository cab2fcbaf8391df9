package tokenize

import "github.com/inferrail/inferrail/internal/tokenize/hf"

// loadHF loads tokenizer.json (and its configs) from a model directory.
func loadHF(dir string) (Encoder, error) {
	t, err := hf.Load(dir)
	if err != nil {
		return nil, err
	}
	return t, nil
}

var _ Encoder = (*hf.Tokenizer)(nil)
