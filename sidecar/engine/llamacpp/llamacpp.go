package llamacpp

import (
	"errors"
	"io"

	"github.com/inferrail/inferrail/sidecar/engine"
)

// ErrNoEvents is returned by DecodeBatch: llama.cpp publishes no KV events.
var ErrNoEvents = errors.New("llama.cpp publishes no KV-cache events")

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

// Adapter is the llama.cpp engine adapter.
type Adapter struct{}

var _ engine.Adapter = Adapter{}

// Kind returns engine.KindLlamaCpp.
func (Adapter) Kind() engine.Kind { return engine.KindLlamaCpp }

// DecodeBatch always fails with ErrNoEvents.
func (Adapter) DecodeBatch([]byte) (engine.Batch, error) { return engine.Batch{}, ErrNoEvents }

// ParseMetrics reads a llama.cpp metrics page. Its KVUsage is 0: the page has
// no usage gauge (see Usage).
func (Adapter) ParseMetrics(r io.Reader, maxBytes int64) (engine.Load, error) {
	return engine.ParseLoad(r, maxBytes, Names)
}

// MetricNames returns Names.
func (Adapter) MetricNames() engine.MetricNames { return Names }
