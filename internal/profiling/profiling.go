// Package profiling serves the Go runtime's profiles (net/http/pprof) on an
// admin mux, for the balancer's and the sidecar's observability.profiling:
// off by default, since a CPU profile or an execution trace costs the
// process CPU while it runs and the heap profile shows what it holds.
package profiling

import (
	"net/http"
	"net/http/pprof"
)

// Prefix is the path the profiles are served under.
const Prefix = "/debug/pprof/"

// Mount adds Go's profile endpoints to mux under Prefix: the index and the
// named profiles (heap, goroutine, allocs, block, mutex, threadcreate),
// cmdline, profile (CPU, ?seconds=N), symbol and trace. allow, when not nil,
// is asked on every request whether the caller may profile, and answers the
// request itself when not.
func Mount(mux *http.ServeMux, allow func(http.ResponseWriter, *http.Request) bool) {
	guard := func(h http.HandlerFunc) http.HandlerFunc {
		if allow == nil {
			return h
		}
		return func(w http.ResponseWriter, r *http.Request) {
			if allow(w, r) {
				h(w, r)
			}
		}
	}
	mux.HandleFunc("GET "+Prefix, guard(pprof.Index))
	mux.HandleFunc("GET "+Prefix+"cmdline", guard(pprof.Cmdline))
	mux.HandleFunc("GET "+Prefix+"profile", guard(pprof.Profile))
	mux.HandleFunc("GET "+Prefix+"symbol", guard(pprof.Symbol))
	mux.HandleFunc("POST "+Prefix+"symbol", guard(pprof.Symbol))
	mux.HandleFunc("GET "+Prefix+"trace", guard(pprof.Trace))
}
