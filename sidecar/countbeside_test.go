package sidecar

import (
	"bufio"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/inferrail/inferrail/internal/load"
	"github.com/inferrail/inferrail/internal/tokenize/simtok"
)

// gatedTokenizer is simTok held until release is closed: a tokenizer slower
// than the engine. started is closed when the first prompt reaches it.
type gatedTokenizer struct {
	started, release chan struct{}
}

func (g gatedTokenizer) hold() {
	select {
	case <-g.started:
	default:
		close(g.started)
	}
	<-g.release
}

func (g gatedTokenizer) Chat(body []byte) ([]uint32, error) {
	g.hold()
	return simTok.Chat(body)
}

func (g gatedTokenizer) Completion(body []byte) ([][]uint32, error) {
	g.hold()
	return simTok.Completion(body)
}

// headersTransport tells when the engine's response headers reached the
// data path.
type headersTransport struct {
	next http.RoundTripper
	in   chan struct{}
}

func (t headersTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	close(t.in)
	return resp, err
}

// TestProxyForwardsBeforeTokenizing checks that the data path hands a prompt
// to the engine without waiting for its tokenizer, and that what reads the
// count waits for it: the response's load report, sent with headers the
// engine answered before the count was in, still holds the prompt's tokens,
// and the approximate block set gets its blocks. A data path that tokenized
// first never lets the request reach the engine while the tokenizer is held.
func TestProxyForwardsBeforeTokenizing(t *testing.T) {
	arrived, step := make(chan struct{}), make(chan struct{})
	upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK) // at admission, as engines do
		w.(http.Flusher).Flush()
		<-step
		_, _ = w.Write([]byte(`data: {"choices":[{"text":"Hi"}]}` + "\n\ndata: [DONE]\n\n"))
	})
	tok := gatedTokenizer{started: make(chan struct{}), release: make(chan struct{})}
	headersIn := make(chan struct{})
	obs := &recordObserver{}
	p, srv, _ := testProxy(t, upstream, tok, obs, func(p *proxy) {
		pt := p.rp.Transport.(prefillTransport)
		pt.next = headersTransport{next: pt.next, in: headersIn}
		p.rp.Transport = pt
	})
	const prompt = "0123456789abcdefghij"
	tokens := int64(len(simtok.Encode(prompt, true)))

	type answer struct {
		resp *http.Response
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/completions",
			strings.NewReader(`{"model":"m","prompt":"`+prompt+`","stream":true}`))
		req.Header.Set(load.Origin, "balancer-a")
		resp, err := srv.Client().Do(req)
		got <- answer{resp, err}
	}()
	waitFor(t, tok.started, "the tokenizer to get the prompt")
	waitFor(t, arrived, "the request at the engine while the tokenizer is held")
	if diff := cmp.Diff(DataPathCounts{InFlight: 1, Prefilling: 1,
		Origins: []OriginCounts{{Origin: "balancer-a", InFlight: 1, Prefilling: 1}}}, p.counts.Counts()); diff != "" {
		t.Errorf("before the count (-want +got):\n%s", diff)
	}
	waitFor(t, headersIn, "the engine's headers at the data path")
	close(tok.release)

	a := <-got
	if a.err != nil {
		t.Fatal(a.err)
	}
	defer a.resp.Body.Close()
	rep, own, err := load.ParseHeader(a.resp.Header.Get(load.Header))
	if err != nil {
		t.Fatalf("report in the headers: %v", err)
	}
	if rep.Pending != 1 || rep.PrefillTokens != tokens || own.PrefillTokens != tokens {
		t.Errorf("report at the headers %+v, share %+v: want 1 pending with the prompt's %d tokens", rep, own, tokens)
	}
	if c := p.counts.Counts(); c.PromptTokens != tokens || c.WaitingPrefillTokens != tokens {
		t.Errorf("counts at the headers %+v, want the prompt's %d tokens waiting", c, tokens)
	}
	obs.mu.Lock()
	if len(obs.got) != 1 || len(obs.got[0]) != 1 || len(obs.got[0][0]) != int(tokens)/4 {
		t.Errorf("block set got %v, want one prompt of %d blocks", obs.got, tokens/4)
	}
	obs.mu.Unlock()
	close(step)
	br := bufio.NewReader(a.resp.Body)
	for {
		if _, err := br.ReadString('\n'); err != nil {
			break
		}
	}
	if err := waitUntil(func() bool { return cmp.Equal(p.counts.Counts(), DataPathCounts{}) }); err != nil {
		t.Errorf("after the end: %+v", p.counts.Counts())
	}
}
