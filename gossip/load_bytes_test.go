package gossip

import (
	"encoding/hex"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/inferrail/inferrail/internal/load"
)

// An announcement's bytes are those of every released sidecar: the load
// fields are uint32 and uint64 varints and a float32, whatever the Go type
// that carries them (load.Report). The released hex was written by the
// release whose announcement carried gossip.Load; the blocks held (300, the
// varint 301 = ad02) follow it, and the released bytes alone decode with
// the blocks held unknown.
func TestAnnounceBytes(t *testing.T) {
	a := announce{From: "sidecar-0", SentAt: 1700000000123456789, Epoch: 7, Seq: 42,
		Load: load.Report{Running: 3, Waiting: 2, InFlight: 9, KVUsage: 0.4375, PrefillTokens: 12345, Pending: 4, HeldBlocks: 300,
			Origins: []load.Share{{Origin: "balancer-a", InFlight: 2, Pending: 1, PrefillTokens: 2048}, {Origin: "balancer-b", InFlight: 1}}}}
	const released = "100109736964656361722d30959a97ece39fe7cb170302090000e03eb960072a04020a62616c616e6365722d61020180100a62616c616e6365722d62010000"
	if got, want := hex.EncodeToString(a.marshal()), released+"ad02"; got != want {
		t.Errorf("marshal =\n%s\nwant\n%s", got, want)
	}
	if got := announceRoundTrip(t, a); !cmp.Equal(a, got) {
		t.Errorf("round trip: %s", cmp.Diff(a, got))
	}
	a.Load.HeldBlocks = -1
	b, _ := hex.DecodeString(released)
	h, body, err := decodeHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeAnnounce(h.from, body)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(a, got); diff != "" {
		t.Errorf("decode (-want +got):\n%s", diff)
	}
}

// Counts outside the wire's range are clamped, not wrapped: a negative count
// is 0 and one over uint32 is its maximum.
func TestAnnounceClampsCounts(t *testing.T) {
	got := announceRoundTrip(t, announce{From: "s", Load: load.Report{Running: -1, Waiting: 1 << 40, PrefillTokens: -5}})
	if got.Load.Running != 0 || got.Load.Waiting != 1<<32-1 || got.Load.PrefillTokens != 0 {
		t.Errorf("decoded %+v, want running 0, waiting %d, prefill tokens 0", got.Load, uint32(1<<32-1))
	}
}
