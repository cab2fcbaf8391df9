package gossip

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/inferrail/inferrail/gossip/summary"
	"github.com/inferrail/inferrail/internal/load"
)

// TestHandlerAndFetch serves a balancer's view over HTTP and reads it back
// with Fetch, as `inferrail members` does.
func TestHandlerAndFetch(t *testing.T) {
	bal := socketNode(t, "bal", RoleBalancer, nil, "")
	// The seed is a DNS name, resolved on each join attempt.
	side := socketNode(t, "side", RoleSidecar, nil, "", strings.Replace(bal.Addr(), "127.0.0.1", "localhost", 1))
	if err := side.SetMeta(Meta{Models: []string{"llama"}, Engine: "vllm", BlockSize: 16}); err != nil {
		t.Fatal(err)
	}
	side.SetLoad(load.Report{Running: 3, Waiting: 1, KVUsage: 0.25})
	b, err := summary.NewBuilder(summary.DefaultConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	b.Add(42, summary.MediumGPU)
	side.SetSummarySource(b)
	if !waitFor(t, 10*time.Second, func() bool {
		m := bal.Peers().View().Member("side")
		if m == nil || len(m.Meta.Models) == 0 {
			return false
		}
		_, loadOK, _ := m.Load(time.Now())
		_, sumOK := m.Summary(time.Now())
		return loadOK && sumOK
	}) {
		t.Fatal("balancer never had the sidecar's metadata, load and summary")
	}
	srv := httptest.NewServer(bal.Handler())
	defer srv.Close()

	view, err := Fetch(context.Background(), srv.Client(), strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	if view.Members.Self != "bal" || len(view.Members.Members) != 2 {
		t.Fatalf("members = %+v", view.Members)
	}
	var st *MemberState
	for i := range view.State.Members {
		if view.State.Members[i].Name == "side" {
			st = &view.State.Members[i]
		}
	}
	if st == nil || st.Load == nil || st.Load.Running != 3 || st.Summary == nil || st.Summary.Blocks["gpu"] != 1 || st.Summary.Stale {
		t.Fatalf("state of side = %+v", st)
	}
	var out bytes.Buffer
	if err := view.WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"bal *", "balancer", "side", "sidecar", "alive", "llama", "3/1/25%", "gpu:1", "KiB"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}

	// The sidecar's own view shows the load and summary it publishes.
	ssrv := httptest.NewServer(side.Handler())
	defer ssrv.Close()
	sview, err := Fetch(context.Background(), ssrv.Client(), ssrv.URL)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range sview.State.Members {
		if m.Name != "side" {
			continue
		}
		if m.Load == nil || m.Load.Running != 3 || m.Summary == nil || m.Summary.Blocks["gpu"] != 1 || m.Summary.Bytes == 0 {
			t.Errorf("sidecar's own row = %+v", m)
		}
	}
	raw, err := srv.Client().Get(srv.URL + MembersPath)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(raw.Body)
	raw.Body.Close()
	if !strings.Contains(string(body), `"role": "sidecar"`) {
		t.Errorf("members JSON does not name roles:\n%s", body)
	}

	// Only GET (and HEAD) are served; other paths 404.
	resp, err := srv.Client().Post(srv.URL+MembersPath, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST %s = %d, want 405", MembersPath, resp.StatusCode)
	}
	if _, err := Fetch(context.Background(), srv.Client(), srv.URL+"/nope"); err == nil {
		t.Error("Fetch from a wrong base succeeded")
	}
}
