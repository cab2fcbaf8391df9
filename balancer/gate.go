package balancer

import (
	"context"
	"net/http"

	"github.com/inferrail/inferrail/balancer/gateway"
	"github.com/inferrail/inferrail/internal/openai"
)

// The gateway on the request path: serveClient authenticates (401) before
// reading the body; forward admits the request once its model and prompt
// tokens are known (403, 429) and meters its completion tokens.

type identityKey struct{}

// authenticate resolves who r is and returns r carrying the identity, or
// writes the 401 and reports false. With keys on, the client's credentials
// are removed from r: the gateway's key is never sent upstream (a replica
// with api_key sends its own).
func (b *Balancer) authenticate(w http.ResponseWriter, r *http.Request, g *gateway.Gate) (*http.Request, bool) {
	id, oerr := g.Authenticate(r)
	if oerr != nil {
		if w.Header().Get("WWW-Authenticate") == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="inferrail"`)
		}
		oerr.Write(w)
		return r, false
	}
	if g.KeysOn() {
		r.Header.Del("Authorization")
		r.Header.Del("X-Api-Key")
	}
	return r.WithContext(context.WithValue(r.Context(), identityKey{}, id)), true
}

// identityOf returns the identity authenticate stored in r.
func identityOf(r *http.Request) (gateway.Identity, bool) {
	id, ok := r.Context().Value(identityKey{}).(gateway.Identity)
	return id, ok
}

// estimateTokens is the prompt token estimate of a request whose model has
// no tokenizer: a quarter of the body's bytes (about four bytes a token in
// English BPE vocabularies; the JSON around the prompt makes it an
// overestimate).
func estimateTokens(body []byte) int { return (len(body) + 3) / 4 }

// admit runs the gateway's checks on a parsed request: the key may use the
// model, and its buckets hold one request and its prompt tokens (tokens, or
// the estimate when the model has no tokenizer). It returns the admission,
// or the error to answer with (rate-limit headers already set).
func (b *Balancer) admit(w http.ResponseWriter, r *http.Request, m *model, tokens int, body []byte) (*gateway.Admission, *openai.Error) {
	g := b.cur().gate
	id, ok := identityOf(r)
	if !ok { // a handler not behind serveClient (tests)
		var oerr *openai.Error
		if id, oerr = g.Authenticate(r); oerr != nil {
			return nil, oerr
		}
	}
	if tokens <= 0 {
		tokens = estimateTokens(body)
	}
	return g.Admit(r.Context(), w.Header(), id, m.cfg.Name, tokens)
}
