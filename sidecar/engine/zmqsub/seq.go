package zmqsub

// action is what to do with a live message, given the sequence numbers seen.
type action int

const (
	actApply     action = iota // the next batch in order
	actDuplicate               // already applied (from a replay): drop
	actGap                     // batches from seqState.want() are missing
	actRestart                 // the publisher restarted: clear, then re-observe
)

// seqState tracks one rank's sequence numbers: the last batch applied (from
// the live stream or a replay) and the last seen on the live stream.
type seqState struct {
	applied  bool   // some batch has been applied since start or restart
	last     uint64 // last applied seq, when applied
	liveSeen bool   // some live message has been seen since start or restart
	liveLast uint64 // last live seq, when liveSeen
}

// observe classifies a live message's seq and records it as seen.
func (s *seqState) observe(seq uint64) action {
	if s.liveSeen && seq <= s.liveLast {
		return actRestart
	}
	s.liveSeen, s.liveLast = true, seq
	switch w := s.want(); {
	case seq < w:
		return actDuplicate
	case seq == w:
		return actApply
	}
	return actGap
}

// want is the next seq to apply.
func (s *seqState) want() uint64 {
	if !s.applied {
		return 0
	}
	return s.last + 1
}

// done records that seq was applied (or given up on: the rank was cleared).
func (s *seqState) done(seq uint64) {
	s.applied, s.last = true, seq
}

// restart forgets everything; the message that revealed the restart is then
// observed again, as the new publisher's first.
func (s *seqState) restart() {
	*s = seqState{}
}
