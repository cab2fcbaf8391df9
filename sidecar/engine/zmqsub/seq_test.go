package zmqsub

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSeqState(t *testing.T) {
	type step struct {
		seq     uint64
		replay  uint64 // when > 0 after a gap: the replay applied up to this seq
		want    action
		wantNew uint64 // want() afterwards
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"in order from zero", []step{{seq: 0, want: actApply, wantNew: 1}, {seq: 1, want: actApply, wantNew: 2}}},
		{"first message after start is late", []step{{seq: 5, want: actGap, wantNew: 6}}},
		{"gap", []step{{seq: 0, want: actApply, wantNew: 1}, {seq: 3, want: actGap, wantNew: 4}}},
		{"replay overtakes the live stream", []step{{seq: 0, want: actApply, wantNew: 1}, {seq: 2, replay: 4, want: actGap, wantNew: 5},
			{seq: 3, want: actDuplicate, wantNew: 5}, {seq: 4, want: actDuplicate, wantNew: 5}, {seq: 5, want: actApply, wantNew: 6}}},
		{"backwards is a restart", []step{{seq: 0, want: actApply, wantNew: 1}, {seq: 1, want: actApply, wantNew: 2},
			{seq: 0, want: actRestart, wantNew: 1}}},
		{"same seq again is a restart", []step{{seq: 0, want: actApply, wantNew: 1}, {seq: 0, want: actRestart, wantNew: 1}}},
		{"restart seen late", []step{{seq: 0, want: actApply, wantNew: 1}, {seq: 9, want: actGap, wantNew: 10},
			{seq: 3, want: actRestart, wantNew: 0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s seqState
			var got, want []action
			for _, st := range tc.steps {
				a := s.observe(st.seq)
				got, want = append(got, a), append(want, st.want)
				switch a {
				case actApply:
					s.done(st.seq)
				case actGap:
					if st.replay > 0 {
						s.done(st.replay)
					} else {
						s.done(st.seq) // gave up: cleared and continued
					}
				case actRestart:
					s.restart()
					if s.observe(st.seq) == actApply {
						s.done(st.seq)
					}
				}
				if w := s.want(); w != st.wantNew {
					t.Errorf("after seq %d: want() = %d, expected %d", st.seq, w, st.wantNew)
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
		})
	}
}
