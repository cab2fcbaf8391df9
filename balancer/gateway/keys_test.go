package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func digest(s string) string { d := sha256.Sum256([]byte(s)); return hex.EncodeToString(d[:]) }

func identity(name string) string { return name }

func TestKeyringLookup(t *testing.T) {
	kr, err := NewKeyring([]KeyConfig{
		{Name: "plain", Key: "sk-plain"},
		{Name: "hashed", SHA256: digest("sk-hashed"), Models: []string{"alias-m"}},
	}, Limits{RequestsPerSecond: 1}, func(n string) string {
		if n == "alias-m" {
			return "m"
		}
		return n
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		secret, want string
	}{
		{"sk-plain", "plain"}, {"sk-hashed", "hashed"}, {"sk-other", ""}, {"", ""}, {"sk-plai", ""},
	}
	for _, tc := range tests {
		got := ""
		if k := kr.Lookup(tc.secret); k != nil {
			got = k.Name
		}
		if got != tc.want {
			t.Errorf("Lookup(%q) = %q, want %q", tc.secret, got, tc.want)
		}
	}
	h := kr.Lookup("sk-hashed")
	if !h.Allows("m") || h.Allows("other") {
		t.Errorf("a key listing alias-m: Allows(m)=%v Allows(other)=%v, want true, false", h.Allows("m"), h.Allows("other"))
	}
	if p := kr.Lookup("sk-plain"); !p.Allows("anything") || p.Limits.RequestsPerSecond != 1 {
		t.Errorf("a key without models or limits: %+v", p)
	}
}

func TestCredential(t *testing.T) {
	tests := []struct {
		name   string
		header map[string]string
		want   string
		ok     bool
	}{
		{"bearer", map[string]string{"Authorization": "Bearer sk-1"}, "sk-1", true},
		{"bearer lower case", map[string]string{"Authorization": "bearer   sk-1 "}, "sk-1", true},
		{"x-api-key", map[string]string{"X-Api-Key": "sk-2"}, "sk-2", true},
		{"basic is not a key", map[string]string{"Authorization": "Basic dXNlcg=="}, "", false},
		{"empty bearer", map[string]string{"Authorization": "Bearer "}, "", false},
		{"bearer wins", map[string]string{"Authorization": "Bearer a", "X-Api-Key": "b"}, "a", true},
		{"none", nil, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tc.header {
				h.Set(k, v)
			}
			got, ok := Credential(h)
			if got != tc.want || ok != tc.ok {
				t.Errorf("Credential = %q, %v; want %q, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestToken(t *testing.T) {
	plain, _ := NewToken("adm", "")
	hashed, _ := NewToken("", digest("adm"))
	none, _ := NewToken("", "")
	for name, tok := range map[string]Token{"plain": plain, "hashed": hashed} {
		if !tok.Matches("adm") || tok.Matches("adm2") || tok.Matches("") {
			t.Errorf("%s token matches wrongly", name)
		}
	}
	if none.Set() || none.Matches("") {
		t.Error("an unset token matches")
	}
	if _, err := NewToken("", "abc"); err == nil {
		t.Error("a short digest was accepted")
	}
}

func TestParseKeysFileReportsEveryProblem(t *testing.T) {
	_, err := ParseKeysFile([]byte(`keys:
  - name: a
    key: k1
    colour: blue
  - name: a
    sha256: xyz
  - models: [""]
    limits: {requests_per_second: -1, tokens_per_minute: -5}
`))
	if err == nil {
		t.Fatal("a bad keys file was accepted")
	}
	for _, want := range []string{"colour", `keys[1].name "a" is not unique`, "keys[1].sha256 must be 64 hex digits",
		"keys[2].name must not be empty", "keys[2] needs key or sha256", "keys[2].models[0] must not be empty",
		"keys[2].limits.requests_per_second", "keys[2].limits.tokens_per_minute"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
}

func TestLoadKeysFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.yaml")
	if err := os.WriteFile(path, []byte("keys:\n  - {name: a, sha256: "+digest("sk-a")+"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	keys, err := LoadKeysFile(path)
	if err != nil || len(keys) != 1 || keys[0].Name != "a" {
		t.Fatalf("LoadKeysFile = %+v, %v", keys, err)
	}
	if _, err := LoadKeysFile(path + ".missing"); err == nil || !strings.Contains(err.Error(), "auth.keys_file") {
		t.Errorf("missing file: err = %v, want it named auth.keys_file", err)
	}
}

func TestConfigValidate(t *testing.T) {
	c := DefaultConfig()
	c.Auth.Keys = []KeyConfig{{Name: "a", Key: "k", SHA256: digest("k")}}
	c.Auth.AdminToken, c.Auth.AdminTokenSHA256 = "x", "nothex"
	c.RateLimits.Default = Limits{Burst: 3, TokenBurst: 4}
	c.RateLimits.Redis.Addr = "no-port"
	c.RateLimits.Redis.Timeout = 0
	c.RateLimits.Redis.RetryInterval = -1
	c.RateLimits.Redis.DB = -1
	c.CORS.AllowedOrigins = []string{"https://ok.example", "https://bad.example/path", "ftp://x"}
	c.CORS.AllowedHeaders = []string{""}
	c.CORS.MaxAge = -1
	err := c.Validate()
	if err == nil {
		t.Fatal("Validate accepted a bad config")
	}
	for _, want := range []string{"auth.keys[0].key and auth.keys[0].sha256 are both set", "auth.admin_token and auth.admin_token_sha256",
		"auth.admin_token_sha256 must be 64 hex digits", "rate_limits.default.burst needs requests_per_second",
		"rate_limits.default.token_burst needs tokens_per_minute", `rate_limits.redis.addr must be host:port, got "no-port"`,
		"rate_limits.redis.db", "rate_limits.redis.timeout", "rate_limits.redis.retry_interval",
		`cors.allowed_origins[1]`, `cors.allowed_origins[2]`, "cors.allowed_headers[0]", "cors.max_age"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "allowed_origins[0]") {
		t.Errorf("a good origin was rejected:\n%v", err)
	}
	d := DefaultConfig()
	if err := d.Validate(); err != nil {
		t.Errorf("defaults invalid: %v", err)
	}
}

func TestRedacted(t *testing.T) {
	c := DefaultConfig()
	c.Auth.Keys = []KeyConfig{{Name: "a", Key: "sk-secret"}, {Name: "b", SHA256: digest("x")}}
	c.Auth.AdminToken = "adm-secret"
	c.RateLimits.Redis.Password = "pw-secret"
	r := c.Redacted()
	s := strings.Join([]string{r.Auth.Keys[0].Key, r.Auth.Keys[1].SHA256, r.Auth.AdminToken, r.RateLimits.Redis.Password}, " ")
	if strings.Contains(s, "secret") || strings.Contains(s, digest("x")) || r.Auth.Keys[0].Name != "a" {
		t.Errorf("Redacted kept a secret: %s", s)
	}
	if c.Auth.Keys[0].Key != "sk-secret" {
		t.Error("Redacted changed its receiver's keys")
	}
}

func FuzzParseKeysFile(f *testing.F) {
	f.Add([]byte("keys:\n  - {name: a, key: b, models: [m], limits: {requests_per_second: 1}}\n"))
	f.Add([]byte("keys: 5"))
	f.Add([]byte("- a\n- b"))
	f.Fuzz(func(t *testing.T, b []byte) {
		keys, err := ParseKeysFile(b)
		if err != nil {
			return
		}
		if _, err := NewKeyring(keys, Limits{}, identity); err != nil {
			t.Fatalf("a valid keys file does not build a keyring: %v", err)
		}
	})
}

func TestKeylessClientIP(t *testing.T) {
	tests := []struct {
		name, header, remote string
		values               []string
		want                 string
	}{
		{"peer address", "", "10.0.0.1:5555", []string{"1.2.3.4"}, "10.0.0.1"},
		{"last forwarded address", "X-Forwarded-For", "10.0.0.1:5555", []string{"6.6.6.6, 1.2.3.4"}, "1.2.3.4"},
		{"last header line", "X-Forwarded-For", "10.0.0.1:5555", []string{"6.6.6.6", "5.5.5.5"}, "5.5.5.5"},
		{"header absent", "X-Real-Ip", "10.0.0.1:5555", nil, "10.0.0.1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := &Gate{ipHeader: tc.header}
			r := &http.Request{RemoteAddr: tc.remote, Header: http.Header{}}
			for _, v := range tc.values {
				r.Header.Add("X-Forwarded-For", v)
			}
			if got := g.clientIP(r); got != tc.want {
				t.Errorf("clientIP = %q, want %q", got, tc.want)
			}
		})
	}
}

func FuzzCredential(f *testing.F) {
	f.Add("Bearer sk-1", "", "")
	f.Add("bearer  ", "k", "1.2.3.4, 5.6.7.8")
	f.Fuzz(func(t *testing.T, auth, apiKey, forwarded string) {
		h := http.Header{"Authorization": {auth}, "X-Api-Key": {apiKey}, "X-Forwarded-For": {forwarded}}
		if s, ok := Credential(h); ok && (s == "" || strings.TrimSpace(s) != s) {
			t.Fatalf("Credential = %q, true", s)
		}
		g := &Gate{ipHeader: "X-Forwarded-For"}
		_ = g.clientIP(&http.Request{Header: h, RemoteAddr: "1.1.1.1:1"})
	})
}
