package gossip

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"

	"github.com/hashicorp/memberlist"
)

// DefaultNodeName is the node name used when none is configured: the host
// name and the gossip port ("host-7946"), so that several nodes on one host
// (each with its own port) get distinct names. With port 0 (chosen by the
// kernel) it is the host name and a random suffix.
func DefaultNodeName(port int) string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "node"
	}
	if port > 0 {
		return host + "-" + strconv.Itoa(port)
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return host + "-" + hex.EncodeToString(b[:])
}

// ErrNameConflict is wrapped by the error Run returns when the node's name is
// already taken by another member of the cluster it joins.
var ErrNameConflict = fmt.Errorf("gossip: node name conflict")

// conflicts adapts Node to memberlist.ConflictDelegate. memberlist calls it
// when a member announces a name it already knows at another address; the
// announcement is then ignored, so a newcomer whose name is taken would stay
// alone without a word. While the node is making its first join, a conflict
// about its own name makes Run fail; later ones (a newcomer claiming an
// established node's name) are logged.
type conflicts struct{ n *Node }

var _ memberlist.ConflictDelegate = conflicts{}

// NotifyConflict implements memberlist.ConflictDelegate.
func (c conflicts) NotifyConflict(existing, other *memberlist.Node) {
	n := c.n
	if existing.Name == n.cfg.NodeName && n.joining.Load() {
		err := fmt.Errorf("%w: the name %q is already used by the member at %s (this node is at %s); give every node a unique name (--node-name, gossip.node_name)",
			ErrNameConflict, existing.Name, other.Address(), existing.Address())
		select {
		case n.conflict <- err:
		default: // one is enough
		}
		return
	}
	n.warn.Warn("node name conflict: a member announces a name already in use; it is ignored",
		"member", other.Name, "addr", other.Address(), "known_addr", existing.Address())
}
