package balancer

import (
	"runtime"
	"testing"
)

// waitFor yields until cond holds; the test's own timeout is the hang guard.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for !cond() {
		if t.Context().Err() != nil {
			t.Fatal("condition never held")
		}
		runtime.Gosched()
	}
}
