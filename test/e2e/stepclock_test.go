package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// skCandidate is a candidate of POST /v1/explain, as far as the step
// clock goes.
type skCandidate struct {
	ID            string   `json:"id"`
	Pending       int      `json:"pending"`
	PrefillTokens int64    `json:"prefill_tokens"`
	StepTokens    int64    `json:"step_tokens"`
	StepAgeMS     *float64 `json:"step_age_ms"`
}

// skExplain returns how the balancer's load model sees replica-0 now,
// from POST /v1/explain (which sends nothing upstream).
func skExplain(t *testing.T, b *btBalancer) skCandidate {
	t.Helper()
	var ex struct {
		Candidates []skCandidate `json:"candidates"`
	}
	if btExplain(t, b, "a question to explain", 4, &ex); len(ex.Candidates) != 1 {
		t.Fatalf("explain: %+v", ex)
	}
	return ex.Candidates[0]
}

// skStream sends a streaming completion through b and reads its answer to
// the end, closing first on its first token; it returns the error, if any.
func skStream(b *btBalancer, prompt string, maxTokens int, first chan<- struct{}) error {
	defer close(first)
	body := fmt.Sprintf(`{"model":"e2e-model","prompt":%q,"max_tokens":%d,"ignore_eos":true,"stream":true}`, prompt, maxTokens)
	resp, err := http.Post(b.url+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %s", resp.Status)
	}
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return fmt.Errorf("stream ended before a token: %w", err)
		}
		if strings.HasPrefix(line, "data: ") && strings.Contains(line, `"text":"`) && !strings.Contains(line, `"text":""`) {
			break
		}
	}
	first <- struct{}{}
	_, err = io.Copy(io.Discard, br)
	return err
}

// TestStepClockFollowsLaterTokens checks, through the real binaries, that a
// stream's later tokens end engine steps on the balancer's step clock: a
// long prompt sent while another stream decodes is placed in the engine step
// under way as soon as a decode token of that stream passes, while the
// simulator is still computing it (docs/routing.md, "The step under way is
// not a queue"). Were only first tokens step ends, the prompt would count as
// queued in full until its own first token. The simulator is slow (2,000
// prompt tokens a second in steps of 512), so the prompt's prefill takes
// about a second and the other stream's tokens come a step apart.
func TestStepClockFollowsLaterTokens(t *testing.T) {
	bin := scBuild(t)
	f := btStartFleet(t, bin, 1, 8000, []string{"bal-step"}, "--linear-tokens-per-second", "2000", "--max-num-batched-tokens", "512")
	sim, bal := f.sims[0], f.bals[0]

	decoding, long := make(chan struct{}, 1), make(chan struct{}, 1)
	errs := make(chan error, 2)
	go func() { errs <- skStream(bal, "a short prompt that starts a long answer", 400, decoding) }()
	if _, ok := <-decoding; !ok {
		t.Fatalf("the decoding stream: %v", <-errs)
	}
	prompt := strings.TrimSpace(strings.Repeat("a long prompt that the slow engine computes over several steps. ", 100))
	go func() { errs <- skStream(bal, prompt, 4, long) }()
	scWait(t, "the engine computing the long prompt beside the decode", func() error {
		if eng := ltSim(t, sim); eng.BeforeFirstToken != 1 || eng.Decoding != 1 {
			return fmt.Errorf("engine state %+v, want one request before its first token and one decoding", eng)
		}
		return nil
	})
	var c skCandidate
	scWait(t, "the long prompt in the step under way", func() error {
		if c = skExplain(t, bal); c.Pending != 1 || c.PrefillTokens <= 0 || c.StepTokens != c.PrefillTokens {
			return fmt.Errorf("replica-0 seen as %+v, want its one pending prompt's tokens all in the step under way", c)
		}
		return nil
	})
	if eng := ltSim(t, sim); eng.BeforeFirstToken != 1 {
		t.Fatalf("the prompt's prefill ended before the check: %+v", eng)
	}
	if c.StepAgeMS == nil || *c.StepAgeMS < 0 || *c.StepAgeMS > 1000 {
		t.Errorf("step under way began %v ms ago, want within the last step of about 260 ms", c.StepAgeMS)
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
