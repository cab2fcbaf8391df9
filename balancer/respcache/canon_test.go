package respcache

import (
	"bytes"
	"testing"
)

func TestCanonicalEquivalentBodies(t *testing.T) {
	tests := []struct {
		name string
		a, b string
	}{
		{"key order and whitespace", `{"model":"m","prompt":"hi","temperature":0}`, "{ \"temperature\" : 0,\n \"prompt\":\"hi\", \"model\":\"m\" }"},
		{"number forms", `{"model":"m","temperature":0,"max_tokens":16}`, `{"model":"m","temperature":0.0,"max_tokens":1.6e1}`},
		{"negative zero", `{"model":"m","temperature":-0}`, `{"model":"m","temperature":0}`},
		{"defaults", `{"model":"m","stream":false,"n":1,"top_p":1,"presence_penalty":0}`, `{"model":"m"}`},
		{"nulls", `{"model":"m","seed":null,"stop":null}`, `{"model":"m"}`},
		{"dropped fields", `{"model":"m","user":"u1","request_id":"r","metadata":{"a":"b"}}`, `{"model":"m"}`},
		{"one text part", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`, `{"model":"m","messages":[{"role":"user","content":"hi","name":null}]}`},
		{"nested objects", `{"model":"m","stream_options":{"include_usage":true,"a":1}}`, `{"stream_options":{"a":1.0,"include_usage":true},"model":"m"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ca, err := Canonical([]byte(tt.a))
			if err != nil {
				t.Fatal(err)
			}
			cb, err := Canonical([]byte(tt.b))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(ca, cb) {
				t.Errorf("canonical forms differ:\n%s\n%s", ca, cb)
			}
		})
	}
}

func TestCanonicalDistinctBodies(t *testing.T) {
	tests := []struct {
		name string
		a, b string
	}{
		{"prompt", `{"model":"m","prompt":"hi"}`, `{"model":"m","prompt":"hi "}`},
		{"max_tokens", `{"model":"m","max_tokens":16}`, `{"model":"m","max_tokens":17}`},
		{"stream", `{"model":"m","stream":true}`, `{"model":"m"}`},
		{"two text parts", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]}`, `{"model":"m","messages":[{"role":"user","content":"a\nb"}]}`},
		{"big seeds", `{"model":"m","seed":12345678901234567890}`, `{"model":"m","seed":12345678901234567891}`},
		{"temperature", `{"model":"m","temperature":0}`, `{"model":"m","temperature":0.0001}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ca, _ := Canonical([]byte(tt.a))
			cb, _ := Canonical([]byte(tt.b))
			if bytes.Equal(ca, cb) {
				t.Errorf("canonical forms are equal: %s", ca)
			}
		})
	}
}

func TestCanonicalRejects(t *testing.T) {
	for _, b := range []string{``, `[]`, `"x"`, `{"a":1} {"b":2}`, `{"a":`, `null`} {
		if c, err := Canonical([]byte(b)); err == nil {
			t.Errorf("Canonical(%q) = %s, want an error", b, c)
		}
	}
}

func TestParseRequestScopesAndQuestions(t *testing.T) {
	body := []byte(`{"model":"m","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"what is the capital of France?"}],"temperature":0}`)
	a, err := ParseRequest(KindChat, "key:a", "m", body)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := ParseRequest(KindChat, "key:b", "m", body)
	if a.Key == b.Key || a.Partition == b.Partition {
		t.Error("two tenants share a key or a partition")
	}
	o, _ := ParseRequest(KindChat, "key:a", "other", body)
	if a.Key == o.Key {
		t.Error("two models share a key")
	}
	if !a.Deterministic || a.Stream || a.Question != "what is the capital of France?" {
		t.Errorf("parsed %+v", a)
	}
	para, _ := ParseRequest(KindChat, "key:a", "m", []byte(`{"model":"m","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"capital of France?"}],"temperature":0}`))
	if para.Partition != a.Partition || para.Key == a.Key {
		t.Error("a paraphrased question should share the partition, not the key")
	}
	sys, _ := ParseRequest(KindChat, "key:a", "m", []byte(`{"model":"m","messages":[{"role":"system","content":"be long"},{"role":"user","content":"what is the capital of France?"}],"temperature":0}`))
	if sys.Partition == a.Partition {
		t.Error("another system prompt shares the partition")
	}
	s, _ := ParseRequest(KindCompletions, "", "m", []byte(`{"model":"m","prompt":"hi","seed":3,"stream":true}`))
	if !s.Deterministic || !s.Stream || s.Question != "hi" {
		t.Errorf("parsed %+v", s)
	}
	n, _ := ParseRequest(KindCompletions, "", "m", []byte(`{"model":"m","prompt":[1,2,3],"temperature":0.7}`))
	if n.Deterministic || n.Question != "" || n.Partition != "" {
		t.Errorf("parsed %+v", n)
	}
}

// FuzzCanonical checks that the canonicalizer never panics, that its
// output is a fixed point, and that ParseRequest agrees on bodies that
// canonicalize alike.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","prompt":"hi","temperature":0}`,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"seed":1e3}`,
		`{"a":[1,2.50,{"b":null}],"n":1,"stream":false}`,
		`{"x":-0.0,"y":1e400,"z":123456789012345678901234567890}`,
		`{}`, `[]`, `{"a":"\u00e9\ud83d\ude00"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Canonical(b)
		if err != nil {
			return
		}
		c2, err := Canonical(c)
		if err != nil {
			t.Fatalf("canonical form %s does not parse: %v", c, err)
		}
		if !bytes.Equal(c, c2) {
			t.Fatalf("not a fixed point:\n%s\n%s", c, c2)
		}
		r1, err1 := ParseRequest(KindChat, "s", "m", b)
		r2, err2 := ParseRequest(KindChat, "s", "m", c)
		if (err1 == nil) != (err2 == nil) || r1.Key != r2.Key || r1.Partition != r2.Partition || r1.Question != r2.Question {
			t.Fatalf("ParseRequest differs on a body and its canonical form: %+v %v / %+v %v", r1, err1, r2, err2)
		}
	})
}
