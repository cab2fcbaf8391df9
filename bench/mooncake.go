package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"
)

// MooncakeBlockTokens is the number of tokens one Mooncake hash id stands for.
const MooncakeBlockTokens = 512

// TraceRecord is one line of a Mooncake-format trace.
type TraceRecord struct {
	// Timestamp is the arrival time in milliseconds since the trace's start.
	Timestamp int64 `json:"timestamp"`
	// InputLength is the prompt length in tokens.
	InputLength int `json:"input_length"`
	// OutputLength is the number of generated tokens.
	OutputLength int `json:"output_length"`
	// HashIDs names each 512-token block of the prompt, prefix-chained: equal
	// ids at equal positions mean equal prefixes.
	HashIDs []int64 `json:"hash_ids"`
}

// maxTraceLine bounds one trace line (a 1M-token prompt has ~2,000 ids).
const maxTraceLine = 4 << 20

// ParseTrace reads a Mooncake-format JSONL trace. It rejects lines that are
// not objects of the expected shape, negative lengths and timestamps, and a
// prompt with more hash ids than its length needs; blank lines are skipped.
// Records are returned sorted by timestamp (stable).
func ParseTrace(r io.Reader) ([]TraceRecord, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxTraceLine)
	var out []TraceRecord
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var rec TraceRecord
		dec := json.NewDecoder(bytes.NewReader(line))
		if err := dec.Decode(&rec); err != nil {
			return nil, fmt.Errorf("trace line %d: %w", n, err)
		}
		if dec.More() {
			return nil, fmt.Errorf("trace line %d: trailing data", n)
		}
		if rec.Timestamp < 0 || rec.InputLength < 0 || rec.OutputLength < 0 {
			return nil, fmt.Errorf("trace line %d: negative timestamp or length", n)
		}
		if need := (rec.InputLength + MooncakeBlockTokens - 1) / MooncakeBlockTokens; len(rec.HashIDs) > need {
			return nil, fmt.Errorf("trace line %d: %d hash ids for %d tokens (at most %d)", n, len(rec.HashIDs), rec.InputLength, need)
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read trace: %w", err)
	}
	slices.SortStableFunc(out, func(a, b TraceRecord) int { return int(a.Timestamp - b.Timestamp) })
	return out, nil
}

// ExpandTrace returns the prompt text of rec: each hash id becomes 512 words
// derived from the id alone, so equal ids give equal text and, with the
// builtin:sim tokenizer, equal 16-token engine blocks (32 per id). The text is
// cut to maxTokens words (0: the record's input length); tokens past the last
// hash id are filled from the record's index so they are never shared.
func ExpandTrace(rec TraceRecord, index int, maxTokens int) string {
	n := rec.InputLength
	if maxTokens > 0 && n > maxTokens {
		n = maxTokens
	}
	var sb strings.Builder
	sb.Grow(n * wordBytes)
	var b [wordBytes]byte
	for i := 0; i < n; i++ {
		blk, off := i/MooncakeBlockTokens, i%MooncakeBlockTokens
		if blk < len(rec.HashIDs) {
			word(b[:], textKey("mooncake/block", uint64(rec.HashIDs[blk])), off)
		} else {
			word(b[:], textKey("mooncake/tail", uint64(index), uint64(blk)), off)
		}
		sb.Write(b[:])
	}
	return sb.String()
}

// mooncakeSessions turns a trace into one-turn sessions at the trace's
// timestamps divided by the speed-up. Timestamps in the released traces are
// coarse (whole seconds for most), so each arrival gets a seeded jitter
// within its millisecond-to-second slot to avoid lockstep bursts, unless
// WorkloadConfig.ExactTimes says the timestamps are exact.
func mooncakeSessions(c WorkloadConfig) ([]Session, error) {
	f, err := os.Open(c.TracePath)
	if err != nil {
		return nil, fmt.Errorf("open trace: %w", err)
	}
	defer f.Close()
	recs, err := ParseTrace(f)
	if err != nil {
		return nil, err
	}
	return TraceSessions(recs, c), nil
}

// TraceSessions builds the sessions of parsed trace records under c (speed-up,
// start offset, duration, max sessions, max input tokens, seed, exact times).
func TraceSessions(recs []TraceRecord, c WorkloadConfig) []Session {
	rng := rand.New(rand.NewPCG(c.Seed, textKey("mooncake/jitter")))
	skip := c.TraceStart.Milliseconds()
	var out []Session
	for i, r := range recs {
		if r.Timestamp < skip {
			continue
		}
		jitter := rng.Float64() * float64(time.Second)
		if c.ExactTimes {
			jitter = 0
		}
		at := time.Duration((float64(r.Timestamp-skip)*float64(time.Millisecond) + jitter) / c.Speedup)
		if c.Duration > 0 && at >= c.Duration {
			break
		}
		if c.MaxSessions > 0 && len(out) >= c.MaxSessions {
			break
		}
		group := -1
		if len(r.HashIDs) > 0 {
			group = int(r.HashIDs[0])
		}
		out = append(out, Session{ID: len(out), Start: at, Group: group, Turns: []Turn{{
			User: ExpandTrace(r, i, c.MaxInputTokens), MaxTokens: max(1, r.OutputLength),
		}}})
	}
	slices.SortStableFunc(out, func(a, b Session) int { return int(a.Start - b.Start) })
	for i := range out {
		out[i].ID = i
	}
	return out
}
