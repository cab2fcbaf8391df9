package openai

import (
	"encoding/json"
	"testing"
)

func TestRewriteModel(t *testing.T) {
	tests := []struct {
		name, in, model, want string
	}{
		{"simple", `{"model":"a","messages":[]}`, "b", `{"model":"b","messages":[]}`},
		{"spaces kept", "{ \"x\" : 1 ,\n \"model\" :  \"long-name\" , \"y\":{\"model\":\"inner\"}}", "m", "{ \"x\" : 1 ,\n \"model\" :  \"m\" , \"y\":{\"model\":\"inner\"}}"},
		{"non-string value", `{"model":null,"n":1}`, "m", `{"model":"m","n":1}`},
		{"absent", `{"n":1}`, "m", `{"model":"m","n":1}`},
		{"absent empty", `{}`, "m", `{"model":"m"}`},
		{"duplicate keys", `{"model":"a","model":"b"}`, "c", `{"model":"c","model":"c"}`},
		{"escaping", `{"model":"a"}`, `q"uote`, `{"model":"q\"uote"}`},
		{"unicode untouched", `{"prompt":"é\u00e9","model":"a"}`, "b", `{"prompt":"é\u00e9","model":"b"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := RewriteModel([]byte(tt.in), tt.model)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("RewriteModel(%s) = %s, want %s", tt.in, got, tt.want)
			}
		})
	}
}

func TestRewriteModelRejects(t *testing.T) {
	for _, in := range []string{``, `[]`, `{"a":`, `{"a":1} x`, `"s"`, `{"a":1}}`} {
		if _, err := RewriteModel([]byte(in), "m"); err == nil {
			t.Errorf("RewriteModel(%q) succeeded, want error", in)
		}
	}
}

func FuzzRewriteModel(f *testing.F) {
	f.Add([]byte(`{"model":"a","messages":[{"role":"user","content":"hi"}]}`), "b")
	f.Add([]byte(`{"x":[1,2,{"model":3}]}`), "")
	f.Fuzz(func(t *testing.T, body []byte, model string) {
		out, err := RewriteModel(body, model)
		if err != nil {
			return
		}
		var m map[string]any
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatalf("output is not a JSON object: %v\n%s", err, out)
		}
		var want string
		if b, _ := json.Marshal(model); json.Unmarshal(b, &want) == nil && m["model"] != want {
			t.Fatalf("model = %v, want %q", m["model"], want)
		}
		// Every other field is unchanged.
		var orig map[string]any
		if json.Unmarshal(body, &orig) == nil {
			for k, v := range orig {
				if k == "model" {
					continue
				}
				a, _ := json.Marshal(v)
				b, _ := json.Marshal(m[k])
				if string(a) != string(b) {
					t.Fatalf("field %q changed: %s -> %s", k, a, b)
				}
			}
		}
	})
}
