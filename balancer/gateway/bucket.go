package gateway

import (
	"math"
	"time"
)

// Bucket is a token bucket's shape: it holds at most Burst units and refills
// at Rate units per second. Burst 0 means no limit.
type Bucket struct {
	Rate  float64
	Burst float64
}

// On reports whether the bucket limits anything.
func (b Bucket) On() bool { return b.Burst > 0 && b.Rate > 0 }

// Quota is a client's two buckets: requests and tokens.
type Quota struct {
	Requests Bucket
	Tokens   Bucket
}

// On reports whether either bucket limits anything.
func (q Quota) On() bool { return q.Requests.On() || q.Tokens.On() }

// QuotaOf turns limits into buckets.
func QuotaOf(l Limits) Quota {
	var q Quota
	if l.RequestsPerSecond > 0 {
		burst := float64(l.Burst)
		if burst == 0 {
			burst = max(1, math.Ceil(l.RequestsPerSecond))
		}
		q.Requests = Bucket{Rate: l.RequestsPerSecond, Burst: burst}
	}
	if l.TokensPerMinute > 0 {
		burst := float64(l.TokenBurst)
		if burst == 0 {
			burst = float64(l.TokensPerMinute)
		}
		q.Tokens = Bucket{Rate: float64(l.TokensPerMinute) / 60, Burst: burst}
	}
	return q
}

// Op is one operation on a client's buckets.
type Op struct {
	// Requests and Tokens are the units to take.
	Requests, Tokens float64
	// Force takes Tokens whatever the level (the bucket may go into debt,
	// down to -Burst): completion tokens counted after a response.
	// Otherwise both are taken only if both buckets hold them.
	Force bool
}

// Levels are a client's two bucket levels after an operation.
type Levels struct {
	Requests, Tokens float64
}

// Result is the outcome of an operation.
type Result struct {
	// Allowed reports whether the units were taken.
	Allowed bool
	// Levels are the levels after the operation.
	Levels Levels
}

// level is one bucket's stored state: its level at a time.
type level struct {
	v  float64
	at time.Time
}

// refill returns the level at now (never above Burst; a clock that went
// back adds nothing).
func (b Bucket) refill(l level, now time.Time) float64 {
	dt := now.Sub(l.at).Seconds()
	if dt < 0 {
		dt = 0
	}
	return min(b.Burst, l.v+dt*b.Rate)
}

// apply runs op on two refilled levels and returns the new levels and
// whether the units were taken. Buckets that are off stay at 0. The Redis
// script (redis.go) is this function in Lua; the two are tested against
// each other.
func apply(q Quota, req, tok float64, op Op) (float64, float64, bool) {
	if op.Force {
		if q.Tokens.On() {
			tok = max(tok-op.Tokens, -q.Tokens.Burst)
		}
		return req, tok, true
	}
	okReq := !q.Requests.On() || req >= op.Requests
	okTok := !q.Tokens.On() || tok >= op.Tokens
	if !okReq || !okTok {
		return req, tok, false
	}
	if q.Requests.On() {
		req -= op.Requests
	}
	if q.Tokens.On() {
		tok -= op.Tokens
	}
	return req, tok, true
}

// Status is one bucket's state as the rate-limit headers tell it.
type Status struct {
	// Limit is the bucket's size, Remaining the whole units in it now.
	Limit, Remaining int64
	// Reset is the time until the bucket is full again.
	Reset time.Duration
	// Wait is the time until it holds need units (0 when it does).
	Wait time.Duration
}

// status returns a bucket's Status at level v for a request of need units.
func (b Bucket) status(v, need float64) Status {
	s := Status{Limit: int64(b.Burst), Remaining: max(0, int64(math.Floor(v)))}
	s.Reset = secs((b.Burst - v) / b.Rate)
	if v < need {
		s.Wait = secs((need - v) / b.Rate)
	}
	return s
}

func secs(s float64) time.Duration {
	if s <= 0 {
		return 0
	}
	return time.Duration(math.Ceil(s * float64(time.Second)))
}

// ttl is how long a client's state must be kept: until both buckets are
// full again, from debt at worst.
func (q Quota) ttl() time.Duration {
	var d time.Duration
	for _, b := range []Bucket{q.Requests, q.Tokens} {
		if b.On() {
			d = max(d, secs(2*b.Burst/b.Rate))
		}
	}
	return d + time.Second
}
