package gossip

import (
	"fmt"
	"time"
)

// MaxPlacementsBytes bounds the body of one SendPlacements message, so that
// with its header and memberlist's framing it fits one UDP packet on any
// path (as summary deltas do).
const MaxPlacementsBytes = 1200

// SendPlacements sends body, a balancer's batch of recent placements, to
// every other alive balancer on the best-effort path (one UDP packet each,
// lost or reordered at times: placements are hints that expire by
// themselves). The gossip does not look inside body; the receivers'
// SetPlacementHandler decodes it. Only a balancer sends placements.
func (n *Node) SendPlacements(body []byte) error {
	if n.cfg.Role != RoleBalancer {
		return fmt.Errorf("gossip: only a balancer sends placements, not a %s", n.cfg.Role)
	}
	if len(body) > MaxPlacementsBytes {
		return fmt.Errorf("gossip: placements of %d bytes, over %d", len(body), MaxPlacementsBytes)
	}
	var msg []byte
	snap := n.peers.View()
	for i := range snap.Members {
		m := &snap.Members[i]
		if m.Self || m.Status != StatusAlive || m.Meta.Role != RoleBalancer {
			continue
		}
		if msg == nil {
			msg = appendHeader(make([]byte, 0, 8+len(n.cfg.NodeName)+len(body)), msgPlacements, n.cfg.NodeName)
			msg = append(msg, body...)
		}
		n.sendBestEffort(&m.ml, msgPlacements, msg)
	}
	return nil
}

// SetPlacementHandler sets the function that receives other balancers'
// placements, in the order the node processes its messages (one at a time,
// so it must be quick); nil drops them. from is the sending balancer's name,
// body what it passed to SendPlacements. An error from f counts the message
// as malformed (inferrail_gossip_messages_rejected_total).
func (n *Node) SetPlacementHandler(f func(from string, body []byte, now time.Time) error) {
	if f == nil {
		n.onPlacements.Store(nil)
		return
	}
	n.onPlacements.Store(&f)
}
