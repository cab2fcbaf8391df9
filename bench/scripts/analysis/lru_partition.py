"""A model of W2's conversations on replicas with plain block LRU caches and
no memory pinned by running requests: does an uneven split of conversations
over the replicas keep more contexts than an even one? Conversations arrive
at RATE a second for DUR s (4 groups of a 32-block system prompt; 6 turns of
16 user blocks and 8 answer blocks; think ~Exp(2 s); each turn takes 1.1 s);
each replica holds 4,096 blocks. Prints the token hit rate after WARM s and
the requests and hit rate per replica for: new conversations to the replica
with the fewest in flight, later turns home ("sticky"); the same with a turn
whose context is gone home moved to the replica with the fewest in flight
("move"); and new conversations split by fixed shares, one replica given f
("uneven f").
Usage: lru_partition.py [SEEDS...]"""
import collections
import heapq
import random
import sys


def run(policy, frac=None, seed=1, rate=24, dur=20, warm=5, cap=4096, replicas=4, think=2.0, took=1.1):
    rng = random.Random(seed)
    lru = [collections.OrderedDict() for _ in range(replicas)]
    events, t, c = [], 0.0, 0
    while t < dur:
        t += rng.expovariate(rate)
        heapq.heappush(events, (t, 0, c, 0, None))
        c += 1
    home, inflight = {}, [0] * replicas
    hit = tok = 0
    per = collections.Counter()
    perh = collections.defaultdict(lambda: [0, 0])

    def blocks(cv, turn):
        return [("s", cv % 4, i) for i in range(32)] + [("c", cv, i) for i in range(turn * 24 + 16)]

    def match(r, bs):
        n = 0
        for x in bs:
            if x not in lru[r]:
                break
            n += 1
        return n

    def touch(r, bs):
        cache = lru[r]
        for x in bs:
            if x in cache:
                cache.move_to_end(x)
            else:
                cache[x] = 1
        while len(cache) > cap:
            cache.popitem(last=False)

    def emptiest():
        return min(range(replicas), key=lambda i: (inflight[i], rng.random()))

    while events:
        t, kind, cv, turn, r = heapq.heappop(events)
        if kind == 1:  # the turn ends: its answer's blocks
            inflight[r] -= 1
            touch(r, [("c", cv, turn * 24 + 16 + i) for i in range(8)])
            if turn < 5:
                heapq.heappush(events, (t + rng.expovariate(1 / think), 0, cv, turn + 1, None))
            continue
        bs = blocks(cv, turn)
        if turn == 0:
            r = rng.choices(range(replicas), weights=frac)[0] if policy == "uneven" else emptiest()
        else:
            r = home[cv]
            if policy == "move" and match(r, bs) <= 32:
                r = emptiest()
        home[cv] = r
        m = match(r, bs)
        if t > warm:
            hit += m
            tok += len(bs)
            per[r] += 1
            perh[r][0] += m
            perh[r][1] += len(bs)
        touch(r, bs)
        inflight[r] += 1
        heapq.heappush(events, (t + took, 1, cv, turn, r))
    return (round(hit / tok, 3), [per[i] for i in range(replicas)],
            [round(perh[i][0] / max(1, perh[i][1]), 2) for i in range(replicas)])


for s in [int(a) for a in sys.argv[1:]] or [1, 2]:
    print("seed", s)
    print("  sticky", *run("sticky", seed=s))
    print("  move", *run("move", seed=s))
    for f in (0.15, 0.2, 0.25):
        print("  uneven", f, *run("uneven", frac=[f] + [(1 - f) / 3] * 3, seed=s))
