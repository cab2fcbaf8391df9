package respcache

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// expireEvery is how often the in-memory index drops vectors past their
// TTL.
const expireEvery = time.Minute

// syncRetry is the wait after the Redis follower failed before it starts
// over with a full scan.
const syncRetry = time.Second

// Run keeps the semantic index in step until ctx ends: in memory it drops
// expired vectors; with Redis it loads every stored vector (a scan), then
// follows the events stream (inserts and purges from every balancer),
// rescanning every redis.rescan_interval and after any Redis failure.
func (c *Cache) Run(ctx context.Context) error {
	if c.idx == nil {
		<-ctx.Done()
		return nil
	}
	if c.rs == nil {
		t := time.NewTicker(expireEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
				c.idx.Expire(c.now())
			}
		}
	}
	for {
		err := c.follow(ctx)
		if ctx.Err() != nil {
			return nil
		}
		c.m.errors.WithLabelValues(CacheSemantic, "sync").Inc()
		c.log.Warn("semantic cache: following Redis failed; starting over with a scan", "err", err)
		t := time.NewTimer(syncRetry)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// Synced is closed once the index has loaded Redis's vectors the first
// time (tests and readiness).
func (c *Cache) Synced() <-chan struct{} { return c.synced }

// follow scans, then follows the stream from where it stood before the
// scan, so that nothing inserted during the scan is missed.
func (c *Cache) follow(ctx context.Context) error {
	stream := c.rs.prefix + "events"
	last, err := c.lastEventID(ctx, stream)
	if err != nil {
		return err
	}
	if err := c.rescan(ctx); err != nil {
		return err
	}
	c.syncOnce.Do(func() { close(c.synced) })
	next := time.Now().Add(c.cfg.Redis.RescanInterval)
	for {
		if time.Now().After(next) {
			if err := c.rescan(ctx); err != nil {
				return err
			}
			next = time.Now().Add(c.cfg.Redis.RescanInterval)
		}
		res, err := c.rs.c.XRead(ctx, &redis.XReadArgs{Streams: []string{stream, last}, Count: 256, Block: time.Second}).Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return fmt.Errorf("redis xread: %w", err)
		}
		for _, s := range res {
			for _, msg := range s.Messages {
				last = msg.ID
				c.apply(ctx, msg.Values)
			}
		}
	}
}

// lastEventID returns the ID of the stream's newest event ("0-0": none).
func (c *Cache) lastEventID(ctx context.Context, stream string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Redis.Timeout)
	defer cancel()
	msgs, err := c.rs.c.XRevRangeN(ctx, stream, "+", "-", 1).Result()
	if err != nil {
		return "", fmt.Errorf("redis xrevrange: %w", err)
	}
	if len(msgs) == 0 {
		return "0-0", nil
	}
	return msgs[0].ID, nil
}

// apply applies one event.
func (c *Cache) apply(ctx context.Context, ev map[string]any) {
	str := func(k string) string { s, _ := ev[k].(string); return s }
	switch str("op") {
	case "add":
		key := str("key")
		gctx, cancel := context.WithTimeout(ctx, c.cfg.Redis.Timeout)
		b, err := c.rs.c.Get(gctx, c.rs.prefix+"v:"+key).Bytes()
		cancel()
		if errors.Is(err, redis.Nil) {
			return // expired or purged since
		}
		if err != nil {
			c.m.errors.WithLabelValues(CacheSemantic, "sync").Inc()
			return
		}
		c.addShared(key, b)
	case "purge":
		c.idx.PurgeTags(str("scope"), str("model"))
	}
}

// addShared indexes a vector record read from Redis under key.
func (c *Cache) addShared(key string, b []byte) {
	v, err := UnmarshalVector(b)
	if err != nil || v.ID != key {
		c.m.errors.WithLabelValues(CacheSemantic, "decode").Inc()
		return
	}
	if !c.now().Before(v.Expires) {
		return
	}
	if err := c.idx.Add(v, "the first vector in Redis at "+c.rs.prefix+"v:"+key); err != nil {
		c.embedFailed(err)
	}
}

// rescan loads every vector in Redis and drops the index's others.
func (c *Cache) rescan(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	keep := map[string]bool{}
	pfx := c.rs.prefix + "v:"
	iter := c.rs.c.Scan(ctx, 0, globEscape(pfx)+"*", 512).Iterator()
	var batch []string
	load := func() error {
		if len(batch) == 0 {
			return nil
		}
		vals, err := c.rs.c.MGet(ctx, batch...).Result()
		if err != nil {
			return fmt.Errorf("redis mget: %w", err)
		}
		for i, v := range vals {
			s, ok := v.(string)
			if !ok {
				continue
			}
			key := batch[i][len(pfx):]
			keep[key] = true
			c.addShared(key, []byte(s))
		}
		batch = batch[:0]
		return nil
	}
	for iter.Next(ctx) {
		if batch = append(batch, iter.Val()); len(batch) == 256 {
			if err := load(); err != nil {
				return err
			}
		}
	}
	if err := iter.Err(); err != nil {
		return fmt.Errorf("redis scan: %w", err)
	}
	if err := load(); err != nil {
		return err
	}
	c.idx.Retain(keep)
	return nil
}
