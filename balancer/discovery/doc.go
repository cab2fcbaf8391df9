// Package discovery finds replicas in DNS: each address the names of a group
// resolve to (A and AAAA records, e.g. a Kubernetes headless Service, which
// answers with one record per ready pod) becomes a replica of the balancer's
// fleet, for engines that run without a sidecar.
//
// DNS.Refresh resolves every group once (the balancer does it before it
// serves) and DNS.Run then every group's interval; each hands the group's set to the fleet (fleet.Fleet.SetDiscovered): an address
// that stays keeps its replica and that replica's state (counters, health,
// TTFT correction), a new one becomes a replica, and one that is gone stops
// taking new requests while those it runs finish (it is drained, not marked
// down). A lookup that fails (a timeout, SERVFAIL, an unreachable server, and
// also NXDOMAIN or an answer without addresses, which Go's resolver reports
// as errors) keeps that name's last known addresses: a DNS outage does not
// empty the fleet, and the health probes take out an address that died.
//
// The resolver is Go's own (net.Resolver with PreferGo), reading
// /etc/resolv.conf for search domains and servers, or pointed at one server
// (DNSConfig.Resolver) by its Dial; it keeps no cache, so every interval asks
// the server. See docs/balancer.md#dns-discovery.
package discovery
