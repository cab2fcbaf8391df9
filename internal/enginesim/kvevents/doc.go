// Package kvevents is the simulator's KV-cache event publisher: it publishes
// the prefix cache's BlockStored, BlockRemoved and AllBlocksCleared events
// over ZMQ exactly as vLLM's ZmqEventPublisher does, so a consumer (the
// inferrail sidecar, llm-d, Dynamo) cannot tell the simulator from vLLM.
//
// The wire contract (see the engines reference, section 1):
//
//   - Config is vLLM's --kv-events-config JSON (ParseConfig).
//   - One PUB socket per data-parallel rank on EndpointForRank(endpoint, rank);
//     it binds when the endpoint contains "*" or "::" or starts with ipc:// or
//     inproc://, and connects otherwise.
//   - Each engine step with events is one 3-frame message
//     [topic, seq (8 bytes, big-endian, from 0), payload], where payload is the
//     msgspec msgpack encoding of [ts, events, data_parallel_rank].
//   - Events are tagged maps (FormatMap, vLLM v0.24+) or positional arrays
//     (FormatArray, v0.22–v0.23; FormatArrayV010, v0.10.2–v0.13 and SGLang).
//   - An optional ROUTER socket on the replay endpoint answers
//     [identity, "", start_seq] with every buffered batch whose seq >= start_seq
//     as [topic, seq, payload] (v0.25+ framing), then the end marker
//     ["", 0xFFFFFFFFFFFFFFFF, ""].
//
// Publisher implements enginesim.KVEventSink. Its sink methods are called from
// the engine's step loop and never block: events accumulate until EndStep,
// which hands the step's batch to a bounded queue (a full queue drops the
// batch and counts it). Run drains the queue, encodes and sends.
package kvevents
