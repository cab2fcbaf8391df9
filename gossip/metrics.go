package gossip

import (
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are a node's Prometheus metrics: traffic counted at its transport
// (every packet and stream byte memberlist sends or receives, encrypted and
// labelled) and at its own message layer, plus memberlist's own go-metrics,
// bridged by memberlistSink.
type metrics struct {
	transportBytes   *prometheus.CounterVec // dir, kind
	transportPackets *prometheus.CounterVec // dir
	transportStreams *prometheus.CounterVec // dir
	messages         *prometheus.CounterVec // dir, type
	messageBytes     *prometheus.CounterVec // dir, type
	sendErrors       *prometheus.CounterVec // type
	inboxDropped     prometheus.Counter
	rejected         *prometheus.CounterVec // reason
	resyncRequested  prometheus.Counter
	resyncServed     prometheus.Counter
	summaryGaps      prometheus.Counter
	summaryLag       prometheus.Histogram
	members          *prometheus.GaugeVec // role, status
	healthScore      prometheus.GaugeFunc
	mlCounters       *prometheus.CounterVec // name
	mlGauges         *prometheus.GaugeVec   // name
	mlSamples        *prometheus.SummaryVec // name
}

// newMetrics creates the metrics, unregistered (see register).
func newMetrics(health func() float64) *metrics {
	m := &metrics{
		transportBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "inferrail_gossip_transport_bytes_total",
			Help: "Bytes memberlist sent or received, by direction and kind (packet or stream).",
		}, []string{"dir", "kind"}),
		transportPackets: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "inferrail_gossip_transport_packets_total",
			Help: "UDP packets memberlist sent or received.",
		}, []string{"dir"}),
		transportStreams: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "inferrail_gossip_transport_streams_total",
			Help: "TCP streams memberlist opened (out) or accepted (in).",
		}, []string{"dir"}),
		messages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "inferrail_gossip_messages_total",
			Help: "inferrail user messages sent or received, by type.",
		}, []string{"dir", "type"}),
		messageBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "inferrail_gossip_message_bytes_total",
			Help: "Bytes of inferrail user messages sent or received, by type (before encryption).",
		}, []string{"dir", "type"}),
		sendErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "inferrail_gossip_send_errors_total",
			Help: "User messages memberlist failed to send, by type.",
		}, []string{"type"}),
		inboxDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "inferrail_gossip_inbox_dropped_total",
			Help: "Received messages dropped because the processing queue was full.",
		}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "inferrail_gossip_messages_rejected_total",
			Help: "Received messages rejected, by reason (malformed, unknown_sender, wrong_role).",
		}, []string{"reason"}),
		resyncRequested: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "inferrail_gossip_resync_requests_total",
			Help: "Summary resyncs this node asked for.",
		}),
		resyncServed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "inferrail_gossip_snapshots_sent_total",
			Help: "Summary snapshots this node sent on the reliable path.",
		}),
		summaryGaps: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "inferrail_gossip_summary_gaps_total",
			Help: "Summary deltas that did not follow the view's sequence.",
		}),
		summaryLag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "inferrail_gossip_summary_lag_seconds",
			Help:    "Time from a block's addition on the sidecar to its delta being applied here (clocks of both hosts).",
			Buckets: []float64{.01, .025, .05, .1, .15, .2, .3, .5, 1, 2, 5},
		}),
		members: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "inferrail_gossip_members",
			Help: "Members in this node's view, by role and status.",
		}, []string{"role", "status"}),
		healthScore: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "inferrail_gossip_health_score",
			Help: "memberlist's awareness health score (0 is healthy).",
		}, health),
	}
	m.mlCounters, m.mlGauges, m.mlSamples = newMemberlistMetrics()
	return m
}

// register registers every metric on reg, stopping at the first error.
func (m *metrics) register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.transportBytes, m.transportPackets, m.transportStreams, m.messages,
		m.messageBytes, m.sendErrors, m.inboxDropped, m.rejected, m.resyncRequested, m.resyncServed, m.summaryGaps,
		m.summaryLag, m.members, m.healthScore, m.mlCounters, m.mlGauges, m.mlSamples} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("register gossip metrics: %w", err)
		}
	}
	return nil
}

// countingTransport wraps a memberlist transport and counts its traffic.
type countingTransport struct {
	memberlist.Transport
	m        *metrics
	packetCh chan *memberlist.Packet
	streamCh chan net.Conn
	done     chan struct{}
	once     sync.Once
	wg       sync.WaitGroup

	outPackets, outBytes, inPackets, inBytes   prometheus.Counter
	streamsOut, streamsIn, streamOut, streamIn prometheus.Counter
}

func newCountingTransport(t memberlist.Transport, m *metrics) *countingTransport {
	c := &countingTransport{
		Transport:  t,
		m:          m,
		packetCh:   make(chan *memberlist.Packet),
		streamCh:   make(chan net.Conn),
		done:       make(chan struct{}),
		outPackets: m.transportPackets.WithLabelValues("out"),
		inPackets:  m.transportPackets.WithLabelValues("in"),
		outBytes:   m.transportBytes.WithLabelValues("out", "packet"),
		inBytes:    m.transportBytes.WithLabelValues("in", "packet"),
		streamsOut: m.transportStreams.WithLabelValues("out"),
		streamsIn:  m.transportStreams.WithLabelValues("in"),
		streamOut:  m.transportBytes.WithLabelValues("out", "stream"),
		streamIn:   m.transportBytes.WithLabelValues("in", "stream"),
	}
	c.wg.Add(2)
	go c.forwardPackets()
	go c.forwardStreams()
	return c
}

func (c *countingTransport) forwardPackets() {
	defer c.wg.Done()
	in := c.Transport.PacketCh()
	for {
		select {
		case p := <-in:
			c.inPackets.Inc()
			c.inBytes.Add(float64(len(p.Buf)))
			select {
			case c.packetCh <- p:
			case <-c.done:
				return
			}
		case <-c.done:
			return
		}
	}
}

func (c *countingTransport) forwardStreams() {
	defer c.wg.Done()
	in := c.Transport.StreamCh()
	for {
		select {
		case conn := <-in:
			c.streamsIn.Inc()
			select {
			case c.streamCh <- &countingConn{Conn: conn, in: c.streamIn, out: c.streamOut}:
			case <-c.done:
				_ = conn.Close()
				return
			}
		case <-c.done:
			return
		}
	}
}

// PacketCh implements memberlist.Transport.
func (c *countingTransport) PacketCh() <-chan *memberlist.Packet { return c.packetCh }

// StreamCh implements memberlist.Transport.
func (c *countingTransport) StreamCh() <-chan net.Conn { return c.streamCh }

// WriteTo implements memberlist.Transport.
func (c *countingTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	c.outPackets.Inc()
	c.outBytes.Add(float64(len(b)))
	return c.Transport.WriteTo(b, addr)
}

// DialTimeout implements memberlist.Transport.
func (c *countingTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	conn, err := c.Transport.DialTimeout(addr, timeout)
	if err != nil {
		return nil, err
	}
	c.streamsOut.Inc()
	return &countingConn{Conn: conn, in: c.streamIn, out: c.streamOut}, nil
}

// Shutdown implements memberlist.Transport.
func (c *countingTransport) Shutdown() error {
	err := c.Transport.Shutdown()
	c.once.Do(func() { close(c.done) })
	c.wg.Wait()
	return err
}

// countingConn counts a stream's bytes.
type countingConn struct {
	net.Conn
	in, out prometheus.Counter
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.in.Add(float64(n))
	return n, err
}

func (c *countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.out.Add(float64(n))
	return n, err
}
