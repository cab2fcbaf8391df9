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
		{"unknown flag", []byte{4, 1, 0}},
		{"answers over in flight", append([]byte{peerFlagAnswers, 1, 1}, appendRaw(7, 1, 0, 0, 0, 0, 0, 2, 2, 5, 2, 5)...)},
		{"answer without a reserve", append([]byte{peerFlagAnswers, 1, 1}, appendRaw(7, 1, 0, 0, 0, 0, 0, 1, 2, 0)...)},
		{"truncated answer", append([]byte{peerFlagAnswers, 1, 1}, appendRaw(7, 2, 0, 0, 0, 0, 0, 2, 2, 5, 2)...)},
		{"answer left over the bound", append([]byte{peerFlagAnswers, 1, 1}, appendRaw(7, 1, 0, 0, 0, 0, 0, 1, maxPeerLeft+1, 5)...)},
		{"answers over their bytes", append([]byte{peerFlagAnswers, 1, 1}, appendRaw(7, append([]uint64{200, 0, 0, 0, 0, 0, 200}, bigAnswers(200)...)...)...)},
		{"answers without the flag", append([]byte{0, 1, 1}, appendRaw(7, 1, 0, 0, 0, 0, 0, 1, 2, 5)...)},
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

// bigAnswers is n answers' fields of the most bytes each.
func bigAnswers(n int) []uint64 {
	var v []uint64
	for range n {
		v = append(v, maxPeerLeft, maxPeerTokens)
	}
	return v
}

// A record's answers go out soonest first, at most as many as are in flight,
// none without a reserve, within their bytes; they come back as sent.
func TestPeerAnswersRoundTrip(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	as := []route.PeerAnswer{{Left: 3, Started: true, Reserve: 64}, {Left: 0, Reserve: 0}, {Left: 120, Reserve: 128}, {Left: 500, Reserve: 512}}
	w := route.Work{InFlight: 2, OutputReserve: 192}
	msg := []byte{peerFlagAnswers, 1, 1}
	msg = appendPeerRecord(msg, 7, w, now)
	msg = appendPeerAnswers(msg, as, w.InFlight)
	var got []peerRecord
	if _, _, err := decodePeerLoad(msg, now, func(r peerRecord) { got = append(got, r) }); err != nil {
		t.Fatal(err)
	}
	want := []route.PeerAnswer{{Left: 3, Started: true, Reserve: 64}, {Left: 120, Reserve: 128}}
	if len(got) != 1 || !cmp.Equal(got[0].answers, want) {
		t.Fatalf("decoded %+v, want one record with answers %+v", got, want)
	}
	many := make([]route.PeerAnswer, maxPeerAnswers)
	for i := range many {
		many[i] = route.PeerAnswer{Left: 1 << 30, Reserve: 1 << 40}
	}
	b := appendPeerAnswers(nil, many, len(many))
	n, k := binary.Uvarint(b)
	if n == 0 || len(b)-k > peerAnswersBytes || int(n) >= len(many) {
		t.Errorf("%d answers in %d bytes, want fewer than %d in at most %d", n, len(b)-k, len(many), peerAnswersBytes)
	}
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
	f.Add(append([]byte{peerFlagAnswers, 1, 1}, appendRaw(7, 2, 0, 0, 0, 0, 9, 2, 7, 5, 200, 9)...))
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
			if flags&peerFlagAnswers != 0 {
				msg = appendPeerAnswers(msg, r.answers, r.w.InFlight)
			}
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
