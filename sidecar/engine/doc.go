// Package engine holds the engine-neutral view of an inference engine that the
// sidecar works with: KV-cache events (BlockStored, BlockRemoved,
// AllBlocksCleared) grouped in sequenced batches, and the load read from the
// engine's Prometheus page.
//
// Each engine kind has an adapter in a subpackage (vllm, sglang, llamacpp) that turns
// its wire formats into these types; the subscriber (zmqsub) and the block set
// (sidecar/blockset) only see engine-neutral values. The metrics page parsing
// shared by the adapters lives here: a page is parsed with
// prometheus/common/expfmt under a byte limit, and a table of metric names per
// engine picks the families (ParseLoad). A page that lacks a required family
// is reported as unreadable (ErrUnreadable), never as an idle engine.
package engine
