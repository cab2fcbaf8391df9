package fleet

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/inferrail/inferrail/balancer/route"
)

// Malformed load messages are refused with errPeerLoad and a reason.
func TestDecodePeerLoadRejects(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	rec := appendPeerRecord(nil, 7, route.Work{InFlight: 2, Pending: 1, PrefillTokens: 100, StepTokens: 50}, now)
	for _, tc := range []struct {
		name string
		body []byte
	}{
		{"empty", nil},
		{"unknown flag", []byte{2, 1, 0}},
		{"no seq", []byte{0}},
		{"no count", []byte{0, 1}},
		{"more records than bytes", []byte{0, 1, 5, 1, 2, 3}},
		{"truncated record", append([]byte{0, 1, 1}, rec[:len(rec)-1]...)},
		{"bytes after the records", append(append([]byte{0, 1, 1}, rec...), 0)},
		{"pending over in flight", append([]byte{0, 1, 1}, appendRaw(7, 1, 2, 0, 0, 0, 0)...)},
		{"step over prefill", append([]byte{0, 1, 1}, appendRaw(7, 1, 1, 10, 11, 0, 0)...)},
		{"in flight over the bound", append([]byte{0, 1, 1}, appendRaw(7, maxPeerCount+1, 0, 0, 0, 0, 0)...)},
		{"step age over the bound", append([]byte{0, 1, 1}, appendRaw(7, 1, 1, 10, 5, maxStepAge+1, 0)...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			if _, _, err := decodePeerLoad(tc.body, now, func(peerRecord) { n++ }); !errors.Is(err, errPeerLoad) {
				t.Errorf("err %v, want errPeerLoad", err)
			}
		})
	}
}

// appendRaw is a record with the given fields, unchecked.
func appendRaw(key uint64, v ...uint64) []byte {
	b := appendPeerRecord(nil, key, route.Work{}, time.Time{})[:8]
	for _, x := range v {
		b = binary.AppendUvarint(b, x)
	}
	return b
}

// FuzzDecodePeerLoad: no input panics, and whatever decodes re-encodes to a
// message that decodes alike.
func FuzzDecodePeerLoad(f *testing.F) {
	now := time.Unix(1_000_000, 0)
	f.Add(loadMsg(peerFlagReset, 3, now, map[string]route.Work{
		"a": {InFlight: 3, Pending: 2, PrefillTokens: 900, StepTokens: 400, StepStart: now.Add(-time.Second), OutputReserve: 70},
		"b": {InFlight: 1},
	}))
	f.Add([]byte{0, 1, 0})
	f.Fuzz(func(t *testing.T, body []byte) {
		var recs []peerRecord
		flags, seq, err := decodePeerLoad(body, now, func(r peerRecord) { recs = append(recs, r) })
		if err != nil {
			if !errors.Is(err, errPeerLoad) {
				t.Fatalf("error %v does not wrap errPeerLoad", err)
			}
			return
		}
		msg := []byte{flags}
		msg = binary.AppendUvarint(msg, seq)
		msg = binary.AppendUvarint(msg, uint64(len(recs)))
		for _, r := range recs {
			msg = appendPeerRecord(msg, r.replica, r.w, now)
		}
		var again []peerRecord
		if _, _, err := decodePeerLoad(msg, now, func(r peerRecord) { again = append(again, r) }); err != nil {
			t.Fatalf("re-encoded message does not decode: %v", err)
		}
		if diff := cmp.Diff(recs, again, cmp.AllowUnexported(peerRecord{})); diff != "" {
			t.Fatalf("re-encoded records differ:\n%s", diff)
		}
	})
}
