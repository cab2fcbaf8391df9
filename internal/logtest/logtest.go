// Package logtest holds test helpers for log output: a buffer that a logger's
// goroutines and the test can share.
package logtest

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer safe for concurrent use: a logger writes to it
// from any goroutine while the test reads String. The zero value is ready.
type Buffer struct {
	mu sync.Mutex // protects b
	b  bytes.Buffer
}

// Write appends p; it never fails.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
