// Package summary is the compact prefix summary a sidecar publishes about the
// KV blocks its engine holds, and the view a balancer keeps of it.
//
// A summary is one bloom filter (bits-and-blooms/bloom/v3) per storage medium
// (GPU, CPU offload, ...) over the router block hashes of internal/kvblock,
// versioned as (epoch, seq). An epoch is a full rebuild from the exact block
// set, which is how removed blocks leave the filter's bits (bloom filters
// cannot delete); within an epoch, deltas carry additions and removals in
// order, and a receiver answers "not held" for a key removed since the build
// (its Gone list) until the next epoch. The sidecar side is the Builder:
// Add and Remove follow the engine's KV events, Flush turns pending changes
// into numbered delta messages, EncodeSnapshot encodes the whole summary, and a
// rebuild (new epoch) happens when removals pass a threshold, the set outgrows
// the filter, or a period elapses. The balancer side is the View: Apply takes a
// snapshot or a delta, detects gaps in the sequence (ErrGap: ask for a
// resync), and LongestPrefix walks a prompt's chained block hashes and stops
// at the first miss.
//
// A filter never reports a false negative for a block added in its epoch. A
// false positive, at rate p, can extend a longest-prefix match by a short
// geometric tail (about p extra blocks on average).
//
// Wire formats (every message starts with a type byte and a version byte,
// integers are unsigned varints unless noted):
//
//	snapshot: 0x01 0x02 epoch seq n:u8 filters{ medium:u8 count m k:u8 words:m/64×u64le ngone gone:ngone×u32le }
//	delta:    0x02 0x02 epoch seq oldest_unix_nano runs{ medium:u8 n keys:n×u32le }
//
// A delta run's medium byte has its high bit set (0x80) for a run of
// removals. Filters are built over 32-bit keys (KeyOf: the hash's halves
// folded), so a delta costs 4 bytes per block.
//
// The View reads are lock-free: filters are bit arrays updated with atomic
// OR (bits only ever get set within an epoch) and each new epoch or sequence
// is published through an atomic pointer.
package summary
