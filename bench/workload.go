package bench

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Turn is one request of a session.
type Turn struct {
	// User is the text of the new user message this turn appends.
	User string `json:"-"`
	// MaxTokens is the exact number of tokens to generate (sent with
	// ignore_eos, so the engine produces all of them).
	MaxTokens int `json:"max_tokens"`
	// Think is the pause between the end of the previous turn and this one
	// (unused for the first turn).
	Think time.Duration `json:"think"`
}

// Session is a chain of dependent requests: every turn resends the whole
// conversation so far (system prompt, earlier user messages and the answers
// the server gave) plus its own user message.
type Session struct {
	// ID numbers sessions in arrival order.
	ID int `json:"id"`
	// Start is the scheduled offset of the first turn from the run's start.
	Start time.Duration `json:"start"`
	// System is the system prompt ("" for none).
	System string `json:"-"`
	// Group names the shared prefix the session belongs to (W1's system
	// prompt, the trace's first hash id); -1 for none.
	Group int `json:"group"`
	// Turns are sent in order.
	Turns []Turn `json:"turns"`
}

// Workload names.
const (
	W1       = "W1"       // shared system prompts under cache pressure
	W2       = "W2"       // multi-turn chat with think time
	W3       = "W3"       // agent loop with a growing context
	W6       = "W6"       // nothing shared
	Ladder   = "ladder"   // llm-d's shared-prefix synthetic (the rate ladder)
	Mooncake = "mooncake" // replay of a Mooncake-format trace
)

// WorkloadConfig describes the requests of a run. Lengths are in tokens of
// the builtin:sim tokenizer (one generated word each).
type WorkloadConfig struct {
	// Name is W1, W2, W3, W6, ladder or mooncake.
	Name string `json:"name"`
	// Seed seeds arrivals and every random choice; the same seed gives the
	// same sessions.
	Seed uint64 `json:"seed"`
	// Rate is the mean session arrival rate per second (Poisson); unused by
	// mooncake, which keeps the trace's timestamps.
	Rate float64 `json:"rate"`
	// Duration bounds the arrival window: no session starts later.
	Duration time.Duration `json:"duration"`
	// MaxSessions bounds the number of sessions (0: no bound).
	MaxSessions int `json:"max_sessions,omitempty"`

	// Groups is the number of distinct shared prefixes (W1 system prompts).
	Groups int `json:"groups,omitempty"`
	// PromptsPerGroup is the number of distinct questions per shared prefix
	// (ladder): the run sends the Groups × PromptsPerGroup prompts in one
	// seeded shuffled order, again and again.
	PromptsPerGroup int `json:"prompts_per_group,omitempty"`
	// SystemTokens is the length of a shared system prompt (W1, W2, W3).
	SystemTokens int `json:"system_tokens,omitempty"`
	// UserTokens is the length of each user message (question, tool output).
	UserTokens int `json:"user_tokens,omitempty"`
	// OutputTokens is the number of tokens generated per turn.
	OutputTokens int `json:"output_tokens,omitempty"`
	// Turns is the number of turns per session (W2, W3).
	Turns int `json:"turns,omitempty"`
	// Think is the mean think time between turns (exponential; W2, W3).
	Think time.Duration `json:"think,omitempty"`

	// TracePath is the Mooncake-format JSONL file (mooncake).
	TracePath string `json:"trace_path,omitempty"`
	// Speedup divides the trace's timestamps (mooncake; 2 replays twice as fast).
	Speedup float64 `json:"speedup,omitempty"`
	// MaxInputTokens truncates longer trace prompts (mooncake; 0: no limit).
	MaxInputTokens int `json:"max_input_tokens,omitempty"`
	// TraceStart skips this much of the trace's beginning (mooncake).
	TraceStart time.Duration `json:"trace_start,omitempty"`
	// ExactTimes replays the trace's timestamps as they are (mooncake).
	// Without it each arrival gets a seeded jitter of up to one second
	// before the speed-up, for traces whose timestamps are whole seconds;
	// a trace with exact timestamps (a production log, Azure's traces)
	// would have its bursts spread by it.
	ExactTimes bool `json:"exact_times,omitempty"`
}

// DefaultWorkload returns the defaults of the named workload.
func DefaultWorkload(name string) WorkloadConfig {
	c := WorkloadConfig{Name: name, Seed: 1, Rate: 8, Duration: time.Minute}
	switch name {
	case W1:
		c.Groups, c.SystemTokens, c.UserTokens, c.OutputTokens, c.Turns = 64, 3072, 64, 32, 1
	case W2:
		c.Rate, c.Groups, c.SystemTokens, c.UserTokens, c.OutputTokens, c.Turns, c.Think = 1, 4, 512, 256, 128, 6, 5*time.Second
	case W3:
		c.Rate, c.Groups, c.SystemTokens, c.UserTokens, c.OutputTokens, c.Turns, c.Think = 1, 2, 2048, 384, 96, 10, 500*time.Millisecond
	case W6:
		c.UserTokens, c.OutputTokens, c.Turns = 1024, 64, 1
	case Ladder:
		// llm-d's shared_prefix benchmark template (see docs/bench.md).
		c.Rate, c.Groups, c.PromptsPerGroup, c.SystemTokens, c.UserTokens, c.OutputTokens, c.Turns = 4, 150, 5, 6000, 1200, 1000, 1
	case Mooncake:
		c.Speedup, c.MaxInputTokens = 1, 32768
	}
	return c
}

