package balancer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"

	"github.com/inferrail/inferrail/internal/openai"
)

// ExplainPath is the admin endpoint of POST /v1/explain.
const ExplainPath = "/v1/explain"

// FetchExplanation posts body to the explain endpoint of the balancer whose
// admin address is addr (host:port or URL), as route (chat, completions or
// "" to tell by the body), and returns the raw answer and its decoding. An
// error answer comes back as an error carrying the server's message.
func FetchExplanation(ctx context.Context, hc *http.Client, addr, route string, body []byte) ([]byte, *Explanation, error) {
	base := addr
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	u := strings.TrimRight(base, "/") + ExplainPath
	if route != "" {
		u += "?route=" + url.QueryEscape(route)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return nil, nil, fmt.Errorf("post %s: %w", u, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("post %s: %w", u, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		if e, ok := openai.ParseError(raw); ok {
			return raw, nil, fmt.Errorf("%s: %s", resp.Status, e.Message)
		}
		return raw, nil, fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(raw[:min(len(raw), 512)])))
	}
	var ex Explanation
	if err := json.Unmarshal(raw, &ex); err != nil {
		return raw, nil, fmt.Errorf("decode the explanation: %w", err)
	}
	return raw, &ex, nil
}

// WriteTable prints the explanation for people: the request, the pick and a
// table of every candidate.
func (ex *Explanation) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "model %s  policy %s  route %s\n", ex.Model, ex.Policy, ex.Route)
	if ex.Unpredicted != "" {
		fmt.Fprintf(w, "prompt not tokenized (%s): routed without a cache prediction\n", ex.Unpredicted)
	} else {
		fmt.Fprintf(w, "prompt %d tokens, %d full blocks of %d\n", ex.PromptTokens, len(ex.Blocks), ex.BlockSize)
	}
	if ex.Pick == "" {
		fmt.Fprintf(w, "no pick: reason %s (every replica's work would delay it past shed_delay)", ex.Reason)
	} else {
		fmt.Fprintf(w, "pick %s  reason %s  predicted cached %d tokens", ex.Pick, ex.Reason, ex.CachedTokens)
	}
	if ex.EstimatedTTFTMS != nil {
		fmt.Fprintf(w, "  estimated TTFT %.1f ms", *ex.EstimatedTTFTMS)
	}
	if ex.SummaryFallback {
		fmt.Fprint(w, "  (summary fallback)")
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\tREPLICA\tSTATE\tIN FLIGHT\tPENDING\tPREFILL TOK\tKV USE\tCACHED TOK\tQUEUE MS\tTTFT MS\tSCORE")
	for _, c := range ex.Candidates {
		mark := ""
		if c.ID == ex.Pick {
			mark = "*"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\n", mark, c.ID, c.State, c.InFlight, c.Pending,
			c.PrefillTokens, opt(c.KVUsage, "%.0f%%", 100), optInt(c.CachedTokens), opt(c.QueueWaitMS, "%.1f", 1),
			opt(c.EstimatedTTFTMS, "%.1f", 1), opt(c.Score, "%.4g", 1))
	}
	return tw.Flush()
}

// opt formats *v×scale with format, or "-" when v is nil.
func opt(v *float64, format string, scale float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf(format, *v*scale)
}

func optInt(v *int) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprint(*v)
}
