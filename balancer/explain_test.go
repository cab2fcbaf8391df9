package balancer

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/inferrail/inferrail/internal/openai"
)

// longChat is a chat body whose prompt spans many blocks and names a word
// that must never reach the decision log.
const longChat = `{"model":"m","messages":[{"role":"user","content":"zebracorn ` +
	`the quick brown fox jumps over the lazy dog again and again until the prompt is long enough to fill ` +
	`more than eight blocks of sixteen tokens each so that the overlay remembers more than the prefix blocks ` +
	`that the stale summary fallback assumes for the prefix hash owner of this prompt in the test, and then ` +
	`some more words to be sure: alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi ` +
	`omicron pi rho sigma tau upsilon phi chi psi omega one two three four five six seven eight nine ten"}],"max_tokens":3}`

func explainPost(t *testing.T, admin, query, body string) (int, []byte) {
	t.Helper()
	resp, err := http.Post(admin+"/v1/explain"+query, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func explainOf(t *testing.T, admin, body string) Explanation {
	t.Helper()
	code, b := explainPost(t, admin, "", body)
	if code != http.StatusOK {
		t.Fatalf("explain: %d %s", code, b)
	}
	var ex Explanation
	if err := json.Unmarshal(b, &ex); err != nil {
		t.Fatalf("explain body %s: %v", b, err)
	}
	return ex
}

// TestExplainSendsNothingAndChangesNothing checks POST /v1/explain: it
// answers the tokens, blocks and every candidate's prediction; no replica is
// asked and no count moves; asking twice answers alike (no overlay record);
// the real request then goes where explain said, and its placement shows in
// the next explanation.
func TestExplainSendsNothingAndChangesNothing(t *testing.T) {
	ups := []*upstream{newUpstream(t, okHandler), newUpstream(t, okHandler)}
	b, srv := newTestBalancer(t, testConfig(ups[0].srv.URL, ups[1].srv.URL))
	admin := newAdminServer(t, b)

	ex := explainOf(t, admin.URL, longChat)
	if ex.Route != "chat" || ex.Model != "m" || ex.Policy != "cost_model" {
		t.Errorf("route %q model %q policy %q", ex.Route, ex.Model, ex.Policy)
	}
	if ex.PromptTokens == 0 || len(ex.TokenIDs) != ex.PromptTokens || len(ex.Blocks) != ex.PromptTokens/ex.BlockSize {
		t.Errorf("tokens %d ids %d blocks %d (block size %d)", ex.PromptTokens, len(ex.TokenIDs), len(ex.Blocks), ex.BlockSize)
	}
	if len(ex.Blocks) <= 8 {
		t.Fatalf("the test prompt has %d blocks, want more than prefix_blocks (8)", len(ex.Blocks))
	}
	if len(ex.Candidates) != 2 || ex.Pick == "" || ex.Reason == "" || ex.EstimatedTTFTMS == nil {
		t.Fatalf("explanation %+v", ex)
	}
	for _, c := range ex.Candidates {
		if c.CachedTokens == nil || c.EstimatedTTFTMS == nil || c.QueueWaitMS == nil || c.Score == nil || c.State != "healthy" {
			t.Errorf("candidate %+v lacks a prediction, estimate, wait, score or state", c)
		}
	}
	again := explainOf(t, admin.URL, longChat)
	if again.Pick != ex.Pick || again.CachedTokens != ex.CachedTokens {
		t.Errorf("second explain: pick %s cached %d; first: %s %d (explain changed the state)", again.Pick, again.CachedTokens, ex.Pick, ex.CachedTokens)
	}
	for i, u := range ups {
		if n := len(u.hits); n != 0 {
			t.Errorf("replica r%d got %d requests from explain", i, n)
		}
	}
	for _, rep := range b.fleet.Snapshot().Replicas {
		if f, p := rep.Counters.InFlight.Load(), rep.Counters.Pending.Load(); f != 0 || p != 0 {
			t.Errorf("%s counts %d in flight, %d pending after explain", rep.ID, f, p)
		}
	}

	resp, _ := post(t, srv.URL+"/v1/chat/completions", longChat)
	if got := resp.Header.Get(HeaderReplica); got != ex.Pick {
		t.Errorf("the request went to %s, explain said %s", got, ex.Pick)
	}
	after := explainOf(t, admin.URL, longChat)
	if after.Pick != ex.Pick || after.CachedTokens <= ex.CachedTokens {
		t.Errorf("after the request: pick %s cached %d; before %s %d: the placement should show", after.Pick, after.CachedTokens, ex.Pick, ex.CachedTokens)
	}
}

// TestExplainErrors checks bad input gets an OpenAI error with the right
// status.
func TestExplainErrors(t *testing.T) {
	up := newUpstream(t, okHandler)
	b, _ := newTestBalancer(t, testConfig(up.srv.URL))
	admin := newAdminServer(t, b)
	for _, tc := range []struct {
		name, query, body string
		want              int
	}{
		{"not json", "", "{", 400},
		{"not an object", "", "[1]", 400},
		{"neither messages nor prompt", "", `{"model":"m"}`, 400},
		{"bad route", "?route=embeddings", chatBody, 400},
		{"unknown model", "", `{"model":"zzz","prompt":"x"}`, 404},
		{"completions", "?route=completions", `{"model":"m","prompt":"hello"}`, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := explainPost(t, admin.URL, tc.query, tc.body)
			if code != tc.want {
				t.Fatalf("status %d, want %d: %s", code, tc.want, body)
			}
			if code >= 400 {
				if _, ok := openai.ParseError(body); !ok {
					t.Errorf("error not in OpenAI shape: %s", body)
				}
			}
		})
	}
	resp, err := http.Get(admin.URL + "/v1/explain")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /v1/explain: %d, want 405", resp.StatusCode)
	}
}

