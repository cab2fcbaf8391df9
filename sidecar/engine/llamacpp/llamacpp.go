package llamacpp

import (
	"io"

	"github.com/inferrail/inferrail/sidecar/engine"
)

// Names is llama.cpp's table of metric names. The page has one engine and no
// rank labels, and no KV-usage gauge (Usage estimates it from /slots).
// llamacpp:prompt_tokens_total excludes the tokens reused from the cache,
// which llamacpp:prompt_tokens_cached_total counts.
var Names = engine.MetricNames{
	Kind:                    engine.KindLlamaCpp,
	Prefix:                  "llamacpp:",
	Running:                 []string{"llamacpp:requests_processing"},
	Waiting:                 []string{"llamacpp:requests_deferred"},
	PromptTokens:            []string{"llamacpp:prompt_tokens_total"},
	GenerationTokens:        []string{"llamacpp:tokens_predicted_total"},
	PrefixHits:              []string{"llamacpp:prompt_tokens_cached_total"},
	PromptTokensExcludeHits: true,
}

// ParseMetrics reads a llama.cpp metrics page. Its KVUsage is 0: the page has
// no usage gauge (see Usage). llama.cpp publishes no KV events, so there is no
// DecodeBatch; the sidecar builds its block set from the data path.
func ParseMetrics(r io.Reader, maxBytes int64) (engine.Load, error) {
	return engine.ParseLoad(r, maxBytes, Names)
}
