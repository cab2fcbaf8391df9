package gossip

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/inferrail/inferrail/gossip/summary"
)

// typeName labels metrics by message type.
func typeName(t byte) string {
	switch t {
	case msgAnnounce:
		return "announce"
	case msgSummary:
		return "summary"
	case msgResync:
		return "resync"
	case msgLeave:
		return "leave"
	case msgPlacements:
		return "placements"
	case msgLoad:
		return "load"
	default:
		return "unknown"
	}
}

// sendBestEffort sends msg over UDP, counting it.
func (n *Node) sendBestEffort(to *memberlist.Node, typ byte, msg []byte) {
	t := typeName(typ)
	n.m.messages.WithLabelValues("out", t).Inc()
	n.m.messageBytes.WithLabelValues("out", t).Add(float64(len(msg)))
	if err := n.ml.SendBestEffort(to, msg); err != nil {
		n.m.sendErrors.WithLabelValues(t).Inc()
		n.log.Debug("best-effort send failed", "to", to.Name, "type", t, "err", err)
	}
}

// tickLoop runs a sidecar's dissemination every LoadInterval, and expires
// departed members on every role.
func (n *Node) tickLoop(ctx context.Context) {
	// Jitter the first tick so a fleet started at once does not send in
	// lockstep.
	first := time.NewTimer(rand.N(n.cfg.LoadInterval) + 1)
	select {
	case <-ctx.Done():
		first.Stop()
		return
	case <-first.C:
	}
	t := time.NewTicker(n.cfg.LoadInterval)
	defer t.Stop()
	for {
		n.tick()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (n *Node) tick() {
	now := time.Now()
	n.peers.expire(now)
	if n.cfg.Role != RoleSidecar {
		return
	}
	snap := n.peers.View()
	var balancers, watchers []*memberlist.Node
	for i := range snap.Members {
		m := &snap.Members[i]
		if m.Self || m.Status != StatusAlive {
			continue
		}
		switch m.Meta.Role {
		case RoleBalancer:
			balancers = append(balancers, &m.ml)
			watchers = append(watchers, &m.ml)
		case RoleObserver:
			watchers = append(watchers, &m.ml)
		}
	}
	a := announce{From: n.cfg.NodeName, SentAt: now.UnixNano(), Load: *n.load.Load()}
	if box := n.src.Load(); box != nil {
		deltas, newEpoch := box.s.Flush()
		if newEpoch {
			n.epochChanged(box.s)
			for _, b := range balancers {
				n.queueSnapshot(b.Name, true)
			}
		}
		for _, d := range deltas {
			msg := marshalSummary(n.cfg.NodeName, d)
			for _, b := range balancers {
				n.sendBestEffort(b, msgSummary, msg)
			}
		}
		a.Epoch, a.Seq = box.s.Version()
	}
	msg := a.marshal()
	for _, w := range watchers {
		n.sendBestEffort(w, msgAnnounce, msg)
	}
}

// epochChanged puts the new summary epoch into the node's metadata.
func (n *Node) epochChanged(s SummarySource) {
	epoch, _ := s.Version()
	if n.Meta().SummaryEpoch == epoch {
		return
	}
	if err := n.UpdateMeta(func(m *Meta) { m.SummaryEpoch = epoch }); err != nil {
		n.log.Warn("update summary epoch in metadata", "err", err)
	}
}

// queueSnapshot asks the snapshot sender to send the summary to a balancer.
// A forced send (new epoch) ignores the per-balancer rate limit.
func (n *Node) queueSnapshot(name string, forced bool) {
	n.snapMu.Lock()
	n.snapPending[name] = n.snapPending[name] || forced
	n.snapMu.Unlock()
	select {
	case n.snapWake <- struct{}{}:
	default:
	}
}

// snapshotLoop sends queued snapshots on the reliable path, one at a time,
// so a slow balancer delays only snapshots, never announcements.
func (n *Node) snapshotLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.snapWake:
		}
		n.snapMu.Lock()
		pending := n.snapPending
		n.snapPending = make(map[string]bool)
		n.snapMu.Unlock()
		for name, forced := range pending {
			if ctx.Err() != nil {
				return
			}
			now := time.Now()
			if last, ok := n.snapSentAt[name]; ok && !forced && now.Sub(last) < n.cfg.ResyncInterval {
				continue // rate-limited: the balancer asks again
			}
			box := n.src.Load()
			m := n.peers.alive(name)
			if box == nil || m == nil || m.Meta.Role != RoleBalancer {
				continue
			}
			n.snapSentAt[name] = now
			msg := marshalSummary(n.cfg.NodeName, box.s.EncodeSnapshot())
			n.m.messages.WithLabelValues("out", "summary").Inc()
			n.m.messageBytes.WithLabelValues("out", "summary").Add(float64(len(msg)))
			n.m.resyncServed.Inc()
			if err := n.ml.SendReliable(&m.ml, msg); err != nil {
				n.m.sendErrors.WithLabelValues("summary").Inc()
				n.log.Warn("send snapshot failed", "to", name, "err", err)
			}
		}
		for name, at := range n.snapSentAt {
			if time.Since(at) > 10*n.cfg.ResyncInterval {
				delete(n.snapSentAt, name)
			}
		}
	}
}

