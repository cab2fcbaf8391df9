package profiling

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Every endpoint answers through a mux, a named profile included; a guard
// that refuses answers with its own response.
func TestMount(t *testing.T) {
	mux := http.NewServeMux()
	Mount(mux, nil)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for _, tc := range []struct{ path, want string }{
		{Prefix, "goroutine"},
		{Prefix + "goroutine?debug=1", "goroutine profile:"},
		{Prefix + "heap?debug=1", "heap profile:"},
		{Prefix + "cmdline", "profiling.test"},
		{Prefix + "symbol", "num_symbols"},
	} {
		resp, err := http.Get(srv.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), tc.want) {
			t.Errorf("GET %s: %d %.80q, want 200 with %q", tc.path, resp.StatusCode, body, tc.want)
		}
	}
	resp, err := http.Get(srv.URL + Prefix + "profile?seconds=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(body) == 0 {
		t.Errorf("CPU profile: %d, %d bytes", resp.StatusCode, len(body))
	}

	guarded := http.NewServeMux()
	Mount(guarded, func(w http.ResponseWriter, r *http.Request) bool {
		if r.Header.Get("X-Allow") == "" {
			http.Error(w, "no", http.StatusForbidden)
			return false
		}
		return true
	})
	for _, allow := range []bool{false, true} {
		req := httptest.NewRequest(http.MethodGet, Prefix+"cmdline", nil)
		if allow {
			req.Header.Set("X-Allow", "1")
		}
		rec := httptest.NewRecorder()
		guarded.ServeHTTP(rec, req)
		if want := map[bool]int{false: http.StatusForbidden, true: http.StatusOK}[allow]; rec.Code != want {
			t.Errorf("guarded, allowed %v: %d, want %d", allow, rec.Code, want)
		}
	}
}
