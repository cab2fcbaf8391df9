package gossip

import (
	"fmt"
	"sync/atomic"
	"time"
)

// This file is the gossip's balancer-to-balancer messages: bodies the
// balancers encode and decode themselves, sent on the best-effort path to
// every other alive balancer. Two kinds: a balancer's recent placements
// (SendPlacements) and its own load on each replica (SendLoad).

// MaxPlacementsBytes bounds the body of one SendPlacements or SendLoad
// message, so that with its header and memberlist's framing it fits one UDP
// packet on any path (as summary deltas do).
const MaxPlacementsBytes = 1200

// BalancerHandler receives another balancer's message body: from is the
// sending balancer's name, body what it passed to SendPlacements or SendLoad.
// An error counts the message as malformed
// (inferrail_gossip_messages_rejected_total).
type BalancerHandler func(from string, body []byte, now time.Time) error

// SendPlacements sends body, a balancer's batch of recent placements, to
// every other alive balancer on the best-effort path (one UDP packet each,
// lost or reordered at times: placements are hints that expire by
// themselves). The gossip does not look inside body; the receivers'
// SetPlacementHandler decodes it. Only a balancer sends placements.
func (n *Node) SendPlacements(body []byte) error { return n.sendToBalancers(msgPlacements, body) }

// SendLoad sends body, a balancer's own load on the replicas it proxies to,
// to every other alive balancer on the best-effort path, as SendPlacements
// does. The receivers' SetLoadHandler decodes it. Only a balancer sends it.
func (n *Node) SendLoad(body []byte) error { return n.sendToBalancers(msgLoad, body) }

func (n *Node) sendToBalancers(typ byte, body []byte) error {
	if n.cfg.Role != RoleBalancer {
		return fmt.Errorf("gossip: only a balancer sends %s, not a %s", typeName(typ), n.cfg.Role)
	}
	if len(body) > MaxPlacementsBytes {
		return fmt.Errorf("gossip: %s of %d bytes, over %d", typeName(typ), len(body), MaxPlacementsBytes)
	}
	var msg []byte
	snap := n.peers.View()
	for i := range snap.Members {
		m := &snap.Members[i]
		if m.Self || m.Status != StatusAlive || m.Meta.Role != RoleBalancer {
			continue
		}
		if msg == nil {
			msg = appendHeader(make([]byte, 0, 8+len(n.cfg.NodeName)+len(body)), typ, n.cfg.NodeName)
			msg = append(msg, body...)
		}
		n.sendBestEffort(&m.ml, typ, msg)
	}
	return nil
}

// SetPlacementHandler sets the function that receives other balancers'
// placements, in the order the node processes its messages (one at a time,
// so it must be quick); nil drops them.
func (n *Node) SetPlacementHandler(f BalancerHandler) { setHandler(&n.onPlacements, f) }

// SetLoadHandler sets the function that receives other balancers' load, as
// SetPlacementHandler does for placements.
func (n *Node) SetLoadHandler(f BalancerHandler) { setHandler(&n.onLoad, f) }

func setHandler(p *atomic.Pointer[BalancerHandler], f BalancerHandler) {
	if f == nil {
		p.Store(nil)
		return
	}
	p.Store(&f)
}