// TestDecisionsEndpoint checks GET /debug/decisions: one record per
// decision with the request's id and every candidate, never the prompt, and
// the after cursor.
func TestDecisionsEndpoint(t *testing.T) {
	ups := []*upstream{newUpstream(t, okHandler), newUpstream(t, okHandler)}
	b, srv := newTestBalancer(t, testConfig(ups[0].srv.URL, ups[1].srv.URL))
	admin := newAdminServer(t, b)
	var ids []string
	for range 3 {
		resp, _ := post(t, srv.URL+"/v1/chat/completions", longChat)
		ids = append(ids, resp.Header.Get(HeaderRequestID))
	}
	get := func(q string) (int, []byte) {
		resp, err := http.Get(admin.URL + "/debug/decisions" + q)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, body
	}
	code, body := get("")
	if code != 200 {
		t.Fatalf("GET /debug/decisions: %d %s", code, body)
	}
	if strings.Contains(string(body), "zebracorn") {
		t.Errorf("the decision log holds prompt text: %s", body)
	}
	var dr DecisionsResponse
	if err := json.Unmarshal(body, &dr); err != nil {
		t.Fatal(err)
	}
	if dr.Last != 3 || len(dr.Decisions) != 3 {
		t.Fatalf("last %d, %d decisions, want 3 and 3", dr.Last, len(dr.Decisions))
	}
	for i, d := range dr.Decisions {
		if d.RequestID != ids[i] || d.Attempt != 1 || d.Policy != "cost_model" || d.Mode != "proxy" ||
			d.PromptTokens == 0 || d.PromptBlocks == 0 || d.Winner == "" || len(d.Candidates) != 2 {
			t.Errorf("decision %d = %+v", i, d)
		}
	}
	code, body = get("?after=3")
	if err := json.Unmarshal(body, &dr); err != nil || code != 200 || len(dr.Decisions) != 0 {
		t.Errorf("after=3: %d %s", code, body)
	}
	for _, q := range []string{"?after=x", "?limit=0", "?limit=100000"} {
		if code, body := get(q); code != 400 {
			t.Errorf("%s: %d %s, want 400", q, code, body)
		} else if _, ok := openai.ParseError(body); !ok {
			t.Errorf("%s: not an OpenAI error: %s", q, body)
		}
	}
}
