package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

func TestTokenizeCommand(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		in       string
		wantCode int
		wantText string
	}{
		{"chat", []string{"tokenize", "--model", "builtin:sim", "--chat"}, `{"messages":[{"role":"user","content":"hi"}]}`, 0,
			"<|start|>user\nhi<|end|>\n<|start|>assistant\n"},
		{"raw", []string{"tokenize", "--model", "builtin:sim", "--raw"}, "plain text", 0, "plain text"},
		{"completion", []string{"tokenize", "--model", "builtin:sim", "--completion"}, `{"prompt":"p"}`, 0, "p"},
		{"no mode", []string{"tokenize", "--model", "builtin:sim"}, "", 2, ""},
		{"two modes", []string{"tokenize", "--model", "builtin:sim", "--chat", "--raw"}, "", 2, ""},
		{"no model", []string{"tokenize", "--chat"}, "", 2, ""},
		{"bad request", []string{"tokenize", "--model", "builtin:sim", "--chat"}, `{"messages": 1}`, 1, ""},
		{"missing model dir", []string{"tokenize", "--model", "/nonexistent", "--raw"}, "x", 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tokenizeStdin = strings.NewReader(tt.in)
			var out, errOut bytes.Buffer
			if code := runMain(context.Background(), tt.args, &out, &errOut); code != tt.wantCode {
				t.Fatalf("exit code %d, want %d; stderr:\n%s", code, tt.wantCode, errOut.String())
			}
			if tt.wantCode != 0 {
				return
			}
			var got struct {
				Prompt   string   `json:"prompt"`
				TokenIDs []uint32 `json:"token_ids"`
			}
			if err := json.Unmarshal(out.Bytes(), &got); err != nil {
				t.Fatalf("output is not one JSON object: %v\n%s", err, out.String())
			}
			if got.Prompt != tt.wantText || len(got.TokenIDs) == 0 {
				t.Errorf("got prompt %q with %d ids, want %q and some ids", got.Prompt, len(got.TokenIDs), tt.wantText)
			}
		})
	}
}
