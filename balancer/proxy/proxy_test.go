package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/inferrail/inferrail/internal/h2c"
)

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// h2cServer returns a server speaking HTTP/1.1 and h2c.
func h2cServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.Config.Protocols = h2c.ServerProtocols()
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// TestBytesPassUnderAnyChunking is a property test: a request body and a
// response stream cut into random chunks (flushed one by one) arrive byte
// for byte, over HTTP/1.1 and h2c.
func TestBytesPassUnderAnyChunking(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	for trial := range 40 {
		h2c := trial%2 == 1
		reqBody := make([]byte, rng.IntN(200_000))
		for i := range reqBody {
			reqBody[i] = byte(rng.IntN(256))
		}
		respBody := make([]byte, rng.IntN(300_000))
		for i := range respBody {
			respBody[i] = byte(rng.IntN(256))
		}
		var cuts []int
		for n := 0; n < len(respBody); {
			k := 1 + rng.IntN(5000)
			cuts = append(cuts, min(k, len(respBody)-n))
			n += k
		}
		var gotReq []byte
		var proto string
		up := h2cServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			gotReq, _ = io.ReadAll(r.Body)
			proto = r.Proto
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(200)
			off := 0
			for _, k := range cuts {
				_, _ = w.Write(respBody[off : off+k])
				off += k
				w.(http.Flusher).Flush()
			}
		}))
		p := New(DefaultConfig(), nil)
		front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			resp, err := p.Send(r.Context(), Upstream{Base: mustURL(t, up.URL), H2C: h2c}, r, body, nil, nil)
			if err != nil {
				t.Errorf("Send: %v", err)
				w.WriteHeader(599)
				return
			}
			if _, err := Stream(w, resp, nil); err != nil {
				t.Errorf("Stream: %v", err)
			}
		}))
		resp, err := http.Post(front.URL+"/v1/completions", "application/octet-stream", bytes.NewReader(reqBody))
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		front.Close()
		p.Close()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(gotReq, reqBody) {
			t.Errorf("trial %d: request body differs (%d vs %d bytes)", trial, len(gotReq), len(reqBody))
		}
		if !bytes.Equal(got, respBody) {
			t.Errorf("trial %d: response body differs (%d vs %d bytes)", trial, len(got), len(respBody))
		}
		wantProto := "HTTP/1.1"
		if h2c {
			wantProto = "HTTP/2.0"
		}
		if proto != wantProto {
			t.Errorf("trial %d: upstream saw %s, want %s", trial, proto, wantProto)
		}
	}
}

// TestStreamFlushesEachWrite checks that an event reaches the client before
// the upstream sends the next one.
func TestStreamFlushesEachWrite(t *testing.T) {
	next := make(chan struct{})
	up := h2cServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 3 {
			_, _ = io.WriteString(w, "data: "+string(rune('a'+i))+"\n\n")
			w.(http.Flusher).Flush()
			<-next
		}
	}))
	p := New(DefaultConfig(), nil)
	defer p.Close()
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, err := p.Send(r.Context(), Upstream{Base: mustURL(t, up.URL), H2C: true}, r, nil, nil, nil)
		if err != nil {
			t.Errorf("Send: %v", err)
			return
		}
		_, _ = Stream(w, resp, nil)
	}))
	defer front.Close()
	resp, err := http.Get(front.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 64)
	for i := range 3 {
		n, err := io.ReadAtLeast(resp.Body, buf, len("data: a\n\n"))
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if want := "data: " + string(rune('a'+i)) + "\n\n"; string(buf[:n]) != want {
			t.Fatalf("event %d = %q, want %q", i, buf[:n], want)
		}
		next <- struct{}{} // only now may the upstream send the next one
	}
}

