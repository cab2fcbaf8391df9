package proxy

import (
	"net/http"
	"net/textproto"
	"strings"
)

// hopHeaders are the hop-by-hop headers of RFC 9110 §7.6.1, never forwarded.
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// cloneForward returns a copy of h without hop-by-hop headers (also those
// named in Connection) and without Content-Length (set from the body).
func cloneForward(h http.Header) http.Header {
	out := make(http.Header, len(h))
	copyForward(out, h)
	out.Del("Content-Length")
	return out
}

// copyForward copies the end-to-end headers of src into dst.
func copyForward(dst, src http.Header) {
	var named map[string]bool
	for _, v := range src["Connection"] {
		for _, f := range strings.Split(v, ",") {
			if f = textproto.TrimString(f); f != "" {
				if named == nil {
					named = map[string]bool{}
				}
				named[http.CanonicalHeaderKey(f)] = true
			}
		}
	}
	for k, vv := range src {
		if isHop(k) || named[k] {
			continue
		}
		dst[k] = append([]string(nil), vv...)
	}
}

func isHop(k string) bool {
	for _, h := range hopHeaders {
		if k == h {
			return true
		}
	}
	return false
}
