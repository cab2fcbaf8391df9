// Package epp serves the Gateway API Inference Extension's endpoint-picker
// protocol: Envoy's external processing service (ext_proc v3) over
// bidirectional gRPC, plus the gRPC health services a gateway probes.
//
// A gateway (Envoy Gateway, kgateway, Istio, GKE Gateway, ...) opens one
// ext_proc stream per HTTP request and streams its headers and body; the
// Server collects them, asks a Picker where the request goes, and answers
// with the x-gateway-destination-endpoint header and the matching envoy.lb
// dynamic metadata (a comma list: the first endpoint, then the fallbacks),
// or with an immediate response (503 when nothing is ready, 429 when
// shedding, the Picker's error otherwise). It reads back the endpoint that
// served the request (x-gateway-destination-endpoint-served) and tells the
// Picker's Lease, so the picker's own counts follow the request to its end.
//
// The package knows the protocol and nothing about routing; the balancer
// implements Picker with the same parse, tokenize, policy and counters as its
// proxy mode. The protocol, its sources and what is not implemented are in
// docs/epp.md.
package epp
