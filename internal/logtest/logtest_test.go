package logtest

import (
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// TestBufferSharedByGoroutines logs from many goroutines while reading: run
// with -race, a buffer without its lock fails; every line arrives whole.
func TestBufferSharedByGoroutines(t *testing.T) {
	var buf Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 50 {
				log.Info("line", "writer", i)
				_ = buf.String()
			}
		})
	}
	wg.Wait()
	if n := strings.Count(buf.String(), "msg=line writer="); n != 400 {
		t.Errorf("%d whole lines, want 400", n)
	}
}
