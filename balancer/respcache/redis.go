package respcache

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The Redis layout under key_prefix (P):
//
//	P e:<scope tag>:<model tag>:<key>  an Entry record, with the TTL
//	P v:<scope tag>:<model tag>:<key>  a Vector record, with the same TTL
//	P events                           a stream of {op: add, key} and
//	                                   {op: purge, scope, model} (tags)
//
// Tags are Tag's hex hashes, so patterns never need escaping but the
// prefix's own.

// newRedisClient returns a client on cfg without connecting; a failed call
// is a miss at once.
func newRedisClient(cfg RedisConfig) *redis.Client { return cfg.Conn.NewClient() }

// redisStore keeps entries in Redis, shared by every balancer on the same
// Redis and prefix.
type redisStore struct {
	c       *redis.Client
	prefix  string
	timeout time.Duration
}

var _ store = (*redisStore)(nil)

// Get implements store.
func (s *redisStore) Get(ctx context.Context, key string) (*Entry, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	b, err := s.c.Get(ctx, s.prefix+"e:"+key).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("redis get: %w", err)
	}
	return UnmarshalEntry(b)
}

// Set implements store.
func (s *redisStore) Set(ctx context.Context, key string, e *Entry, ttl time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	if err := s.c.Set(ctx, s.prefix+"e:"+key, MarshalEntry(e), ttl).Err(); err != nil {
		return fmt.Errorf("redis set: %w", err)
	}
	return nil
}

// Purge implements store: the entries and the vectors f selects, and an
// event so that every balancer drops the vectors from its index.
func (s *redisStore) Purge(ctx context.Context, f Filter) (int, error) {
	n, err := s.unlinkMatching(ctx, "e:"+filterPattern(f))
	if err != nil {
		return n, err
	}
	if _, err := s.unlinkMatching(ctx, "v:"+filterPattern(f)); err != nil {
		return n, err
	}
	ev := map[string]any{"op": "purge", "scope": "", "model": ""}
	if f.Scope != "" {
		ev["scope"] = Tag(f.Scope)
	}
	if f.Model != "" {
		ev["model"] = Tag(f.Model)
	}
	if err := s.publish(ctx, ev); err != nil {
		return n, err
	}
	return n, nil
}

// unlinkMatching deletes every key matching the pattern (after the prefix)
// with SCAN and UNLINK; purges are rare admin calls, so it gets a longer
// bound than the request path.
func (s *redisStore) unlinkMatching(ctx context.Context, pattern string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	n := 0
	iter := s.c.Scan(ctx, 0, globEscape(s.prefix)+pattern, 512).Iterator()
	var batch []string
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		d, err := s.c.Unlink(ctx, batch...).Result()
		n += int(d)
		batch = batch[:0]
		return err
	}
	for iter.Next(ctx) {
		if batch = append(batch, iter.Val()); len(batch) == 512 {
			if err := flush(); err != nil {
				return n, fmt.Errorf("redis unlink: %w", err)
			}
		}
	}
	if err := iter.Err(); err != nil {
		return n, fmt.Errorf("redis scan: %w", err)
	}
	if err := flush(); err != nil {
		return n, fmt.Errorf("redis unlink: %w", err)
	}
	return n, nil
}

// maxEvents bounds the events stream (approximately): a balancer further
// behind than that catches up at its next rescan.
const maxEvents = 100_000

// publish appends ev to the events stream.
func (s *redisStore) publish(ctx context.Context, ev map[string]any) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	err := s.c.XAdd(ctx, &redis.XAddArgs{Stream: s.prefix + "events", MaxLen: maxEvents, Approx: true, Values: ev}).Err()
	if err != nil {
		return fmt.Errorf("redis xadd: %w", err)
	}
	return nil
}

// SetVector stores v under key with ttl and announces it.
func (s *redisStore) SetVector(ctx context.Context, key string, v *Vector, ttl time.Duration) error {
	tctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	if err := s.c.Set(tctx, s.prefix+"v:"+key, MarshalVector(v), ttl).Err(); err != nil {
		return fmt.Errorf("redis set vector: %w", err)
	}
	return s.publish(ctx, map[string]any{"op": "add", "key": key})
}

// filterPattern is the SCAN pattern of f's keys after "e:" or "v:".
func filterPattern(f Filter) string {
	scope, model := "*", "*"
	if f.Scope != "" {
		scope = Tag(f.Scope)
	}
	if f.Model != "" {
		model = Tag(f.Model)
	}
	return scope + ":" + model + ":*"
}

// globEscape escapes the glob characters of a literal for MATCH.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