// Validate reports every problem of the configuration at once.
func (c WorkloadConfig) Validate() error {
	var errs []error
	bad := func(f string, args ...any) { errs = append(errs, fmt.Errorf(f, args...)) }
	switch c.Name {
	case W1, W2, W3, W6, Ladder:
		if c.Rate <= 0 {
			bad("workload.rate must be > 0, got %v", c.Rate)
		}
		if c.UserTokens <= 0 {
			bad("workload.user_tokens must be > 0, got %d", c.UserTokens)
		}
		if c.OutputTokens <= 0 {
			bad("workload.output_tokens must be > 0, got %d", c.OutputTokens)
		}
		if c.Turns <= 0 {
			bad("workload.turns must be > 0, got %d", c.Turns)
		}
		if c.Name != W6 && (c.Groups <= 0 || c.SystemTokens < 0) {
			bad("workload.groups must be > 0 and system_tokens >= 0, got %d and %d", c.Groups, c.SystemTokens)
		}
		if c.Name == Ladder && c.PromptsPerGroup <= 0 {
			bad("workload.prompts_per_group must be > 0 for %s, got %d", Ladder, c.PromptsPerGroup)
		}
	case Mooncake:
		if c.TracePath == "" {
			bad("workload.trace_path is required for %s", Mooncake)
		}
		if c.Speedup <= 0 {
			bad("workload.speedup must be > 0, got %v", c.Speedup)
		}
	default:
		bad("workload.name must be one of W1, W2, W3, W6, ladder, mooncake, got %q", c.Name)
	}
	if c.Duration <= 0 && c.MaxSessions <= 0 {
		bad("workload.duration or workload.max_sessions must be > 0")
	}
	if c.Think < 0 || c.MaxSessions < 0 || c.MaxInputTokens < 0 {
		bad("workload.think, max_sessions and max_input_tokens must be >= 0")
	}
	return errors.Join(errs...)
}

// Generate builds the sessions of the workload, in start order. The result
// depends only on the configuration (and the trace file).
func Generate(c WorkloadConfig) ([]Session, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if c.Name == Mooncake {
		return mooncakeSessions(c)
	}
	rng := rand.New(rand.NewPCG(c.Seed, textKey(c.Name)))
	starts := PoissonArrivals(rng, c.Rate, c.Duration, c.MaxSessions)
	if c.Name == Ladder {
		return ladderSessions(c, rng, starts), nil
	}
	sessions := make([]Session, len(starts))
	for i, at := range starts {
		s := Session{ID: i, Start: at, Group: -1}
		switch c.Name {
		case W1:
			// Popularity is uniform over groups: with N replicas and a
			// cache smaller than all prompts together, a cache-blind policy
			// thrashes while affinity keeps each replica's share warm.
			s.Group = rng.IntN(c.Groups)
		case W2, W3:
			s.Group = rng.IntN(c.Groups)
		}
		if s.Group >= 0 && c.SystemTokens > 0 {
			s.System = words(textKey(c.Name+"/system", c.Seed, uint64(s.Group)), c.SystemTokens)
		}
		for t := range c.Turns {
			turn := Turn{MaxTokens: c.OutputTokens}
			var sb strings.Builder
			if c.Name == W3 && t > 0 {
				sb.WriteString("tool result: ")
			}
			appendWords(&sb, textKey(c.Name+"/user", c.Seed, uint64(i), uint64(t)), c.UserTokens)
			turn.User = sb.String()
			if t > 0 && c.Think > 0 {
				turn.Think = time.Duration(rng.ExpFloat64() * float64(c.Think))
			}
			s.Turns = append(s.Turns, turn)
		}
		sessions[i] = s
	}
	return sessions, nil
}

// PoissonArrivals returns the arrival offsets of a Poisson process of the
// given rate per second within window (0: unbounded), at most max of them (0:
// unbounded; one of window and max must bound the result).
func PoissonArrivals(rng *rand.Rand, rate float64, window time.Duration, max int) []time.Duration {
	var out []time.Duration
	t := 0.0
	for {
		t += rng.ExpFloat64() / rate
		at := time.Duration(t * float64(time.Second))
		if (window > 0 && at >= window) || (max > 0 && len(out) >= max) {
			return out
		}
		out = append(out, at)
	}
}