// processLoop handles received messages in order.
func (n *Node) processLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case b := <-n.inbox:
			n.handle(b, time.Now())
		}
	}
}

func (n *Node) reject(reason string, from string, err error) {
	n.m.rejected.WithLabelValues(reason).Inc()
	n.log.Debug("message rejected", "reason", reason, "from", from, "err", err)
}

// handle processes one received message.
func (n *Node) handle(b []byte, now time.Time) {
	h, body, err := decodeHeader(b)
	if err != nil {
		n.reject("malformed", "", err)
		return
	}
	t := typeName(h.typ)
	n.m.messages.WithLabelValues("in", t).Inc()
	n.m.messageBytes.WithLabelValues("in", t).Add(float64(len(b)))
	m := n.peers.alive(h.from)
	if m == nil && h.typ == msgLeave && n.peers.leftLate(h.from, now) {
		return
	}
	if m == nil || m.Self {
		n.reject("unknown_sender", h.from, nil)
		return
	}
	switch h.typ {
	case msgAnnounce:
		if m.Meta.Role != RoleSidecar {
			n.reject("wrong_role", h.from, nil)
			return
		}
		a, err := decodeAnnounce(h.from, body)
		if err != nil {
			n.reject("malformed", h.from, err)
			return
		}
		n.onAnnounce(m, a, now)
	case msgSummary:
		if m.Meta.Role != RoleSidecar || n.cfg.Role != RoleBalancer {
			n.reject("wrong_role", h.from, nil)
			return
		}
		n.onSummary(m, body, now)
	case msgResync:
		if m.Meta.Role != RoleBalancer || n.cfg.Role != RoleSidecar || len(body) != 0 {
			n.reject("wrong_role", h.from, nil)
			return
		}
		n.queueSnapshot(h.from, false)
	case msgLeave:
		m.p.leavingAt.Store(now.UnixNano())
	case msgPlacements, msgLoad:
		if m.Meta.Role != RoleBalancer || n.cfg.Role != RoleBalancer {
			n.reject("wrong_role", h.from, nil)
			return
		}
		f := n.onPlacements.Load()
		if h.typ == msgLoad {
			f = n.onLoad.Load()
		}
		if f != nil {
			if err := (*f)(h.from, body, now); err != nil {
				n.reject("malformed", h.from, err)
			}
		}
	}
}

func (n *Node) onAnnounce(m *Member, a announce, now time.Time) {
	p := m.p
	p.load.Store(&Announcement{Load: a.Load, SentAt: sentTime(a.SentAt), ReceivedAt: now, Epoch: a.Epoch, Seq: a.Seq})
	if n.cfg.Role != RoleBalancer || a.Epoch == 0 {
		return
	}
	in := p.view.Info()
	behind := !in.Valid || in.Epoch < a.Epoch || in.Epoch == a.Epoch && in.Seq < a.Seq
	if !behind {
		p.behindSince = time.Time{}
		if in.Epoch == a.Epoch && in.Seq == a.Seq {
			p.confirmedAt.Store(now.UnixNano())
		}
		return
	}
	if p.behindSince.IsZero() {
		p.behindSince = now
	}
	if now.Sub(p.behindSince) >= n.cfg.ResyncAfter {
		n.requestResync(m, now)
	}
}

