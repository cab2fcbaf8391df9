package gossip

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// ClusterView is one node's view as served on its admin port: both
// MembersPath and StatePath. `inferrail members` prints it.
type ClusterView struct {
	Members MembersResponse `json:"members"`
	State   StateResponse   `json:"state"`
}

// Fetch reads a node's view from its admin address (host:port, or a URL with
// scheme http or https).
func Fetch(ctx context.Context, hc *http.Client, addr string) (*ClusterView, error) {
	base := addr
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	base = strings.TrimRight(base, "/")
	v := &ClusterView{}
	if err := getJSON(ctx, hc, base+MembersPath, &v.Members); err != nil {
		return nil, err
	}
	if err := getJSON(ctx, hc, base+StatePath, &v.State); err != nil {
		return nil, err
	}
	return v, nil
}

func getJSON(ctx context.Context, hc *http.Client, url string, into any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("get %s: %w", url, err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("get %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("get %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(into); err != nil {
		return fmt.Errorf("decode %s: %w", url, err)
	}
	return nil
}

// WriteTable prints the view as a table: one row per member with its role,
// status, address, load and its age, and the summary version, size and age
// as the queried node holds them ("-" where it has none).
func (v *ClusterView) WriteTable(w io.Writer) error {
	state := make(map[string]MemberState, len(v.State.Members))
	for _, s := range v.State.Members {
		state[s.Name] = s
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "view of %s (%s) at %s\n", v.Members.Self, v.State.Role, v.State.At.Format(time.RFC3339))
	fmt.Fprintln(tw, "NAME\tROLE\tSTATUS\tADDR\tMODELS\tLOAD (run/wait/kv)\tLOAD AGE\tSUMMARY EPOCH.SEQ\tBLOCKS\tSIZE\tSUMMARY AGE")
	for _, m := range v.Members.Members {
		name := m.Name
		if m.Self {
			name += " *"
		}
		s := state[m.Name]
		load, loadAge := "-", "-"
		if l := s.Load; l != nil {
			load = fmt.Sprintf("%d/%d/%.0f%%", l.Running, l.Waiting, 100*l.KVUsage)
			loadAge = age(l.AgeMS, l.Stale)
		}
		ver, blocks, size, sumAge := "-", "-", "-", "-"
		if sm := s.Summary; sm != nil {
			ver = strconv.FormatUint(sm.Epoch, 10) + "." + strconv.FormatUint(sm.Seq, 10)
			var parts []string
			for _, medium := range []string{"gpu", "cpu", "medium2", "medium3"} {
				if c, ok := sm.Blocks[medium]; ok {
					parts = append(parts, fmt.Sprintf("%s:%d", medium, c))
				}
			}
			blocks = strings.Join(parts, ",")
			if blocks == "" {
				blocks = "0"
			}
			size = fmt.Sprintf("%.1fKiB", float64(sm.Bytes)/1024)
			sumAge = age(sm.AgeMS, sm.Stale)
		} else if m.Meta.SummaryEpoch != 0 {
			ver = strconv.FormatUint(m.Meta.SummaryEpoch, 10)
		}
		models := strings.Join(m.Meta.Models, ",")
		if models == "" {
			models = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, m.Role, m.Status, m.Addr, models,
			load, loadAge, ver, blocks, size, sumAge)
	}
	return tw.Flush()
}

func age(ms float64, stale bool) string {
	s := (time.Duration(ms * float64(time.Millisecond))).Round(time.Millisecond).String()
	if stale {
		s += " (stale)"
	}
	return s
}
