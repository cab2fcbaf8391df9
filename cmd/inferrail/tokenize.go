package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/inferrail/inferrail/internal/tokenize"
)

func init() {
	register(command{name: "tokenize", summary: "render and tokenize a request as the engine would", run: runTokenize})
}

// tokenizeStdin is where `inferrail tokenize` reads its input (tests
// replace it).
var tokenizeStdin io.Reader = os.Stdin

func runTokenize(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("tokenize", "--model DIR (--chat | --completion | --raw) < input", stderr)
	model := fs.String("model", "", "model directory (tokenizer.json, tokenizer_config.json) or builtin:sim")
	chat := fs.Bool("chat", false, "input is an OpenAI chat completions request")
	completion := fs.Bool("completion", false, "input is an OpenAI completions request")
	raw := fs.Bool("raw", false, "input is plain text, encoded without special tokens")
	tmpl := fs.String("chat-template", "", "chat template file or text, overriding the model's")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	mode, n := "", 0
	for _, f := range []struct {
		set  bool
		mode string
	}{{*chat, tokenize.ModeChat}, {*completion, tokenize.ModeCompletion}, {*raw, tokenize.ModeRaw}} {
		if f.set {
			mode, n = f.mode, n+1
		}
	}
	if n != 1 || *model == "" {
		fmt.Fprintln(stderr, "tokenize: give --model and exactly one of --chat, --completion, --raw")
		fs.Usage()
		return errUsage
	}
	return tokenize.RunTool(ctx, tokenize.ToolConfig{
		Model: *model, Mode: mode, ChatTemplate: *tmpl, In: tokenizeStdin, Out: stdout,
	})
}
