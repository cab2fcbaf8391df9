package gateway

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/inferrail/inferrail/internal/yamlconf"
)

// Key is one API key as the balancer keeps it: its name, the SHA-256 of the
// key (never the key), the models it may use and its limits.
type Key struct {
	// Name labels the key's metrics and logs.
	Name   string
	digest [32]byte
	// all reports whether every model is allowed; else models holds the
	// canonical names allowed.
	all    bool
	models map[string]bool
	// Limits are the key's limits (its own or rate_limits.default).
	Limits Limits
	// CacheScope is the key's response-cache tenant: "group:" and its
	// cache_group, else "key:" and its name.
	CacheScope string
}

// Allows reports whether the key may use the model whose canonical name is
// model.
func (k *Key) Allows(model string) bool { return k.all || k.models[model] }

// Keyring holds the API keys. It is immutable and safe for concurrent use.
type Keyring struct {
	keys []*Key
}

// Resolver maps a model name or alias to its canonical model name (the name
// itself when it is neither).
type Resolver func(name string) string

// keysFile is the layout of auth.keys_file.
type keysFile struct {
	Keys []KeyConfig `yaml:"keys"`
}

// LoadKeysFile reads a keys file and validates it; problems are named by
// the file and their path in it.
func LoadKeysFile(path string) ([]KeyConfig, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("auth.keys_file: %w", err)
	}
	keys, err := ParseKeysFile(b)
	if err != nil {
		return nil, fmt.Errorf("auth.keys_file %s:\n%w", path, err)
	}
	return keys, nil
}

// ParseKeysFile decodes and validates a keys file's content strictly:
// unknown keys, wrong types and invalid entries are all reported, each
// with its path in the file.
func ParseKeysFile(b []byte) ([]KeyConfig, error) {
	f, err := yamlconf.Decode(b, keysFile{})
	errs := validateKeys("keys", f.Keys)
	if err != nil {
		errs = append([]error{err}, errs...)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return f.Keys, nil
}

// NewKeyring builds the keyring from validated key configs; def are the
// limits of keys without their own, resolve canonicalizes model names.
func NewKeyring(cfgs []KeyConfig, def Limits, resolve Resolver) (*Keyring, error) {
	kr := &Keyring{}
	names := map[string]bool{}
	for _, c := range cfgs {
		if names[c.Name] {
			return nil, fmt.Errorf("key name %q is used twice (auth.keys and auth.keys_file)", c.Name)
		}
		names[c.Name] = true
		k := &Key{Name: c.Name, Limits: def, models: map[string]bool{}, CacheScope: "key:" + c.Name}
		if c.CacheGroup != "" {
			k.CacheScope = "group:" + c.CacheGroup
		}
		if c.Limits != nil {
			k.Limits = *c.Limits
		}
		if c.Key != "" {
			k.digest = sha256.Sum256([]byte(c.Key))
		} else {
			d, err := parseDigest(c.SHA256)
			if err != nil {
				return nil, fmt.Errorf("key %s: sha256 %w", c.Name, err)
			}
			k.digest = d
		}
		k.all = len(c.Models) == 0
		for _, m := range c.Models {
			if m == "*" {
				k.all = true
			}
			k.models[resolve(m)] = true
		}
		kr.keys = append(kr.keys, k)
	}
	return kr, nil
}

// Len returns the number of keys.
func (kr *Keyring) Len() int { return len(kr.keys) }

// Lookup returns the key whose SHA-256 matches secret's, or nil. Every key's
// digest is compared, in constant time, whatever matches: the time taken
// depends on the number of keys only.
func (kr *Keyring) Lookup(secret string) *Key {
	d := sha256.Sum256([]byte(secret))
	var found *Key
	for _, k := range kr.keys {
		if subtle.ConstantTimeCompare(d[:], k.digest[:]) == 1 {
			found = k
		}
	}
	return found
}

// Credential returns the key a request presents: "Authorization: Bearer
// KEY" or "x-api-key: KEY" (the Anthropic-style header some SDKs send). ok
// is false when it presents none.
func Credential(h http.Header) (secret string, ok bool) {
	if v := h.Get("Authorization"); v != "" {
		scheme, rest, found := strings.Cut(v, " ")
		if found && strings.EqualFold(scheme, "Bearer") {
			if s := strings.TrimSpace(rest); s != "" {
				return s, true
			}
		}
	}
	if v := strings.TrimSpace(h.Get("X-Api-Key")); v != "" {
		return v, true
	}
	return "", false
}

// Token is a secret compared by its SHA-256 in constant time: the admin
// token.
type Token struct {
	set    bool
	digest [32]byte
}

// NewToken returns the token configured by plain or hexDigest (both empty:
// no token, Matches is always false).
func NewToken(plain, hexDigest string) (Token, error) {
	switch {
	case plain != "":
		return Token{set: true, digest: sha256.Sum256([]byte(plain))}, nil
	case hexDigest != "":
		d, err := parseDigest(hexDigest)
		if err != nil {
			return Token{}, err
		}
		return Token{set: true, digest: d}, nil
	}
	return Token{}, nil
}

// Set reports whether a token is configured.
func (t Token) Set() bool { return t.set }

// Matches reports whether secret is the token.
func (t Token) Matches(secret string) bool {
	d := sha256.Sum256([]byte(secret))
	return subtle.ConstantTimeCompare(d[:], t.digest[:]) == 1 && t.set
}
