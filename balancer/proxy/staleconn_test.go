package proxy

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/inferrail/inferrail/internal/staleconn/staleconntest"
)

// TestSendRetriesAClosedKeepAliveConnection: an HTTP/1.1 upstream (a static
// llama-server replica) closes the kept-alive connection on reading the
// second attempt without answering; Send still returns its answer, sent
// again whole on a fresh connection, instead of an error that would count
// against the replica and move the request off its cache.
func TestSendRetriesAClosedKeepAliveConnection(t *testing.T) {
	srv := staleconntest.Start(t, 2)
	p := New(DefaultConfig())
	defer p.Close()
	up := Upstream{Base: mustURL(t, srv.URL())}
	for _, body := range []string{`{"prompt":"one"}`, `{"prompt":"two"}`} {
		in := httptest.NewRequest("POST", "/v1/completions", nil)
		resp, err := p.Send(context.Background(), up, in, []byte(body), nil, nil)
		if err != nil {
			t.Fatalf("send %s: %v", body, err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(got) != body {
			t.Fatalf("answer %q, want %q", got, body)
		}
	}
	want := `1/1 {"prompt":"one"},1/2 {"prompt":"two"},2/1 {"prompt":"two"}`
	if got := strings.Join(srv.Seen(), ","); got != want {
		t.Fatalf("upstream saw %s, want %s", got, want)
	}
}
