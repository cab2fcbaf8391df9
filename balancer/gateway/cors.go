package gateway

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// exposedHeaders are the response headers a browser script may read.
var exposedHeaders = strings.Join([]string{
	"X-Request-Id", "X-Inferrail-Replica", "X-Inferrail-Prompt-Tokens", "X-Inferrail-Cached-Tokens", "X-Inferrail-Tokens-Estimated", "Retry-After",
	HeaderLimitRequests, HeaderRemainingRequests, HeaderResetRequests,
	HeaderLimitTokens, HeaderRemainingTokens, HeaderResetTokens,
}, ", ")

// allowedMethods are the methods the client API answers.
const allowedMethods = "GET, HEAD, POST, OPTIONS"

// CORS answers cross-origin requests from the configured origins. The zero
// value (no origins) is off. Immutable.
type CORS struct {
	any     bool
	origins []string
	headers []string // canonical; nil with anyHdr
	anyHdr  bool
	maxAge  string
}

// NewCORS returns the CORS policy of a validated config.
func NewCORS(c CORSConfig) *CORS {
	p := &CORS{maxAge: strconv.Itoa(int(c.MaxAge.Seconds()))}
	for _, o := range c.AllowedOrigins {
		if o == "*" {
			p.any = true
		}
		p.origins = append(p.origins, strings.ToLower(strings.TrimSuffix(o, "/")))
	}
	for _, h := range c.AllowedHeaders {
		if h == "*" {
			p.anyHdr = true
		}
		p.headers = append(p.headers, http.CanonicalHeaderKey(h))
	}
	return p
}

// On reports whether any origin is allowed.
func (p *CORS) On() bool { return p != nil && len(p.origins) > 0 }

func (p *CORS) allows(origin string) bool {
	return p.any || slices.Contains(p.origins, strings.ToLower(origin))
}

// Handle applies the policy to r: it sets the CORS response headers of an
// allowed origin and answers a preflight (OPTIONS with
// Access-Control-Request-Method) itself, 204 when allowed and 403 when not.
// It reports whether it answered; otherwise the request goes on.
func (p *CORS) Handle(w http.ResponseWriter, r *http.Request) bool {
	if !p.On() {
		return false
	}
	origin := r.Header.Get("Origin")
	h := w.Header()
	h.Add("Vary", "Origin")
	preflight := r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != ""
	if preflight {
		h.Add("Vary", "Access-Control-Request-Method")
		h.Add("Vary", "Access-Control-Request-Headers")
	}
	if origin == "" {
		return false
	}
	if !p.allows(origin) {
		if preflight {
			http.Error(w, "origin not allowed", http.StatusForbidden)
			return true
		}
		return false // no CORS headers: the browser withholds the response
	}
	if p.any {
		h.Set("Access-Control-Allow-Origin", "*")
	} else {
		h.Set("Access-Control-Allow-Origin", origin)
	}
	if !preflight {
		h.Set("Access-Control-Expose-Headers", exposedHeaders)
		return false
	}
	method := r.Header.Get("Access-Control-Request-Method")
	if !strings.Contains(allowedMethods, strings.ToUpper(method)) {
		http.Error(w, "method not allowed", http.StatusForbidden)
		return true
	}
	if req := r.Header.Get("Access-Control-Request-Headers"); req != "" {
		for _, f := range strings.Split(req, ",") {
			f = http.CanonicalHeaderKey(strings.TrimSpace(f))
			if f != "" && !p.anyHdr && !slices.Contains(p.headers, f) {
				http.Error(w, "header "+f+" not allowed", http.StatusForbidden)
				return true
			}
		}
		h.Set("Access-Control-Allow-Headers", req)
	}
	h.Set("Access-Control-Allow-Methods", allowedMethods)
	h.Set("Access-Control-Max-Age", p.maxAge)
	w.WriteHeader(http.StatusNoContent)
	return true
}

// validOrigin reports whether o is scheme://host[:port] with nothing else.
func validOrigin(o string) bool {
	u, err := url.Parse(o)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" &&
		(u.Path == "" || u.Path == "/") && u.RawQuery == "" && u.Fragment == "" && u.User == nil
}
