package llamacpp

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseSlotsShapes(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		want []Slot
	}{
		{"idle slot before its first request", `[{"id":0,"n_ctx":4096,"speculative":false,"is_processing":false}]`,
			[]Slot{{ID: 0, NCtx: 4096}}},
		{"busy slot", `[{"id":1,"n_ctx":8192,"is_processing":true,"id_task":7,"n_prompt_tokens":120,
			"next_token":[{"has_next_token":true,"n_remain":90,"n_decoded":10}]}]`,
			[]Slot{{ID: 1, NCtx: 8192, Processing: true, PromptTokens: 120, Decoded: 10}}},
		{"older numeric state", `[{"id":0,"n_ctx":512,"state":1},{"id":1,"n_ctx":512,"state":0}]`,
			[]Slot{{ID: 0, NCtx: 512, Processing: true}, {ID: 1, NCtx: 512}}},
		{"negative counts are clamped", `[{"id":0,"n_ctx":512,"is_processing":true,"n_prompt_tokens":-5,"next_token":[{"n_decoded":-1}]}]`,
			[]Slot{{ID: 0, NCtx: 512, Processing: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseSlots(strings.NewReader(tc.body), 0)
			if err != nil {
				t.Fatalf("ParseSlots: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseSlots mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseSlotsRejects(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"not JSON", `<html>`, "parse /slots"},
		{"an object", `{"error":{"code":501,"message":"This server does not support slots endpoint."}}`, "parse /slots"},
		{"empty", `[]`, "no slot"},
		{"no n_ctx", `[{"id":0,"is_processing":false}]`, "n_ctx"},
		{"zero n_ctx", `[{"id":0,"n_ctx":0,"is_processing":false}]`, "n_ctx"},
		{"no id", `[{"n_ctx":10,"is_processing":false}]`, "id"},
		{"no state", `[{"id":0,"n_ctx":10}]`, "is_processing"},
		{"wrong type", `[{"id":"zero","n_ctx":10,"is_processing":false}]`, "parse /slots[0]"},
		{"too many", "[" + strings.Repeat(`{"id":0,"n_ctx":1,"state":0},`, MaxSlots) + `{"id":0,"n_ctx":1,"state":0}]`, "more than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSlots(strings.NewReader(tc.body), 0)
			if err == nil || !errors.Is(err, ErrUnreadable) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ParseSlots(%.40q) = %v, want an ErrUnreadable naming %q", tc.body, err, tc.want)
			}
		})
	}
	if _, err := ParseSlots(strings.NewReader(`[{"id":0,"n_ctx":512,"state":0}]`), 8); err == nil || !strings.Contains(err.Error(), "more than 8 bytes") {
		t.Fatalf("over the byte limit: %v", err)
	}
}

func TestParsePropsRejects(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"not JSON", `nope`, "parse /props"},
		{"no total_slots", `{"default_generation_settings":{"n_ctx":10}}`, "total_slots"},
		{"zero slots", `{"total_slots":0,"default_generation_settings":{"n_ctx":10}}`, "total_slots"},
		{"no n_ctx", `{"total_slots":2,"default_generation_settings":{}}`, "n_ctx"},
		{"negative n_ctx", `{"total_slots":2,"default_generation_settings":{"n_ctx":-1}}`, "n_ctx"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseProps(strings.NewReader(tc.body), 0)
			if err == nil || !errors.Is(err, ErrUnreadable) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ParseProps(%q) = %v, want an ErrUnreadable naming %q", tc.body, err, tc.want)
			}
		})
	}
}

func TestCapacityAndUsage(t *testing.T) {
	props := Props{TotalSlots: 4, SlotContext: 1000}
	if got := CapacityTokens(props, nil); got != 8000 {
		t.Errorf("CapacityTokens from props = %d, want 2 x 4 x 1000", got)
	}
	slots := []Slot{
		{ID: 0, NCtx: 1000, Processing: true, PromptTokens: 300, Decoded: 100},
		{ID: 1, NCtx: 1000, Processing: true, PromptTokens: 990, Decoded: 50}, // capped at its context
		{ID: 2, NCtx: 1000, PromptTokens: 800},                                // idle: kept for reuse, not used
		{ID: 3, NCtx: 1000},
	}
	if got := CapacityTokens(props, slots); got != 8000 {
		t.Errorf("CapacityTokens from slots = %d, want 8000", got)
	}
	if got := Usage(slots); got != 0.35 {
		t.Errorf("Usage = %v, want (400+1000)/4000", got)
	}
	if got := Processing(slots); got != 2 {
		t.Errorf("Processing = %d, want 2", got)
	}
	if got := Usage(nil); got != 0 {
		t.Errorf("Usage(nil) = %v", got)
	}
}
