// Package dnstest runs a DNS server on loopback for tests: UDP and TCP on one
// port, answering A and AAAA questions from a table the test changes as it
// goes, or failing every question (SERVFAIL) while told to. It is built on
// github.com/miekg/dns's server.
package dnstest

import (
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/miekg/dns"

	"github.com/inferrail/inferrail/internal/freeport"
)

// Server is a running DNS server.
type Server struct {
	// Addr is its 127.0.0.1:port, for UDP and TCP.
	Addr string

	udp, tcp *dns.Server

	mu      sync.Mutex // protects the fields below
	records map[string][]netip.Addr
	failing bool
	queries int
}

// Start starts a server on a free loopback port; it stops when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	// One port for UDP and TCP, from below the ephemeral range: a UDP port
	// from :0 may be in use for TCP as some connection's source port.
	var pc net.PacketConn
	var ln net.Listener
	for try := 0; ; try++ {
		port, err := freeport.Get()
		if err != nil {
			t.Fatal(err)
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if pc, err = net.ListenPacket("udp", addr); err == nil {
			if ln, err = net.Listen("tcp", addr); err == nil {
				break
			}
			pc.Close()
		}
		if try == 10 {
			t.Fatalf("dnstest: no port free for UDP and TCP: %v", err)
		}
	}
	s := &Server{Addr: pc.LocalAddr().String(), records: map[string][]netip.Addr{}}
	h := dns.HandlerFunc(s.serve)
	s.udp = &dns.Server{PacketConn: pc, Handler: h}
	s.tcp = &dns.Server{Listener: ln, Handler: h}
	var started sync.WaitGroup
	for _, srv := range []*dns.Server{s.udp, s.tcp} {
		started.Add(1)
		srv.NotifyStartedFunc = started.Done
		go func() { _ = srv.ActivateAndServe() }()
	}
	started.Wait()
	t.Cleanup(func() {
		_ = s.udp.Shutdown()
		_ = s.tcp.Shutdown()
	})
	return s
}

// Set makes name (with or without the final dot) answer addrs; no addrs
// makes it NXDOMAIN.
func (s *Server) Set(name string, addrs ...string) {
	var as []netip.Addr
	for _, a := range addrs {
		as = append(as, netip.MustParseAddr(a))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(as) == 0 {
		delete(s.records, dns.Fqdn(strings.ToLower(name)))
		return
	}
	s.records[dns.Fqdn(strings.ToLower(name))] = as
}

// Fail makes every question answer SERVFAIL (true) or the table again (false).
func (s *Server) Fail(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failing = on
}

// Queries returns how many questions the server answered.
func (s *Server) Queries() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queries
}

func (s *Server) serve(w dns.ResponseWriter, r *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(r)
	m.Authoritative = true
	s.mu.Lock()
	s.queries++
	failing := s.failing
	var addrs []netip.Addr
	found := false
	if len(r.Question) == 1 {
		addrs, found = s.records[strings.ToLower(r.Question[0].Name)]
	}
	s.mu.Unlock()
	switch {
	case failing || len(r.Question) != 1:
		m.Rcode = dns.RcodeServerFailure
	case !found:
		m.Rcode = dns.RcodeNameError
	default:
		q := r.Question[0]
		hdr := dns.RR_Header{Name: q.Name, Class: dns.ClassINET, Ttl: 1}
		for _, a := range addrs {
			switch {
			case q.Qtype == dns.TypeA && a.Is4():
				hdr.Rrtype = dns.TypeA
				m.Answer = append(m.Answer, &dns.A{Hdr: hdr, A: a.AsSlice()})
			case q.Qtype == dns.TypeAAAA && a.Is6():
				hdr.Rrtype = dns.TypeAAAA
				m.Answer = append(m.Answer, &dns.AAAA{Hdr: hdr, AAAA: a.AsSlice()})
			}
		}
	}
	_ = w.WriteMsg(m)
}
