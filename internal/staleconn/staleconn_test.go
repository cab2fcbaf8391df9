package staleconn

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/inferrail/inferrail/internal/staleconn/staleconntest"
)

func newTransport(retries *int) (*Transport, *http.Transport) {
	pooled := &http.Transport{}
	return &Transport{Pooled: pooled, Fresh: &http.Transport{DisableKeepAlives: true}, OnRetry: func() { *retries++ }}, pooled
}

func post(t *testing.T, rt http.RoundTripper, ctx context.Context, url string, body io.Reader) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/completions", body)
	if err != nil {
		t.Fatal(err)
	}
	return rt.RoundTrip(req)
}

func TestRetriesOnAFreshConnection(t *testing.T) {
	srv := staleconntest.Start(t, 2)
	var retries int
	rt, pooled := newTransport(&retries)
	defer pooled.CloseIdleConnections()
	for _, b := range []string{"one", "two"} {
		resp, err := post(t, rt, context.Background(), srv.URL(), strings.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(got) != b {
			t.Fatalf("answer %q, want %q", got, b)
		}
	}
	if got, want := strings.Join(srv.Seen(), ","), "1/1 one,1/2 two,2/1 two"; got != want || retries != 1 {
		t.Fatalf("server saw %s (want %s), %d retries (want 1)", got, want, retries)
	}
}

func TestNoRetry(t *testing.T) {
	t.Run("a fresh connection", func(t *testing.T) {
		srv := staleconntest.Start(t, 1)
		var retries int
		rt, pooled := newTransport(&retries)
		defer pooled.CloseIdleConnections()
		if _, err := post(t, rt, context.Background(), srv.URL(), strings.NewReader("one")); err == nil {
			t.Fatal("no error from a server that closed a new connection")
		}
		if n := len(srv.Seen()); n != 1 || retries != 0 {
			t.Fatalf("server saw %d requests, %d retries; want 1 and 0", n, retries)
		}
	})
	t.Run("a body that cannot be rebuilt", func(t *testing.T) {
		srv := staleconntest.Start(t, 2)
		var retries int
		rt, pooled := newTransport(&retries)
		defer pooled.CloseIdleConnections()
		resp, err := post(t, rt, context.Background(), srv.URL(), strings.NewReader("one"))
		if err != nil {
			t.Fatal(err)
		}
		// Read to EOF: the transport puts the connection back in its pool
		// before the reader sees EOF, so the next request reuses it.
		_, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		// io.MultiReader hides the body's type: no GetBody is set.
		if _, err := post(t, rt, context.Background(), srv.URL(), io.MultiReader(strings.NewReader("two"))); err == nil {
			t.Fatal("no error for a streamed body on a closed connection")
		}
		if n := len(srv.Seen()); n != 2 || retries != 0 {
			t.Fatalf("server saw %d requests, %d retries; want 2 and 0", n, retries)
		}
	})
}