func TestHopByHopHeadersRemoved(t *testing.T) {
	var got http.Header
	up := h2cServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		w.Header().Set("Keep-Alive", "timeout=5")
		w.Header().Set("Connection", "X-Private")
		w.Header().Set("X-Private", "no")
		w.Header().Set("X-Engine", "yes")
	}))
	in := httptest.NewRequest("POST", "/v1/chat/completions?x=1", nil)
	in.Header.Set("Connection", "X-Drop")
	in.Header.Set("X-Drop", "1")
	in.Header.Set("Te", "trailers")
	in.Header.Set("Proxy-Authorization", "secret")
	in.Header.Set("Authorization", "Bearer k")
	in.RemoteAddr = "192.0.2.1:1234"
	p := New(DefaultConfig(), nil)
	defer p.Close()
	resp, err := p.Send(context.Background(), Upstream{Base: mustURL(t, up.URL+"/prefix")}, in, []byte("{}"), http.Header{"X-Request-Id": {"id1"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	if _, err := Stream(rec, resp, http.Header{"X-Inferrail-Replica": {"r"}}); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"Connection", "X-Drop", "Te", "Proxy-Authorization"} {
		if got.Get(h) != "" {
			t.Errorf("upstream got hop-by-hop header %s", h)
		}
	}
	want := map[string]string{"Authorization": "Bearer k", "X-Request-Id": "id1", "X-Forwarded-For": "192.0.2.1"}
	for k, v := range want {
		if got.Get(k) != v {
			t.Errorf("upstream header %s = %q, want %q", k, got.Get(k), v)
		}
	}
	h := rec.Result().Header
	if h.Get("Keep-Alive") != "" || h.Get("X-Private") != "" || h.Get("X-Engine") != "yes" || h.Get("X-Inferrail-Replica") != "r" {
		t.Errorf("client headers = %v", h)
	}
}

func TestPathPrefixAndQuery(t *testing.T) {
	var path, query string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path, query = r.URL.Path, r.URL.RawQuery
	}))
	defer up.Close()
	p := New(DefaultConfig(), nil)
	defer p.Close()
	in := httptest.NewRequest("POST", "/v1/completions?a=b", nil)
	resp, err := p.Send(context.Background(), Upstream{Base: mustURL(t, up.URL+"/api/")}, in, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if diff := cmp.Diff([]string{"/api/v1/completions", "a=b"}, []string{path, query}); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestDialErrorAndRetryable(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	p := New(DefaultConfig(), nil)
	defer p.Close()
	in := httptest.NewRequest("POST", "/v1/completions", nil)
	for _, h2c := range []bool{false, true} {
		_, err := p.Send(context.Background(), Upstream{Base: mustURL(t, "http://"+addr), H2C: h2c}, in, []byte("{}"), nil, nil)
		var de *DialError
		if !errors.As(err, &de) {
			t.Fatalf("h2c %v: err = %v, want a DialError", h2c, err)
		}
		if !Retryable(nil, err) {
			t.Error("a dial error is not retryable")
		}
	}
	other := errors.New("reset")
	for _, tc := range []struct {
		code int
		err  error
		want bool
	}{
		{502, nil, true}, {503, nil, true}, {504, nil, true}, {500, nil, false}, {429, nil, false}, {200, nil, false},
		{0, other, false}, {0, ErrFirstByteTimeout, true},
	} {
		var resp *http.Response
		if tc.err == nil {
			resp = &http.Response{StatusCode: tc.code}
		}
		if got := Retryable(resp, tc.err); got != tc.want {
			t.Errorf("Retryable(%d, %v) = %v, want %v", tc.code, tc.err, got, tc.want)
		}
	}
	if !Retryable(nil, other, other) {
		t.Error("a caller's retryable cause is not retryable")
	}
}

func TestFirstByteTimeout(t *testing.T) {
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer up.Close()
	defer close(release)
	cfg := DefaultConfig()
	cfg.FirstByteTimeout = 1 // as short as can be: the timer fires before any answer
	p := New(cfg, nil)
	defer p.Close()
	_, err := p.Send(context.Background(), Upstream{Base: mustURL(t, up.URL)}, httptest.NewRequest("GET", "/", nil), nil, nil, nil)
	if !errors.Is(err, ErrFirstByteTimeout) {
		t.Fatalf("err = %v, want ErrFirstByteTimeout", err)
	}
}

func TestProbe(t *testing.T) {
	up := h2cServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/health") {
			w.WriteHeader(404)
		}
	}))
	p := New(DefaultConfig(), nil)
	defer p.Close()
	if err := p.Probe(context.Background(), Upstream{Base: mustURL(t, up.URL), H2C: true}, "/health"); err != nil {
		t.Errorf("healthy: %v", err)
	}
	if err := p.Probe(context.Background(), Upstream{Base: mustURL(t, up.URL)}, "/nope"); err == nil {
		t.Error("404 probe passed")
	}
}

// A 102 Processing from the upstream (a sidecar whose engine runs the
// request) reaches accepted, once, before the response, over HTTP/1.1 and
// h2c, and the response still arrives. (That the first-byte timeout then no
// longer applies is shown through the real binaries, with an engine slower
// than the timeout: TestAcceptedWorkIsFinished in test/e2e.)
func TestProcessingReachesAccepted(t *testing.T) {
	for _, h2c := range []bool{false, true} {
		t.Run(fmt.Sprintf("h2c=%v", h2c), func(t *testing.T) {
			release := make(chan struct{})
			handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusProcessing)
				<-release
				_, _ = io.WriteString(w, "done")
			})
			var base string
			if h2c {
				base = h2cServer(t, handler).URL
			} else {
				srv := httptest.NewServer(handler)
				t.Cleanup(srv.Close)
				base = srv.URL
			}
			p := New(DefaultConfig(), nil)
			defer p.Close()
			accepted := make(chan struct{}, 2)
			errc := make(chan error, 1)
			go func() {
				resp, err := p.Send(context.Background(), Upstream{Base: mustURL(t, base), H2C: h2c},
					httptest.NewRequest("POST", "/v1/completions", nil), []byte("{}"), nil, func() { accepted <- struct{}{} })
				if err == nil {
					var b []byte
					b, err = io.ReadAll(resp.Body)
					resp.Body.Close()
					if err == nil && string(b) != "done" {
						err = fmt.Errorf("body %q", b)
					}
				}
				errc <- err
			}()
			<-accepted // before the response: the handler is still waiting
			close(release)
			if err := <-errc; err != nil {
				t.Fatalf("accepted request failed: %v", err)
			}
			if len(accepted) != 0 {
				t.Errorf("accepted called more than once")
			}
		})
	}
}

func TestUpstreamPath(t *testing.T) {
	tests := []struct {
		name, base, prefix, in, want string
	}{
		{"plain", "http://h", "", "/v1/chat/completions", "/v1/chat/completions"},
		{"base path prefixes", "http://h/openai", "", "/v1/models", "/openai/v1/models"},
		{"path_prefix replaces /v1", "http://h", "/openai/v1", "/v1/chat/completions", "/openai/v1/chat/completions"},
		{"gemini root", "http://h", "/v1beta/openai/", "/v1/chat/completions", "/v1beta/openai/chat/completions"},
		{"exactly /v1", "http://h", "/x", "/v1", "/x"},
		{"/v10 is not /v1", "http://h", "/x", "/v10/a", "/v10/a"},
		{"outside /v1 kept", "http://h", "/x", "/health", "/health"},
		{"both", "http://h/base", "/openai/v1", "/v1/models", "/base/openai/v1/models"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u, _ := url.Parse(tc.base)
			if got := (Upstream{Base: u, PathPrefix: tc.prefix}).path(tc.in); got != tc.want {
				t.Errorf("path(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
