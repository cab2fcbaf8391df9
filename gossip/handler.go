package gossip

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/inferrail/inferrail/gossip/summary"
	"github.com/inferrail/inferrail/internal/load"
)

// Paths served by Handler.
const (
	MembersPath = "/v1/gossip/members"
	StatePath   = "/v1/gossip/state"
)

// MembersResponse is the JSON body of GET /v1/gossip/members.
type MembersResponse struct {
	Self    string       `json:"self"`
	Members []MemberInfo `json:"members"`
}

// MemberInfo is one member's identity and metadata.
type MemberInfo struct {
	Name        string    `json:"name"`
	Addr        string    `json:"addr"`
	Role        string    `json:"role"`
	Status      string    `json:"status"`
	StatusSince time.Time `json:"status_since"`
	Self        bool      `json:"self,omitempty"`
	Meta        Meta      `json:"meta"`
}

// StateResponse is the JSON body of GET /v1/gossip/state: what this node
// knows about each member's load and summary.
type StateResponse struct {
	Self    string        `json:"self"`
	Role    string        `json:"role"`
	At      time.Time     `json:"at"`
	Members []MemberState `json:"members"`
}

// MemberState is one member's load and summary as this node sees them.
type MemberState struct {
	Name    string        `json:"name"`
	Role    string        `json:"role"`
	Status  string        `json:"status"`
	Load    *LoadState    `json:"load,omitempty"`
	Summary *SummaryState `json:"summary,omitempty"`
}

// LoadState is a load report with its age.
type LoadState struct {
	load.Report
	AgeMS float64 `json:"age_ms"`
	Stale bool    `json:"stale"`
	// AnnouncedEpoch and AnnouncedSeq are the summary version the member
	// announced with this load.
	AnnouncedEpoch uint64 `json:"announced_epoch"`
	AnnouncedSeq   uint64 `json:"announced_seq"`
}

// SummaryState describes this node's copy of a member's summary.
type SummaryState struct {
	Epoch  uint64            `json:"epoch"`
	Seq    uint64            `json:"seq"`
	Blocks map[string]uint64 `json:"blocks"`
	Bytes  int               `json:"bytes"`
	AgeMS  float64           `json:"age_ms"`
	Stale  bool              `json:"stale"`
}

// Handler serves MembersPath and StatePath as JSON (GET and HEAD only).
func (n *Node) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+MembersPath, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, n.membersResponse())
	})
	mux.HandleFunc("GET "+StatePath, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, n.stateResponse(time.Now()))
	})
	return mux
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func (n *Node) membersResponse() MembersResponse {
	s := n.peers.View()
	resp := MembersResponse{Self: s.Self, Members: make([]MemberInfo, 0, len(s.Members))}
	for i := range s.Members {
		m := &s.Members[i]
		resp.Members = append(resp.Members, MemberInfo{
			Name: m.Name, Addr: m.Addr, Role: m.Meta.Role.String(), Status: m.Status.String(),
			StatusSince: m.StatusSince, Self: m.Self, Meta: m.Meta,
		})
	}
	return resp
}

func (n *Node) stateResponse(now time.Time) StateResponse {
	s := n.peers.View()
	resp := StateResponse{Self: s.Self, Role: n.cfg.Role.String(), At: now, Members: make([]MemberState, 0, len(s.Members))}
	for i := range s.Members {
		m := &s.Members[i]
		ms := MemberState{Name: m.Name, Role: m.Meta.Role.String(), Status: m.Status.String()}
		if m.Self {
			n.selfState(&ms, now)
		} else if lr, fresh, ok := m.Load(now); ok {
			ms.Load = &LoadState{Report: lr.Load, AgeMS: ms2(now.Sub(lr.ReceivedAt)), Stale: !fresh,
				AnnouncedEpoch: lr.Epoch, AnnouncedSeq: lr.Seq}
		}
		if v, fresh := m.Summary(now); !m.Self && v.Info().Valid {
			in := v.Info()
			st := &SummaryState{Epoch: in.Epoch, Seq: in.Seq, Bytes: in.Bytes, Stale: !fresh,
				AgeMS: ms2(now.Sub(m.SummaryConfirmedAt())), Blocks: make(map[string]uint64)}
			for md, c := range in.Blocks {
				if c > 0 {
					st.Blocks[summary.Medium(md).String()] = c
				}
			}
			ms.Summary = st
		}
		resp.Members = append(resp.Members, ms)
	}
	return resp
}

// blockCounter is the optional ability of a SummarySource to count its
// blocks per medium (*summary.Builder has it).
type blockCounter interface {
	Len(m summary.Medium) int
}

// selfState fills a sidecar's own row: the load it announces and the summary
// it publishes.
func (n *Node) selfState(ms *MemberState, now time.Time) {
	if n.cfg.Role != RoleSidecar {
		return
	}
	ms.Load = &LoadState{Report: *n.load.Load()}
	box := n.src.Load()
	if box == nil {
		return
	}
	epoch, seq := box.s.Version()
	ms.Load.AnnouncedEpoch, ms.Load.AnnouncedSeq = epoch, seq
	st := &SummaryState{Epoch: epoch, Seq: seq, Blocks: make(map[string]uint64)}
	if c, ok := box.s.(blockCounter); ok {
		for md := range summary.MaxMedia {
			if k := c.Len(summary.Medium(md)); k > 0 {
				st.Blocks[summary.Medium(md).String()] = uint64(k)
			}
		}
	}
	if snap, err := summary.UnmarshalSnapshot(box.s.EncodeSnapshot()); err == nil {
		for _, f := range snap.Filters {
			st.Bytes += 8 * len(f.Words)
		}
	}
	ms.Summary = st
}

// ms2 returns d in milliseconds rounded to 0.01.
func ms2(d time.Duration) float64 {
	return float64(d.Round(10*time.Microsecond)) / float64(time.Millisecond)
}
