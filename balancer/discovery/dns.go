package discovery

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/inferrail/inferrail/balancer/fleet"
)

// Resolver looks up a host name's IP addresses; *net.Resolver implements it.
// Implementations must be safe for concurrent use.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

var _ Resolver = (*net.Resolver)(nil)

// Sink receives each group's replicas; *fleet.Fleet implements it.
type Sink interface {
	SetDiscovered(group string, specs []fleet.Spec) error
}

var _ Sink = (*fleet.Fleet)(nil)

// NewResolver returns Go's resolver, asking server (host:port, over UDP and,
// for a truncated answer, TCP) for every name, or the system's servers from
// /etc/resolv.conf when server is "".
func NewResolver(server string) *net.Resolver {
	r := &net.Resolver{PreferGo: true}
	if server != "" {
		var d net.Dialer
		r.Dial = func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, server)
		}
	}
	return r
}

// Group is one set of DNS names whose addresses are replicas.
type Group struct {
	// Name names the group; a replica is named Name-IP-Port.
	Name string
	// Hosts are the DNS names resolved (A and AAAA).
	Hosts []string
	// Port is the replicas' port.
	Port int
	// Interval is the time between lookups; Timeout bounds one lookup.
	Interval, Timeout time.Duration
	// Replica is every replica's spec but its ID and URL (models, caps,
	// h2c, probe path...).
	Replica fleet.Spec
}

// DNS resolves groups into the fleet.
type DNS struct {
	groups []Group
	res    Resolver
	sink   Sink
	log    *slog.Logger
	m      *metrics

	mu   sync.Mutex                     // protects last
	last map[string]map[string][]string // group → host → its last known addresses (ip:port)
}

// New returns a DNS discovery of groups through res into sink. log may be nil
// and reg nil.
func New(groups []Group, res Resolver, sink Sink, log *slog.Logger, reg prometheus.Registerer) *DNS {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d := &DNS{groups: slices.Clone(groups), res: res, sink: sink, log: log, m: newMetrics(reg),
		last: make(map[string]map[string][]string)}
	for _, g := range groups {
		d.last[g.Name] = make(map[string][]string)
	}
	return d
}

// Refresh resolves every group once, concurrently, and updates the fleet.
func (d *DNS) Refresh(ctx context.Context) {
	var wg sync.WaitGroup
	for i := range d.groups {
		wg.Go(func() { d.refresh(ctx, &d.groups[i]) })
	}
	wg.Wait()
}

// Run resolves each group every interval until ctx ends; call Refresh first
// for the initial set. Refresh and Run must not run at the same time.
func (d *DNS) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for i := range d.groups {
		g := &d.groups[i]
		wg.Go(func() {
			t := time.NewTicker(g.Interval)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					d.refresh(ctx, g)
				}
			}
		})
	}
	wg.Wait()
	return nil
}

// refresh looks up g's hosts and hands the union of their addresses (each
// failed host's last known ones) to the sink.
func (d *DNS) refresh(ctx context.Context, g *Group) {
	d.mu.Lock()
	last := d.last[g.Name]
	d.mu.Unlock()
	next := make(map[string][]string, len(g.Hosts))
	for _, host := range g.Hosts {
		addrs, err := d.lookup(ctx, g, host)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			d.m.lookups.WithLabelValues(g.Name, "error").Inc()
			d.log.Warn("dns lookup failed; keeping the last known addresses", "group", g.Name, "host", host,
				"addresses", len(last[host]), "err", err)
			next[host] = last[host]
			continue
		}
		d.m.lookups.WithLabelValues(g.Name, "ok").Inc()
		next[host] = addrs
	}
	var all []string
	for _, host := range g.Hosts {
		for _, a := range next[host] {
			if !slices.Contains(all, a) {
				all = append(all, a)
			}
		}
	}
	slices.Sort(all)
	var before []string
	for _, addrs := range last {
		before = append(before, addrs...)
	}
	slices.Sort(before)
	before = slices.Compact(before)
	if !slices.Equal(all, before) {
		d.log.Info("dns group changed", "group", g.Name, "addresses", all, "before", before)
	}
	specs := make([]fleet.Spec, 0, len(all))
	for _, a := range all {
		specs = append(specs, g.spec(a))
	}
	if err := d.sink.SetDiscovered(g.Name, specs); err != nil {
		d.log.Error("discovered replicas refused", "group", g.Name, "err", err)
		return
	}
	d.m.replicas.WithLabelValues(g.Name).Set(float64(len(specs)))
	d.mu.Lock()
	d.last[g.Name] = next
	d.mu.Unlock()
}

// lookup returns host's addresses as sorted ip:port strings, within the
// group's timeout.
func (d *DNS) lookup(ctx context.Context, g *Group, host string) ([]string, error) {
	lctx, cancel := context.WithTimeout(ctx, g.Timeout)
	defer cancel()
	// Go's resolver reports NXDOMAIN and an answer without A or AAAA
	// records as errors too (net.DNSError.IsNotFound): like any failure,
	// they keep the name's last addresses.
	ips, err := d.res.LookupNetIP(lctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	out := make([]string, 0, len(ips))
	for _, ip := range ips {
		a := netip.AddrPortFrom(ip.Unmap(), uint16(g.Port)).String()
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	slices.Sort(out)
	return out, nil
}

// spec returns the replica of address a (ip:port).
func (g *Group) spec(a string) fleet.Spec {
	s := g.Replica
	s.Models = slices.Clone(g.Replica.Models)
	s.ID = ReplicaID(g.Name, a)
	s.URL = &url.URL{Scheme: "http", Host: a}
	s.Static, s.Group = true, g.Name
	return s
}

// ReplicaID names the replica of address a (ip:port) in group: group-ip-port,
// with an IPv6 address's colons as dashes.
func ReplicaID(group, a string) string {
	ap, err := netip.ParseAddrPort(a)
	if err != nil {
		return group + "-" + a
	}
	ip := strings.ReplaceAll(ap.Addr().String(), ":", "-")
	return group + "-" + ip + "-" + strconv.Itoa(int(ap.Port()))
}
