package h2c

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestServerSpeaksBothClientOnlyH2C serves ServerProtocols and asks it once
// over HTTP/1.1 and once with a ClientProtocols transport, checking the
// protocol each request arrived with.
func TestServerSpeaksBothClientOnlyH2C(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(r.Proto))
	}))
	srv.Config.Protocols = ServerProtocols()
	srv.Start()
	defer srv.Close()
	h2 := &http.Client{Transport: &http.Transport{Protocols: ClientProtocols()}}
	for _, tc := range []struct {
		name   string
		client *http.Client
		want   string
	}{
		{"http1", http.DefaultClient, "HTTP/1.1"},
		{"h2c", h2, "HTTP/2.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := tc.client.Post(srv.URL, "text/plain", strings.NewReader("x"))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want || resp.Proto != tc.want {
				t.Errorf("server saw %q, client %q, want %q", b, resp.Proto, tc.want)
			}
		})
	}
}
