package sidecar

import (
	"context"
	"errors"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
)

// newExactPipeline builds the KV-event pipeline (subscriber → block set →
// sink).
func newExactPipeline(cfg Config, waitModel func(context.Context) (string, error), sink blockSink, log *slog.Logger, reg prometheus.Registerer, m *metrics) (exactSource, error) {
	return nil, errors.New("kv events: pipeline not wired yet")
}
