package hf

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// SpecialTokens describes the BOS, EOS, PAD and UNK tokens of a model, from
// tokenizer_config.json and generation_config.json.
type SpecialTokens struct {
	BOS, EOS, PAD, UNK string // token strings; "" when not set
	// AddBOS and AddEOS are tokenizer_config.json's add_bos_token and
	// add_eos_token (what transformers' slow tokenizers add); Encode itself
	// follows the tokenizer.json post-processor, as the Rust library does.
	AddBOS, AddEOS bool
	// EOSIDs is the EOS token's id followed by generation_config.json's
	// eos_token_id entries, without duplicates.
	EOSIDs []uint32
}

// tokenField is a special token given as a string or as an AddedToken object.
type tokenField string

// UnmarshalJSON accepts a string or an object with a "content" field.
func (f *tokenField) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*f = tokenField(s)
		return nil
	}
	var o struct {
		Content string `json:"content"`
	}
	if err := json.Unmarshal(b, &o); err != nil {
		return err
	}
	*f = tokenField(o.Content)
	return nil
}

// transformersTemplated are the tokenizer classes whose transformers fast
// tokenizer rebuilds the post-processor from add_bos_token and
// add_eos_token (update_post_processor).
var transformersTemplated = map[string]bool{
	"LlamaTokenizer": true, "LlamaTokenizerFast": true,
	"CodeLlamaTokenizer": true, "CodeLlamaTokenizerFast": true,
	"GemmaTokenizer": true, "GemmaTokenizerFast": true,
}

// loadConfigs reads the optional tokenizer_config.json and
// generation_config.json of dir; with transformers set it also applies the
// post-processor transformers would install.
func (t *Tokenizer) loadConfigs(dir string, transformers bool) error {
	var tc struct {
		BOS    *tokenField `json:"bos_token"`
		EOS    *tokenField `json:"eos_token"`
		PAD    *tokenField `json:"pad_token"`
		UNK    *tokenField `json:"unk_token"`
		AddBOS *bool       `json:"add_bos_token"`
		AddEOS *bool       `json:"add_eos_token"`
		Class  string      `json:"tokenizer_class"`
	}
	if err := readOptionalJSON(filepath.Join(dir, "tokenizer_config.json"), &tc); err != nil {
		return err
	}
	st := SpecialTokens{}
	for _, p := range []struct {
		src *tokenField
		dst *string
	}{{tc.BOS, &st.BOS}, {tc.EOS, &st.EOS}, {tc.PAD, &st.PAD}, {tc.UNK, &st.UNK}} {
		if p.src != nil {
			*p.dst = string(*p.src)
		}
	}
	if tc.AddBOS != nil {
		st.AddBOS = *tc.AddBOS
	}
	if tc.AddEOS != nil {
		st.AddEOS = *tc.AddEOS
	}
	if st.EOS != "" {
		id, ok := t.TokenID(st.EOS)
		if !ok {
			return fmt.Errorf("tokenizer_config.json: eos_token %q is not a token", st.EOS)
		}
		st.EOSIDs = append(st.EOSIDs, id)
	}
	if st.BOS != "" {
		if _, ok := t.TokenID(st.BOS); !ok {
			return fmt.Errorf("tokenizer_config.json: bos_token %q is not a token", st.BOS)
		}
	}
	var gc struct {
		EOS json.RawMessage `json:"eos_token_id"`
	}
	if err := readOptionalJSON(filepath.Join(dir, "generation_config.json"), &gc); err != nil {
		return err
	}
	if !isNull(gc.EOS) {
		var one uint32
		var many []uint32
		if err := json.Unmarshal(gc.EOS, &one); err == nil {
			many = []uint32{one}
		} else if err := json.Unmarshal(gc.EOS, &many); err != nil {
			return fmt.Errorf("generation_config.json: eos_token_id: %w", err)
		}
		for _, id := range many {
			if !slices.Contains(st.EOSIDs, id) {
				st.EOSIDs = append(st.EOSIDs, id)
			}
		}
	}
	t.special = st
	if transformers && transformersTemplated[tc.Class] {
		addBOS := tc.AddBOS == nil || *tc.AddBOS
		addEOS := tc.AddEOS != nil && *tc.AddEOS
		p := &postProcessor{}
		if addBOS {
			id, ok := t.TokenID(st.BOS)
			if st.BOS == "" || !ok {
				return fmt.Errorf("tokenizer_config.json: add_bos_token is set but bos_token %q is not a token", st.BOS)
			}
			p.prefix = []uint32{id}
		}
		if addEOS {
			if len(st.EOSIDs) == 0 {
				return fmt.Errorf("tokenizer_config.json: add_eos_token is set but there is no eos_token")
			}
			p.suffix = []uint32{st.EOSIDs[0]}
		}
		t.post = p
	}
	return nil
}

func readOptionalJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("parse %s: %w", path, err)
	}
	return nil
}

// SpecialTokens returns the model's BOS/EOS/PAD/UNK information (empty when
// the tokenizer was loaded from a lone tokenizer.json).
func (t *Tokenizer) SpecialTokens() SpecialTokens {
	st := t.special
	st.EOSIDs = slices.Clone(st.EOSIDs)
	return st
}

// BOSTokenID returns the id of the BOS token named by tokenizer_config.json.
func (t *Tokenizer) BOSTokenID() (uint32, bool) {
	if t.special.BOS == "" {
		return 0, false
	}
	return t.TokenID(t.special.BOS)
}

// EOSTokenIDs returns the ids that end generation: tokenizer_config.json's
// eos_token and generation_config.json's eos_token_id.
func (t *Tokenizer) EOSTokenIDs() []uint32 { return slices.Clone(t.special.EOSIDs) }
