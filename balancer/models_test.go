package balancer

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/inferrail/inferrail/internal/tokenize"
)

func TestParseFields(t *testing.T) {
	s := func(v string) *string { return &v }
	tests := []struct {
		name, body string
		want       requestFields
		wantErr    bool
	}{
		{"both", `{"model":"m","cache_salt":"s","x":[1]}`, requestFields{Model: s("m"), CacheSalt: s("s")}, false},
		{"absent", `{"prompt":"x"}`, requestFields{}, false},
		{"null", `{"model":null,"cache_salt":null}`, requestFields{}, false},
		{"last duplicate wins", `{"model":"a","model":"b"}`, requestFields{Model: s("b")}, false},
		{"exact case", `{"Model":"a"}`, requestFields{}, false},
		{"escapes", `{"model":"m\u00e9\n"}`, requestFields{Model: s("mé\n")}, false},
		{"leading space", " \n{\"model\":\"m\"}", requestFields{Model: s("m")}, false},
		{"model number", `{"model":5}`, requestFields{}, true},
		{"salt object", `{"cache_salt":{}}`, requestFields{}, true},
		{"array", `[1]`, requestFields{}, true},
		{"truncated", `{"model":"m"`, requestFields{}, true},
		{"empty", ``, requestFields{}, true},
		{"trailing garbage", `{"model":"m"} x`, requestFields{}, true},
		{"max_tokens", `{"model":"m","max_tokens":300}`, requestFields{Model: s("m"), MaxTokens: 300}, false},
		{"max_completion_tokens wins", `{"max_tokens":300,"max_completion_tokens":20}`, requestFields{MaxTokens: 20}, false},
		{"max_completion_tokens 0: max_tokens", `{"max_tokens":300,"max_completion_tokens":0}`, requestFields{MaxTokens: 300}, false},
		{"max_tokens not an integer", `{"max_tokens":"300"}`, requestFields{}, false},
		{"max_tokens a fraction", `{"max_tokens":3.5}`, requestFields{}, false},
		{"max_tokens negative", `{"max_tokens":-3}`, requestFields{}, false},
		{"max_tokens huge", `{"max_tokens":99999999999}`, requestFields{MaxTokens: 1<<31 - 1}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseFields([]byte(tc.body))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if err == nil {
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
			}
		})
	}
}

func FuzzParseFields(f *testing.F) {
	for _, s := range []string{`{"model":"m"}`, `{"model":"a","model":"b","cache_salt":"x"}`, `[]`, `{"model":5}`, "{\"model\":\"\xff\"}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := parseFields(b)
		if err != nil && (got.Model != nil || got.CacheSalt != nil) {
			t.Errorf("error %v with fields %+v", err, got)
		}
	})
}

// FuzzFieldsOfDecodedBody: where the tokenizer can decode a body, the fields
// read from its decoded form are exactly what parseFields reads from the
// bytes (values and errors), so decoding once changes no routing.
func FuzzFieldsOfDecodedBody(f *testing.F) {
	for _, s := range []string{
		`{"model":"m"}`, `{"model":"a","model":"b","cache_salt":"x"}`, `[]`, `{"model":5}`,
		"{\"model\":\"\xff\"}", `{"model":null,"cache_salt":null}`, `{"model":"m\u00e9\n","x":[1,{"model":2}]}`,
		`{"max_tokens":300,"max_completion_tokens":7}`, `{"max_tokens":1e3}`, `{"max_tokens":-0}`, `{"max_tokens":99999999999999999999}`,
		`{"Model":"a"}`, `{"cache_salt":{}}`, ` {"model":"m"} `, `{"model":"\ud800"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		dec, err := tokenize.DecodeBody(b)
		if err != nil {
			return // parse falls back to parseFields itself
		}
		want, werr := parseFields(b)
		got, gerr := fieldsOf(dec, b)
		if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
			t.Fatalf("errors differ: parseFields %v, fieldsOf %v", werr, gerr)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("fields differ (-parseFields +fieldsOf):\n%s", diff)
		}
	})
}
