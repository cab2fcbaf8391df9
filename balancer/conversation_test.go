package balancer

import (
	"fmt"
	"math"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/inferrail/inferrail/internal/load"
)

// systemPrompt is a shared system prompt many blocks long, as an agent's.
const systemPrompt = `You are a careful assistant for a travel agency. Answer in short sentences, quote ` +
	`prices in euros, never invent a timetable, and when a question needs a booking reference ask for it ` +
	`first. The agency sells train and ferry tickets in twelve countries, hotel nights in four hundred towns ` +
	`and guided walks in the old centres of thirty cities; refunds follow the carrier's own rules, which you ` +
	`summarise without promising anything the carrier does not promise itself.`

// chatTurns returns a chat body with systemPrompt and the given
// alternating user and assistant contents.
func chatTurns(turns ...string) string {
	msgs := fmt.Sprintf(`{"role":"system","content":%q}`, systemPrompt)
	for i, c := range turns {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		msgs += fmt.Sprintf(`,{"role":%q,"content":%q}`, role, c)
	}
	return `{"model":"m","messages":[` + msgs + `],"max_tokens":3}`
}

// TestNewConversationStartsWhereMemoryIsFree checks the cost model's rule
// for the first request of a conversation through the client and admin
// HTTP surface, with the KV usage each replica reports in its responses'
// load header (docs/routing.md, "A new conversation starts where memory is
// free"): a conversation that shares only a system prompt with the replica
// holding it starts on the replica whose memory is nearly empty when the
// other's is nearly full, while a later turn of a conversation stays with
// its context on the full one.
func TestNewConversationStartsWhereMemoryIsFree(t *testing.T) {
	var usage [2]atomic.Uint64 // each upstream's reported KV usage, as float64 bits
	reporting := func(i int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			u := math.Float64frombits(usage[i].Load())
			w.Header().Set(load.Header, load.EncodeHeader(load.Report{KVUsage: u}, load.Share{}))
			okHandler(w, r)
		}
	}
	for i := range usage {
		usage[i].Store(math.Float64bits(0.05))
	}
	ups := []*upstream{newUpstream(t, reporting(0)), newUpstream(t, reporting(1))}
	cfg := testConfig(ups[0].srv.URL, ups[1].srv.URL)
	for i := range cfg.Replicas {
		cfg.Replicas[i].KVCapacityBlocks = 1000
	}
	cfg.Gossip.Timings.LoadMaxAge = time.Hour // the reports stay fresh however slow the machine
	b, srv := newTestBalancer(t, cfg)
	admin := newAdminServer(t, b)
	index := map[string]int{"r0": 0, "r1": 1}

	// The first conversation starts somewhere; its replica then fills up.
	resp, _ := post(t, srv.URL+"/v1/chat/completions", chatTurns("Which ferries leave Bari on Sundays?"))
	home := resp.Header.Get(HeaderReplica)
	h, ok := index[home]
	if !ok {
		t.Fatalf("the first request went to %q", home)
	}
	other := "r" + fmt.Sprint(1-h)
	usage[h].Store(math.Float64bits(0.95))
	// Its second turn stays with its context and brings back the report of
	// the full memory; a request sharing nothing brings the other's.
	later := chatTurns("Which ferries leave Bari on Sundays?", "Two, at 8 and at 20.", "And on Mondays?")
	if resp, _ := post(t, srv.URL+"/v1/chat/completions", later); resp.Header.Get(HeaderReplica) != home {
		t.Fatalf("the second turn went to %s, its context is on %s", resp.Header.Get(HeaderReplica), home)
	}
	for try := 0; ; try++ {
		body := fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":"unrelated question number %d about the weather"}],"max_tokens":3}`, try)
		if resp, _ := post(t, srv.URL+"/v1/chat/completions", body); resp.Header.Get(HeaderReplica) == other {
			break
		}
		if try == 20 {
			t.Fatalf("twenty requests sharing nothing all went to %s, whose memory is full", home)
		}
	}

	fresh := chatTurns("Can I bring a bicycle on the night train to Vienna?")
	ex := explainOf(t, admin.URL, fresh)
	if ex.Pick != other || ex.Reason != "hot_prefix_replica" {
		t.Errorf("a new conversation: pick %s (%s), want %s (hot_prefix_replica): %s is at 95%% KV usage, %s at 5%%",
			ex.Pick, ex.Reason, other, home, other)
	}
	if ex.Pick == other && ex.CachedTokens != 0 {
		t.Errorf("a new conversation predicted %d cached tokens on %s, which holds none of it", ex.CachedTokens, other)
	}
	if resp, _ := post(t, srv.URL+"/v1/chat/completions", fresh); resp.Header.Get(HeaderReplica) != ex.Pick {
		t.Errorf("the new conversation went to %s, explain said %s", resp.Header.Get(HeaderReplica), ex.Pick)
	}
	third := chatTurns("Which ferries leave Bari on Sundays?", "Two, at 8 and at 20.", "And on Mondays?", "One, at 9.", "Thanks. Fares?")
	if ex := explainOf(t, admin.URL, third); ex.Pick != home {
		t.Errorf("a later turn: pick %s (%s), want %s where its context is, full or not", ex.Pick, ex.Reason, home)
	}
}
