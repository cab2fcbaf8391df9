package bench

import (
	"context"
	"fmt"
	"log/slog"
)

// RunWorkload generates the workload's sessions and runs them against cfg's
// targets.
func RunWorkload(ctx context.Context, cfg Config, wl WorkloadConfig, log *slog.Logger) (*Result, error) {
	sessions, err := Generate(wl)
	if err != nil {
		return nil, err
	}
	if len(sessions) == 0 {
		return nil, fmt.Errorf("workload %s produced no sessions (rate %v, duration %v)", wl.Name, wl.Rate, wl.Duration)
	}
	r, err := NewRunner(cfg, log, nil)
	if err != nil {
		return nil, err
	}
	res, err := r.Run(ctx, sessions)
	if res != nil {
		res.Workload = wl
	}
	return res, err
}
