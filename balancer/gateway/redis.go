package gateway

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// takeScript is apply (bucket.go) as a Redis script, so that refill, check
// and take happen in one atomic step on the server: balancers sharing a
// Redis never race on a read-modify-write. The clock is Redis's TIME, one
// clock for every balancer. KEYS[1] is the client's hash (fields r and t:
// the levels, at: milliseconds). ARGV: request rate and burst, token rate
// and burst, request and token units, force (1/0), TTL in milliseconds.
// It returns {allowed, request level, token level}.
const takeScript = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local rr, rb = tonumber(ARGV[1]), tonumber(ARGV[2])
local tr, tb = tonumber(ARGV[3]), tonumber(ARGV[4])
local rn, tn = tonumber(ARGV[5]), tonumber(ARGV[6])
local force = ARGV[7] == '1'
local s = redis.call('HMGET', KEYS[1], 'r', 't', 'at')
local req, tok, at = tonumber(s[1]), tonumber(s[2]), tonumber(s[3])
if req == nil or tok == nil or at == nil then
  req, tok, at = rb, tb, now
end
local dt = math.max(0, now - at) / 1000
req = math.min(rb, req + dt * rr)
tok = math.min(tb, tok + dt * tr)
local reqOn = rb > 0 and rr > 0
local tokOn = tb > 0 and tr > 0
local ok = 1
if force then
  if tokOn then tok = math.max(tok - tn, -tb) end
elseif (reqOn and req < rn) or (tokOn and tok < tn) then
  ok = 0
else
  if reqOn then req = req - rn end
  if tokOn then tok = tok - tn end
end
redis.call('HSET', KEYS[1], 'r', string.format('%.17g', req), 't', string.format('%.17g', tok), 'at', string.format('%d', now))
redis.call('PEXPIRE', KEYS[1], ARGV[8])
return {ok, string.format('%.17g', req), string.format('%.17g', tok)}
`

// RedisStore keeps the levels in Redis, shared by every balancer that uses
// the same Redis and key prefix.
type RedisStore struct {
	c      *redis.Client
	prefix string
	script *redis.Script
}

var _ Store = (*RedisStore)(nil)

// NewRedisStore returns a store on cfg.Addr. It does not connect until the
// first Take.
func NewRedisStore(cfg RedisConfig) *RedisStore {
	// A failed call falls back at once (Limiter).
	c := cfg.Conn.NewClient()
	return &RedisStore{c: c, prefix: cfg.KeyPrefix, script: redis.NewScript(takeScript)}
}

// Take implements Store with one script call (EVALSHA, EVAL the first time).
func (s *RedisStore) Take(ctx context.Context, key string, q Quota, op Op) (Result, error) {
	force := "0"
	if op.Force {
		force = "1"
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	v, err := s.script.Run(ctx, s.c, []string{s.prefix + key},
		f(q.Requests.Rate), f(q.Requests.Burst), f(q.Tokens.Rate), f(q.Tokens.Burst),
		f(op.Requests), f(op.Tokens), force, q.ttl().Milliseconds()).Slice()
	if err != nil {
		return Result{}, fmt.Errorf("redis rate limit script: %w", err)
	}
	if len(v) != 3 {
		return Result{}, fmt.Errorf("redis rate limit script: %d values, want 3", len(v))
	}
	ok, _ := v[0].(int64)
	req, err1 := strconv.ParseFloat(fmt.Sprint(v[1]), 64)
	tok, err2 := strconv.ParseFloat(fmt.Sprint(v[2]), 64)
	if err1 != nil || err2 != nil {
		return Result{}, fmt.Errorf("redis rate limit script: bad levels %v, %v", v[1], v[2])
	}
	return Result{Allowed: ok == 1, Levels: Levels{Requests: req, Tokens: tok}}, nil
}

// Close closes the connections.
func (s *RedisStore) Close() error { return s.c.Close() }
