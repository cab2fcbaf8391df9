// Package zmqsub subscribes to an engine's KV-cache events over ZMQ: one SUB
// socket per data-parallel rank (tcp://host:base+rank), three-frame messages
// [topic, seq (8 bytes, big-endian), payload], decoded by an engine adapter.
//
// Per rank it tracks the last sequence number and turns the stream into an
// ordered feed of Updates:
//
//   - a gap (seq jumps ahead) is filled through the engine's replay ROUTER
//     socket when one is configured: a DEALER sends [b"", start_seq] to
//     replay_base+rank and reads batches until the end marker (an empty
//     payload), accepting both framings of docs/engines.md#vllm-replay ([topic, seq,
//     payload] since vLLM v0.25, [seq, payload] before and in SGLang),
//     dropping duplicates and stopping at the live message that revealed the
//     gap (the live stream carries it and what follows, so nothing numbered
//     from there on is taken from the replay, however much it sends);
//   - a gap that replay cannot fill (no replay socket, the ring no longer
//     reaches back, a timeout, an undecodable payload) yields
//     UpdateIncomplete: the consumer clears the rank and marks its summary
//     incomplete;
//   - a sequence number that goes backwards (or a reconnect that starts at 0)
//     means the publisher restarted: UpdateRestart, the consumer clears the
//     rank (the new engine process starts empty).
//
// The first message after start is checked against sequence 0, so a sidecar
// that starts next to a running engine replays its history or reports the rank
// incomplete. Sockets reconnect with jittered exponential backoff. After a
// reconnect, a gap may hide a publisher restart whose new sequence numbers
// already passed the old ones (vLLM has no publisher id), so the subscriber
// first asks the replay socket for the whole history from 0: when the ring
// still starts there, it sends UpdateRestart and rebuilds the rank from it.
//
// Every connection goes through internal/zmtpguard: a message over
// Config.MaxMessageBytes, or a handshake longer than DialTimeout, fails the
// connection before zmq4 allocates it (docs/adr/0010-zmtp-frame-limit.md).
//
// Not detectable: a sidecar that starts next to an idle engine which already
// holds blocks learns nothing until the engine publishes again.
package zmqsub
