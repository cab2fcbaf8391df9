package redisconf

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestValidateNamesEveryProblemWithItsPath(t *testing.T) {
	err := errors.Join(Conn{Addr: "redis", DB: -1}.Validate("rate_limits.redis")...)
	want := "rate_limits.redis.addr must be host:port, got \"redis\"\n" +
		"rate_limits.redis.db must be >= 0, got -1\n" +
		"rate_limits.redis.timeout must be > 0, got 0s"
	if err == nil || err.Error() != want {
		t.Errorf("Validate() = %v, want\n%s", err, want)
	}
	if errs := (Conn{Addr: "redis:6379", Timeout: time.Second}).Validate("x"); errs != nil {
		t.Errorf("Validate() of a good connection = %v", errs)
	}
	if errs := (Conn{Timeout: time.Second}).Validate("x"); errs != nil {
		t.Errorf("Validate() without Redis = %v", errs)
	}
}

func TestRedacted(t *testing.T) {
	c := Conn{Addr: "r:1", Username: "u", Password: "secret"}
	if diff := cmp.Diff(Conn{Addr: "r:1", Username: "u", Password: "<r>"}, c.Redacted("<r>")); diff != "" {
		t.Errorf("Redacted (-want +got):\n%s", diff)
	}
	if got := (Conn{Addr: "r:1"}).Redacted("<r>"); got.Password != "" {
		t.Errorf("Redacted of no password = %q", got.Password)
	}
}

// The client retries nothing itself (MaxRetries -1, which the client keeps
// as 0) and bounds every call by the timeout.
func TestNewClientOptions(t *testing.T) {
	c := Conn{Addr: "r:1", Username: "u", Password: "p", DB: 2, Timeout: 50 * time.Millisecond}.NewClient()
	defer c.Close()
	o := c.Options()
	if o.Addr != "r:1" || o.Username != "u" || o.Password != "p" || o.DB != 2 ||
		o.DialTimeout != 50*time.Millisecond || o.ReadTimeout != 50*time.Millisecond || o.WriteTimeout != 50*time.Millisecond ||
		!o.ContextTimeoutEnabled || o.MaxRetries > 0 || !o.DisableIdentity || o.MinIdleConns != 1 {
		t.Errorf("options %+v", o)
	}
}
