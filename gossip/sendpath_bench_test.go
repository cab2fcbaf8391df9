package gossip

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// BenchmarkSendPaths compares memberlist's two user-message paths for one
// 1,200-byte summary delta between two encrypted nodes on loopback: the
// best-effort (UDP) path sends one packet; the reliable (TCP) path dials a
// new stream per message. bytes/op counts both directions at the transport.
//
//	go test -run '^$' -bench BenchmarkSendPaths ./gossip/
func BenchmarkSendPaths(b *testing.B) {
	key := []byte("0123456789abcdef")
	newNode := func(name string, role Role, reg prometheus.Registerer, join ...string) *Node {
		cfg := DefaultConfig()
		cfg.NodeName, cfg.Role = name, role
		cfg.BindAddr, cfg.BindPort = "127.0.0.1", 0
		cfg.Profile, cfg.SecretKey = ProfileLocal, key
		n, err := New(cfg, nil, reg)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = n.Shutdown() })
		return n
	}
	sreg, rreg := prometheus.NewRegistry(), prometheus.NewRegistry()
	side := newNode("side", RoleSidecar, sreg)
	bal := newNode("bal", RoleBalancer, rreg)
	if _, err := side.ml.Join([]string{bal.Addr()}); err != nil {
		b.Fatal(err)
	}
	var to *Member
	for to == nil {
		to = side.peers.alive("bal")
	}
	body := make([]byte, 1200)
	for i := range body {
		body[i] = byte(rand.Uint32()) // random, like summary keys: incompressible
	}
	msg := marshalSummary("side", body)
	value := func(dir, kind string) float64 {
		var m dto.Metric
		if err := side.m.transportBytes.WithLabelValues(dir, kind).Write(&m); err != nil {
			b.Fatal(err)
		}
		return m.GetCounter().GetValue()
	}
	bytesNow := func() float64 { return value("out", "packet") + value("out", "stream") + value("in", "stream") }
	for _, path := range []string{"best_effort", "reliable"} {
		b.Run(path, func(b *testing.B) {
			before := bytesNow()
			for b.Loop() {
				var err error
				if path == "reliable" {
					err = side.ml.SendReliable(&to.ml, msg)
				} else {
					err = side.ml.SendBestEffort(&to.ml, msg)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric((bytesNow()-before)/float64(b.N), "wire_B/op")
			// Let the receiver drain before the next sub-benchmark.
			t := time.NewTimer(100 * time.Millisecond)
			<-t.C
		})
	}
}