// maxEarly bounds the deltas held per sidecar while waiting for a missing
// one. memberlist hands user messages over newest first (its queue is LIFO),
// UDP may reorder too, and a new epoch's first deltas can overtake its
// snapshot (TCP), so deltas often arrive ahead of the view.
const maxEarly = 64

// version is a summary (epoch, seq).
type version struct{ epoch, seq uint64 }

func (n *Node) onSummary(m *Member, body []byte, now time.Time) {
	p := m.p
	err := p.view.Apply(body)
	switch {
	case err == nil:
		n.applied(m, body, now)
		n.drainEarly(m, now)
	case errors.Is(err, summary.ErrGap):
		typ, epoch, seq, _ := summary.Peek(body)
		in := p.view.Info()
		ahead := typ == summary.TypeDelta && (!in.Valid || epoch > in.Epoch || epoch == in.Epoch && seq > in.Seq+1)
		if ahead && len(p.early) < maxEarly {
			if p.early == nil {
				p.early = make(map[version][]byte)
			}
			p.early[version{epoch, seq}] = body
			if p.behindSince.IsZero() {
				p.behindSince = now
			}
			if now.Sub(p.behindSince) < n.cfg.ResyncAfter {
				return // the missing message may still come
			}
		}
		n.m.summaryGaps.Inc()
		n.requestResync(m, now)
	case errors.Is(err, summary.ErrStale):
	default:
		n.reject("malformed", m.Name, err)
	}
}

// drainEarly applies held deltas that now follow the view and drops those it
// has passed.
func (n *Node) drainEarly(m *Member, now time.Time) {
	p := m.p
	for len(p.early) > 0 {
		in := p.view.Info()
		v := version{in.Epoch, in.Seq + 1}
		next, ok := p.early[v]
		if !ok {
			break
		}
		delete(p.early, v)
		if p.view.Apply(next) != nil {
			break
		}
		n.applied(m, next, now)
	}
	if len(p.early) > 0 {
		in := p.view.Info()
		for v := range p.early {
			if v.epoch < in.Epoch || v.epoch == in.Epoch && v.seq <= in.Seq {
				delete(p.early, v)
			}
		}
		if len(p.early) > 0 && p.behindSince.IsZero() {
			p.behindSince = now // still waiting for a missing delta
		}
	}
}

// applied records a summary message applied to m's view.
func (n *Node) applied(m *Member, body []byte, now time.Time) {
	p := m.p
	p.confirmedAt.Store(now.UnixNano())
	p.behindSince = time.Time{}
	in := p.view.Info()
	typ, _ := summary.Type(body)
	if typ == summary.TypeSnapshot {
		if o := n.cfg.Observer; o != nil {
			o.SummaryApplied(m.Name, in.Epoch, in.Seq, time.Time{}, now)
		}
		return
	}
	if ns, err := summary.PeekOldest(body); err == nil && ns > 0 {
		oldest := time.Unix(0, ns)
		n.m.summaryLag.Observe(now.Sub(oldest).Seconds())
		if o := n.cfg.Observer; o != nil {
			o.SummaryApplied(m.Name, in.Epoch, in.Seq, oldest, now)
		}
	}
}

// requestResync asks a sidecar for a snapshot, at most once per
// ResyncInterval.
func (n *Node) requestResync(m *Member, now time.Time) {
	p := m.p
	if !p.lastResync.IsZero() && now.Sub(p.lastResync) < n.cfg.ResyncInterval {
		return
	}
	p.lastResync = now
	n.m.resyncRequested.Inc()
	n.sendBestEffort(&m.ml, msgResync, marshalResync(n.cfg.NodeName))
}
