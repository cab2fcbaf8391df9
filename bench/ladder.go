package bench

import (
	"math/rand/v2"
	"time"
)

// ladderPrompt names one prompt of the ladder workload: a shared prefix and
// one of its questions.
type ladderPrompt struct{ group, question int }

// ladderSessions builds the ladder workload's sessions at the given arrival
// times, the way llm-d's shared_prefix data generator (inference-perf) does:
// Groups shared system prompts of SystemTokens, each with PromptsPerGroup
// fixed questions of UserTokens, the Groups × PromptsPerGroup prompts
// shuffled once (seeded) and sent in that order, cycling. A prompt's second
// send is therefore an exact repeat (its whole prompt is cached where it
// went before), and the questions of one group share its system prompt.
func ladderSessions(c WorkloadConfig, rng *rand.Rand, starts []time.Duration) []Session {
	order := make([]ladderPrompt, 0, c.Groups*c.PromptsPerGroup)
	for g := range c.Groups {
		for q := range c.PromptsPerGroup {
			order = append(order, ladderPrompt{g, q})
		}
	}
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	systems := map[int]string{}
	users := map[ladderPrompt]string{}
	sessions := make([]Session, len(starts))
	for i, at := range starts {
		p := order[i%len(order)]
		sys, ok := systems[p.group]
		if !ok && c.SystemTokens > 0 {
			sys = words(textKey(Ladder+"/system", c.Seed, uint64(p.group)), c.SystemTokens)
			systems[p.group] = sys
		}
		user, ok := users[p]
		if !ok {
			user = words(textKey(Ladder+"/user", c.Seed, uint64(p.group), uint64(p.question)), c.UserTokens)
			users[p] = user
		}
		sessions[i] = Session{ID: i, Start: at, System: sys, Group: p.group,
			Turns: []Turn{{User: user, MaxTokens: c.OutputTokens}}}
	}
	return sessions
}
