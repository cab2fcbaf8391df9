package balancer

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/inferrail/inferrail/internal/openai"
)

// AuthConfig guards the client API with API keys.
type AuthConfig struct {
	// APIKeysFile holds the accepted keys, one per line (blank lines and
	// lines starting with # are skipped). Empty: no authentication. With
	// keys, every /v1/ request needs "Authorization: Bearer <key>"; /health
	// stays open for probes.
	APIKeysFile string `yaml:"api_keys_file"`
}

// apiKeys is the set of accepted keys, by SHA-256 so comparisons take the
// same time whatever the key.
type apiKeys [][sha256.Size]byte

// loadAPIKeys reads an API keys file.
func loadAPIKeys(path string) (apiKeys, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read api keys: %w", err)
	}
	var keys apiKeys
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		keys = append(keys, sha256.Sum256([]byte(line)))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read api keys: %w", err)
	}
	if len(keys) == 0 {
		return nil, errors.New("api keys file holds no key")
	}
	return keys, nil
}

// allows reports whether r carries one of the keys.
func (k apiKeys) allows(r *http.Request) bool {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return false
	}
	h := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	found := 0
	for _, key := range k {
		found |= subtle.ConstantTimeCompare(h[:], key[:])
	}
	return found == 1
}

// unauthorized answers a request without a valid key (OpenAI's 401).
func unauthorized(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="inferrail"`)
	e := openai.StatusError(http.StatusUnauthorized, "missing or invalid API key: send Authorization: Bearer <key>")
	e.Write(w)
}
