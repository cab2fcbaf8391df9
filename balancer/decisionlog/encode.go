package decisionlog

import (
	"math"
	"strconv"
	"time"

	"github.com/inferrail/inferrail/internal/jsonenc"
)

// AppendJSON appends r as one JSON object, the same document encoding/json
// writes for it (field names, omitted empty fields), without reflection: the
// writer encodes every sampled decision, so this is its cost per line.
// Non-finite floats, which JSON cannot hold, are written as null.
func (r *Record) AppendJSON(b []byte) []byte {
	b = append(b, `{"seq":`...)
	b = strconv.AppendUint(b, r.Seq, 10)
	b = append(b, `,"time":"`...)
	b = r.Time.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","request_id":`...)
	b = jsonenc.AppendStringHTML(b, r.RequestID)
	b = append(b, `,"model":`...)
	b = jsonenc.AppendStringHTML(b, r.Model)
	b = append(b, `,"policy":`...)
	b = jsonenc.AppendStringHTML(b, r.Policy)
	b = append(b, `,"mode":`...)
	b = jsonenc.AppendStringHTML(b, r.Mode)
	b = appendInt(b, `,"attempt":`, r.Attempt)
	b = appendInt(b, `,"prompt_tokens":`, r.PromptTokens)
	b = appendInt(b, `,"prompt_blocks":`, r.PromptBlocks)
	if r.Turn != "" {
		b = append(b, `,"turn":`...)
		b = jsonenc.AppendStringHTML(b, r.Turn)
	}
	b = appendInt(b, `,"predicted_cached_tokens":`, r.CachedTokens)
	b = append(b, `,"winner":`...)
	b = jsonenc.AppendStringHTML(b, r.Winner)
	b = append(b, `,"reason":`...)
	b = jsonenc.AppendStringHTML(b, r.Reason)
	b = appendOptFloat(b, `,"score":`, r.Score)
	b = appendOptFloat(b, `,"estimated_ttft_ms":`, r.EstimatedTTFTMS)
	if r.SummaryFallback {
		b = append(b, `,"summary_fallback":true`...)
	}
	b = append(b, `,"decision_us":`...)
	b = appendFloat(b, r.DecisionUS)
	b = append(b, `,"candidates":`...)
	if r.Candidates == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range r.Candidates {
			if i > 0 {
				b = append(b, ',')
			}
			b = r.Candidates[i].appendJSON(b)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

func (c *Candidate) appendJSON(b []byte) []byte {
	b = append(b, `{"id":`...)
	b = jsonenc.AppendStringHTML(b, c.ID)
	b = append(b, `,"state":`...)
	b = jsonenc.AppendStringHTML(b, c.State)
	if c.Excluded {
		b = append(b, `,"excluded":true`...)
	}
	b = appendInt(b, `,"in_flight":`, c.InFlight)
	b = appendInt(b, `,"pending":`, c.Pending)
	b = append(b, `,"prefill_tokens":`...)
	b = strconv.AppendInt(b, c.PrefillTokens, 10)
	if c.StepTokens != 0 {
		b = append(b, `,"step_tokens":`...)
		b = strconv.AppendInt(b, c.StepTokens, 10)
	}
	b = appendOptFloat(b, `,"step_age_ms":`, c.StepAgeMS)
	b = appendOptFloat(b, `,"kv_usage":`, c.KVUsage)
	if c.CachedTokens != nil {
		b = appendInt(b, `,"predicted_cached_tokens":`, *c.CachedTokens)
	}
	b = appendOptFloat(b, `,"score":`, c.Score)
	b = appendOptFloat(b, `,"estimated_ttft_ms":`, c.EstimatedTTFTMS)
	b = appendOptFloat(b, `,"queue_wait_ms":`, c.QueueWaitMS)
	b = appendOptFloat(b, `,"memory_wait_ms":`, c.MemoryWaitMS)
	if c.KVShort {
		b = append(b, `,"kv_short":true`...)
	}
	if c.Answers != 0 {
		b = appendInt(b, `,"answers":`, c.Answers)
	}
	if c.LoadStale {
		b = append(b, `,"load_stale":true`...)
	}
	return append(b, '}')
}

func appendInt(b []byte, key string, v int) []byte {
	b = append(b, key...)
	return strconv.AppendInt(b, int64(v), 10)
}

func appendOptFloat(b []byte, key string, v *float64) []byte {
	if v == nil {
		return b
	}
	b = append(b, key...)
	return appendFloat(b, *v)
}

// appendFloat writes v as encoding/json does: the shortest representation,
// in exponent form only for very small or large magnitudes.
func appendFloat(b []byte, v float64) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return append(b, "null"...)
	}
	abs := math.Abs(v)
	f := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		f = 'e'
	}
	b = strconv.AppendFloat(b, v, f, -1, 64)
	if f == 'e' {
		// encoding/json writes e-7, not e-07.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
