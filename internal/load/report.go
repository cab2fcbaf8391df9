// Package load is the one shape of a replica's load between its sidecar and
// a balancer's routing policy (docs/routing.md#the-load-model).
//
// A sidecar writes a Report from its engine's last metrics page and its own
// exact data-path counts. The report travels unchanged in two ways: in every
// gossip announcement (gossip's codec, with every origin's share), and in the
// ORCA `endpoint-load-metrics` header of every response the sidecar proxies
// for a balancer (header.go, with that balancer's share). The balancer's
// fleet hands the newest of the two to balancer/route, with the time it
// arrived beside it (route.Load).
package load

// Report is a replica's load as its sidecar counted it when it wrote the
// report. The JSON names are those of the gossip's state page
// (/v1/gossip/state), which shows each member's last announced report.
type Report struct {
	// Running and Waiting are the engine's running and queued requests at
	// its last readable metrics page.
	Running int64 `json:"running"`
	Waiting int64 `json:"waiting"`
	// InFlight is the requests the sidecar is proxying, from every origin.
	InFlight int64 `json:"in_flight"`
	// KVUsage is the engine's KV cache usage in [0,1].
	KVUsage float64 `json:"kv_cache_usage"`
	// PrefillTokens is the uncached prompt tokens of the Pending requests:
	// the prefill work queued or running on the engine (the sidecar counts
	// each prompt past the prefix its block set holds at arrival).
	PrefillTokens int64 `json:"waiting_prefill_tokens"`
	// Pending is the part of InFlight whose prefill is not over (no first
	// token yet). An engine that reports more waiting requests than this
	// serves traffic that bypasses the sidecar.
	Pending int64 `json:"pending"`
	// HeldBlocks is the KV blocks the engine holds in GPU memory by the
	// sidecar's block set (from the engine's KV events, or the approximate
	// set built from the data path): running requests' full blocks and the
	// cached contexts of finished ones. Beside the capacity it tells how much
	// memory no context uses yet, which KVUsage (running requests only) does
	// not: a replica that just joined holds nothing. -1: unknown (a sender
	// that does not report it).
	HeldBlocks int64 `json:"blocks_held"`
	// Origins breaks InFlight, Pending and PrefillTokens down by the
	// balancer that sent the requests, the largest first, so that a balancer
	// can add the other balancers' share to its own exact counts without
	// counting its own twice. The gossip carries at most gossip.MaxOrigins;
	// the response header carries none (it carries the recipient's Share
	// beside the report).
	Origins []Share `json:"origins,omitempty"`
}

// Share is one origin's part of a Report's data-path counts.
type Share struct {
	// Origin names the balancer (its gossip node name, the Origin request
	// header).
	Origin string `json:"origin"`
	// InFlight, Pending and PrefillTokens are as in Report, for this origin.
	InFlight      int64 `json:"in_flight"`
	Pending       int64 `json:"pending"`
	PrefillTokens int64 `json:"prefill_tokens"`
}

// Share returns the share of the balancer named origin (zero counts when
// the report has none).
func (r *Report) Share(origin string) Share {
	for _, o := range r.Origins {
		if o.Origin == origin {
			return o
		}
	}
	return Share{Origin: origin}
}
