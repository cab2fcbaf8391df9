package sidecar

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/inferrail/inferrail/internal/kvblock"
	"github.com/inferrail/inferrail/internal/tokenize/simtok"
)

func TestFetchModels(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		body    string
		want    engineModels
		wantErr string
	}{
		{"base, alias and adapters", 200, `{"object":"list","data":[
			{"id":"llama","parent":null},{"id":"llama-alias","parent":null},
			{"id":"sql-lora","parent":"llama"},{"id":"chat-lora","parent":"llama"}]}`,
			engineModels{Base: "llama", IDs: []string{"llama", "llama-alias", "sql-lora", "chat-lora"},
				LoRAs: map[string]bool{"sql-lora": true, "chat-lora": true}}, ""},
		{"no parent field", 200, `{"data":[{"id":"m"}]}`, engineModels{Base: "m", IDs: []string{"m"}, LoRAs: map[string]bool{}}, ""},
		{"only adapters", 200, `{"data":[{"id":"x","parent":"y"}]}`, engineModels{}, "no base model"},
		{"empty", 200, `{"data":[]}`, engineModels{}, "no base model"},
		{"not json", 200, `<html>`, engineModels{}, "list models"},
		{"status", 503, `{}`, engineModels{}, "status 503"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/v1/models" {
					http.NotFound(w, r)
					return
				}
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			u, _ := url.Parse(srv.URL)
			got, err := fetchModels(t.Context(), srv.Client(), u)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("models (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAdvertisedModels(t *testing.T) {
	s := &Sidecar{modelKnown: make(chan struct{})}
	if got := s.advertisedModels(); len(got) != 0 {
		t.Errorf("before anything is known: %q", got)
	}
	s.setModel("base")
	long := strings.Repeat("x", 100)
	s.models.Store(&engineModels{Base: "base", IDs: []string{"base", "alias", long + "1", long + "2", long + "3", long + "4"}})
	got := s.advertisedModels()
	want := []string{"base", "alias", long + "1", long + "2"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("advertised (-want +got):\n%s", diff)
	}
	if s.loraOf("alias") != "" {
		t.Errorf("an alias taken for a LoRA")
	}
}

func TestPromptInspectLoRA(t *testing.T) {
	p := &promptInspector{tok: simTok, model: func() string { return "base" }, blockSize: func() int { return 4 },
		lora: func(m string) string {
			if m == "sql-lora" {
				return m
			}
			return ""
		}}
	ids := simtok.Encode("select the rows from the table", true)
	for _, tt := range []struct{ model, lora string }{{"sql-lora", "sql-lora"}, {"base-alias", ""}} {
		info, ok := p.inspect([]byte(`{"model":"`+tt.model+`","prompt":"select the rows from the table"}`), false)
		want := kvblock.Hashes(nil, kvblock.NewSeed("base", tt.lora, ""), ids, 4)
		if !ok || len(info.hashes) != 1 || !cmp.Equal(want, info.hashes[0]) {
			t.Errorf("model %q: hashes %v, want the chain seeded with lora %q", tt.model, info.hashes, tt.lora)
		}
	}
}
