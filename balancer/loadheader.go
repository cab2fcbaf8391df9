package balancer

import (
	"io"
	"net/http"
	"time"

	"github.com/inferrail/inferrail/balancer/fleet"
	"github.com/inferrail/inferrail/gossip"
	"github.com/inferrail/inferrail/internal/load"
)

// observeLoad records the load report a sidecar sent in resp's headers and
// arranges for the one in its trailer to be recorded when the body ends; both
// are removed, so the client never sees them.
func (b *Balancer) observeLoad(rep *fleet.Replica, resp *http.Response) {
	if v := resp.Header.Get(load.Header); v != "" {
		resp.Header.Del(load.Header)
		b.recordReport(rep, v)
	}
	if _, ok := resp.Trailer[load.Header]; ok {
		delete(resp.Trailer, load.Header) // not announced to the client
		resp.Body = &trailerReport{ReadCloser: resp.Body, resp: resp, b: b, rep: rep}
	}
}

func (b *Balancer) recordReport(rep *fleet.Replica, v string) {
	r, own, err := load.ParseHeader(v)
	if err != nil {
		b.m.loadReports.WithLabelValues("malformed").Inc()
		return
	}
	b.m.loadReports.WithLabelValues("ok").Inc()
	own.Origin = b.name
	rep.ObserveReport(r, own, b.now())
}

// trailerReport records the load report of a response's trailer once its
// body has ended, and drops it from the trailer.
type trailerReport struct {
	io.ReadCloser
	resp *http.Response
	b    *Balancer
	rep  *fleet.Replica
	done bool
}

func (t *trailerReport) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	if err == io.EOF && !t.done {
		t.done = true
		if vs := t.resp.Trailer[load.Header]; len(vs) > 0 {
			t.b.recordReport(t.rep, vs[0])
		}
		delete(t.resp.Trailer, load.Header)
	}
	return n, err
}

// loadTimings returns the gossip's load timings for the balancer's gossip
// section: maxAge, the staleness limit the fleet judges response reports
// and the other balancers' load by, as the gossip judges announcements
// (fleet.Config.LoadMaxAge); and interval, the sidecars' announcement
// period, which is also how often a balancer resends all its own load
// (fleet.Fleet.ShareLoad).
func loadTimings(t gossip.Timings) (maxAge, interval time.Duration) {
	c := gossip.DefaultConfig()
	t.Apply(&c)
	return c.LoadMaxAge, c.LoadInterval
}
