package enginesim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/inferrail/inferrail/internal/openai"
)

// debugPrefix starts the debug routes, which faults never touch.
const debugPrefix = "/inferrail/debug/"

// Fault kinds.
const (
	// FaultRefuse closes the listener (and open connections) for Duration,
	// then listens again on the same address.
	FaultRefuse = "refuse"
	// FaultClose closes the connection before answering.
	FaultClose = "close"
	// FaultHang never answers; the request ends when the client gives up.
	FaultHang = "hang"
	// FaultDelay adds Delay before answering.
	FaultDelay = "delay"
	// FaultStatus answers with Status and vLLM's error body.
	FaultStatus = "status"
	// FaultRestart restarts every engine with an empty cache and every
	// KV-event publisher from sequence number 0, at once.
	FaultRestart = "restart"
	// FaultGarbage answers 200 with a body that is neither JSON nor an
	// event stream: what a broken engine or a confused proxy might send.
	FaultGarbage = "garbage"
	// FaultKVGap numbers the next Count KV-event batches of every rank (at
	// least one) but does not send them live: they stay in the replay ring,
	// and a subscriber sees a gap in the sequence, as after batches dropped
	// at the PUB socket's high-water mark. It acts at once.
	FaultKVGap = "kv_gap"
)

// garbageBody is what a garbage fault answers.
var garbageBody = []byte("\x00\xff{\"choices\": [garbage\r\ndata: {not json\n\n\xfe\xfe")

// FaultSpec is one fault to inject, in JSON as taken by POST
// /inferrail/debug/faults and --faults:
//
//	{"kind": "status", "status": 503, "count": 3}
//	{"kind": "delay", "delay": "200ms", "duration": "10s", "path": "/v1/"}
//	{"kind": "refuse", "duration": "2s"}
//
// A fault lasts for the next Count matching requests or for Duration (both:
// whichever ends first; neither: one request). refuse and restart act at once.
type FaultSpec struct {
	Kind string
	// Count is how many requests the fault applies to (0: unlimited within Duration).
	Count int
	// Duration is how long the fault lasts (0: until Count requests).
	Duration time.Duration
	// Delay is the added latency of a delay fault.
	Delay time.Duration
	// Status is the HTTP status of a status fault.
	Status int
	// Message is the error message of a status fault (default: the HTTP phrase).
	Message string
	// Path limits the fault to request paths with this prefix ("" for all).
	Path string
}

type faultSpecJSON struct {
	Kind     string `json:"kind"`
	Count    int    `json:"count,omitempty"`
	Duration string `json:"duration,omitempty"`
	Delay    string `json:"delay,omitempty"`
	Status   int    `json:"status,omitempty"`
	Message  string `json:"message,omitempty"`
	Path     string `json:"path,omitempty"`
}

// MarshalJSON encodes durations as Go duration strings.
func (f FaultSpec) MarshalJSON() ([]byte, error) {
	j := faultSpecJSON{Kind: f.Kind, Count: f.Count, Status: f.Status, Message: f.Message, Path: f.Path}
	if f.Duration != 0 {
		j.Duration = f.Duration.String()
	}
	if f.Delay != 0 {
		j.Delay = f.Delay.String()
	}
	return json.Marshal(j)
}

// UnmarshalJSON decodes a fault; unknown keys are errors.
func (f *FaultSpec) UnmarshalJSON(b []byte) error {
	var j faultSpecJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return fmt.Errorf("fault: %w", err)
	}
	*f = FaultSpec{Kind: j.Kind, Count: j.Count, Status: j.Status, Message: j.Message, Path: j.Path}
	var err error
	if j.Duration != "" {
		if f.Duration, err = time.ParseDuration(j.Duration); err != nil {
			return fmt.Errorf("fault: duration: %w", err)
		}
	}
	if j.Delay != "" {
		if f.Delay, err = time.ParseDuration(j.Delay); err != nil {
			return fmt.Errorf("fault: delay: %w", err)
		}
	}
	return nil
}

// ParseFaults decodes a JSON array of faults (or a single fault).
func ParseFaults(text string) ([]FaultSpec, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return nil, nil
	}
	if strings.HasPrefix(text, "{") {
		text = "[" + text + "]"
	}
	var out []FaultSpec
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		return nil, err
	}
	for i, f := range out {
		if err := f.validate(); err != nil {
			return nil, fmt.Errorf("fault %d: %w", i, err)
		}
	}
	return out, nil
}

func (f FaultSpec) validate() error {
	var errs []error
	switch f.Kind {
	case FaultRefuse:
		if f.Duration <= 0 {
			errs = append(errs, fmt.Errorf("refuse needs a duration > 0, got %s", f.Duration))
		}
	case FaultClose, FaultHang, FaultRestart, FaultGarbage, FaultKVGap:
	case FaultDelay:
		if f.Delay <= 0 {
			errs = append(errs, fmt.Errorf("delay needs a delay > 0, got %s", f.Delay))
		}
	case FaultStatus:
		if f.Status < 100 || f.Status > 599 {
			errs = append(errs, fmt.Errorf("status must be in [100, 599], got %d", f.Status))
		}
	default:
		errs = append(errs, fmt.Errorf("kind must be one of refuse, close, hang, delay, status, restart, garbage, kv_gap; got %q", f.Kind))
	}
	if f.Count < 0 {
		errs = append(errs, fmt.Errorf("count must be >= 0, got %d", f.Count))
	}
	if f.Duration < 0 {
		errs = append(errs, fmt.Errorf("duration must be >= 0, got %s", f.Duration))
	}
	return errors.Join(errs...)
}

