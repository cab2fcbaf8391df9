package openai

import (
	"testing"
	"time"
)

// RetryAfter rounds a wait up to whole seconds, and says at least 1.
func TestRetryAfter(t *testing.T) {
	for d, want := range map[time.Duration]string{-time.Second: "1", 0: "1", 100 * time.Millisecond: "1",
		time.Second: "1", 1001 * time.Millisecond: "2", 2300 * time.Millisecond: "3", time.Minute: "60"} {
		if got := RetryAfter(d); got != want {
			t.Errorf("RetryAfter(%v) = %q, want %q", d, got, want)
		}
	}
}
