package zmqsub

import (
	"context"
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/inferrail/inferrail/sidecar/engine"
)

func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return p
}

// With no engine listening, Run keeps retrying with backoff and returns nil,
// closing Updates, once cancelled.
func TestRunRetriesUntilCancelled(t *testing.T) {
	port := closedPort(t)
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		s, err := New(Config{Host: "127.0.0.1", BasePort: port, Ranks: 1},
			func([]byte) (engine.Batch, error) { return engine.Batch{}, nil }, nil, reg)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- s.Run(ctx) }()
		time.Sleep(time.Minute) // fake time: about 15 attempts at the 5 s cap
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
		if _, open := <-s.Updates(); open {
			t.Error("Updates not closed")
		}
		fams, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var reconnects float64
		for _, f := range fams {
			if f.GetName() == "inferrail_sidecar_kvevents_reconnects_total" {
				reconnects = f.GetMetric()[0].GetCounter().GetValue()
			}
		}
		if reconnects < 10 || reconnects > 30 {
			t.Errorf("%v reconnect attempts in a minute, want about 15 (backoff 100 ms doubling to 5 s)", reconnects)
		}
	})
}
