package tokenize

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Tool modes: what ToolConfig.In holds.
const (
	ModeChat       = "chat"       // an OpenAI chat completions request
	ModeCompletion = "completion" // an OpenAI completions request
	ModeRaw        = "raw"        // plain text, encoded without special tokens
)

// ToolConfig configures RunTool, the `inferrail tokenize` command.
type ToolConfig struct {
	// Model is a model directory or "builtin:sim".
	Model string
	// Mode is ModeChat, ModeCompletion or ModeRaw.
	Mode string
	// ChatTemplate overrides the model's chat template (a file or the text).
	ChatTemplate string
	// MaxInput bounds the bytes read from In. 0 means 64 MiB.
	MaxInput int64
	// In holds the request (or text); Out receives the JSON lines.
	In  io.Reader
	Out io.Writer
}

// Validate reports every invalid field at once.
func (c ToolConfig) Validate() error {
	var errs []error
	if c.Model == "" {
		errs = append(errs, errors.New("model is required (a model directory or builtin:sim)"))
	}
	switch c.Mode {
	case ModeChat, ModeCompletion, ModeRaw:
	default:
		errs = append(errs, fmt.Errorf("mode must be chat, completion or raw, got %q", c.Mode))
	}
	if c.MaxInput < 0 {
		errs = append(errs, fmt.Errorf("max input must be >= 0, got %d", c.MaxInput))
	}
	if c.In == nil || c.Out == nil {
		errs = append(errs, errors.New("input and output are required"))
	}
	return errors.Join(errs...)
}

// RunTool reads one request (or text) from cfg.In and writes
// {"prompt": "<rendered text>", "token_ids": [...]} to cfg.Out, one line per
// prompt (a completions request may hold several).
func RunTool(ctx context.Context, cfg ToolConfig) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if cfg.MaxInput == 0 {
		cfg.MaxInput = 64 << 20
	}
	m, err := Load(cfg.Model, Options{ChatTemplate: cfg.ChatTemplate, CacheBytes: -1})
	if err != nil {
		return err
	}
	in, err := io.ReadAll(io.LimitReader(cfg.In, cfg.MaxInput+1))
	if err != nil {
		return fmt.Errorf("read input: %w", err)
	}
	if int64(len(in)) > cfg.MaxInput {
		return fmt.Errorf("input larger than %d bytes", cfg.MaxInput)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	var prompts []Prompt
	switch cfg.Mode {
	case ModeChat:
		p, err := m.Chat(in)
		if err != nil {
			return err
		}
		prompts = []Prompt{p}
	case ModeCompletion:
		if prompts, err = m.Completion(in); err != nil {
			return err
		}
	case ModeRaw:
		ids, err := m.Raw(string(in))
		if err != nil {
			return err
		}
		prompts = []Prompt{{Text: string(in), TokenIDs: ids}}
	}
	enc := json.NewEncoder(cfg.Out)
	enc.SetEscapeHTML(false)
	for _, p := range prompts {
		if p.TokenIDs == nil {
			p.TokenIDs = []uint32{}
		}
		if err := enc.Encode(p); err != nil {
			return fmt.Errorf("write output: %w", err)
		}
	}
	return nil
}
