package tokenize

import "errors"

// loadHF loads tokenizer.json from a model directory.
func loadHF(dir string) (Encoder, error) {
	return nil, errors.New("hf tokenizer not available yet")
}