// activeFault is a fault in force.
type activeFault struct {
	spec      FaultSpec
	remaining int       // requests left; -1 for unlimited
	until     time.Time // zero for no deadline
}

// faultSet holds the faults in force and applies them to requests.
type faultSet struct {
	fe *frontEnd

	mu     sync.Mutex // protects active
	active []*activeFault
}

func newFaultSet(fe *frontEnd) *faultSet { return &faultSet{fe: fe} }

// add puts f in force (refuse and restart act at once). keep is the
// connection a refuse fault leaves open (nil: close them all).
func (fs *faultSet) add(f FaultSpec, keep net.Conn) {
	switch f.Kind {
	case FaultRefuse:
		fs.fe.refuse(f.Duration, keep)
		return
	case FaultRestart:
		fs.fe.restartAll()
		return
	case FaultKVGap:
		fs.fe.gapEvents(max(f.Count, 1))
		return
	}
	a := &activeFault{spec: f, remaining: f.Count}
	if f.Count == 0 {
		a.remaining = -1
		if f.Duration == 0 {
			a.remaining = 1
		}
	}
	if f.Duration > 0 {
		a.until = time.Now().Add(f.Duration)
	}
	fs.mu.Lock()
	fs.active = append(fs.active, a)
	fs.mu.Unlock()
	fs.fe.log.Warn("fault injected", "kind", f.Kind, "count", f.Count, "duration", f.Duration, "path", f.Path)
}

// take returns the first fault in force for path, consuming one use.
func (fs *faultSet) take(path string) (FaultSpec, bool) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	now := time.Now()
	kept := fs.active[:0]
	var got *activeFault
	for _, a := range fs.active {
		if !a.until.IsZero() && !now.Before(a.until) {
			continue // expired
		}
		if got == nil && strings.HasPrefix(path, a.spec.Path) {
			got = a
			if a.remaining > 0 {
				a.remaining--
			}
		}
		if a.remaining != 0 {
			kept = append(kept, a)
		}
	}
	for i := len(kept); i < len(fs.active); i++ {
		fs.active[i] = nil
	}
	fs.active = kept
	if got == nil {
		return FaultSpec{}, false
	}
	return got.spec, true
}

// apply applies the fault in force, if any, and reports whether the request
// should still be served.
func (fs *faultSet) apply(w http.ResponseWriter, r *http.Request) bool {
	f, ok := fs.take(r.URL.Path)
	if !ok {
		return true
	}
	switch f.Kind {
	case FaultClose:
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			_ = conn.Close()
			return false
		}
		panic(http.ErrAbortHandler) // HTTP/2: reset the stream
	case FaultHang:
		// Read the body first: only then does net/http watch the connection
		// and cancel the request when the client goes away.
		_, _ = io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, fs.fe.cfg.MaxBodyBytes))
		<-r.Context().Done()
		return false
	case FaultDelay:
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, fs.fe.cfg.MaxBodyBytes))
		if err != nil {
			return false
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		t := time.NewTimer(f.Delay)
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-r.Context().Done():
			return false
		}
	case FaultStatus:
		openai.StatusError(f.Status, f.Message).Write(w)
		return false
	case FaultGarbage:
		_, _ = io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, fs.fe.cfg.MaxBodyBytes))
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(garbageBody)
		return false
	}
	return true
}

// handleList serves GET /inferrail/debug/faults.
func (fs *faultSet) handleList(w http.ResponseWriter, _ *http.Request) {
	fs.mu.Lock()
	out := make([]FaultSpec, 0, len(fs.active))
	for _, a := range fs.active {
		out = append(out, a.spec)
	}
	fs.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

// handleAdd serves POST /inferrail/debug/faults (one fault or an array).
func (fs *faultSet) handleAdd(w http.ResponseWriter, r *http.Request) {
	body, e := fs.fe.readBody(w, r)
	if e != nil {
		e.Write(w)
		return
	}
	faults, err := ParseFaults(string(body))
	if err != nil {
		openai.BadRequest("", "%v", err).Write(w)
		return
	}
	// Every fault is in force before the answer is sent, so a client that
	// reads the answer can rely on it. A refuse fault leaves this request's
	// connection open until the answer is written, then closes it.
	conn := requestConn(r)
	for _, f := range faults {
		if f.Kind == FaultRefuse {
			w.Header().Set("Connection", "close")
		}
		fs.add(f, conn)
	}
	writeJSON(w, http.StatusOK, map[string]int{"added": len(faults)})
}

// handleClear serves DELETE /inferrail/debug/faults.
func (fs *faultSet) handleClear(w http.ResponseWriter, _ *http.Request) {
	fs.mu.Lock()
	n := len(fs.active)
	fs.active = nil
	fs.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]int{"cleared": n})
}
