package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/inferrail/inferrail/kube/inject"
)

// Config is the webhook server's configuration.
type Config struct {
	// Listen is the HTTPS address (0.0.0.0:8443).
	Listen string
	// CertFile and KeyFile are the PEM serving certificate and key; they are
	// read again when they change (cert-manager renews them in place).
	CertFile, KeyFile string
	// Inject builds the sidecar.
	Inject inject.Options
}

// Validate reports every problem at once with its flag and value.
func (c Config) Validate() error {
	var errs []error
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		errs = append(errs, fmt.Errorf("--listen must be host:port, got %q", c.Listen))
	}
	if c.CertFile == "" {
		errs = append(errs, errors.New("--tls-cert-file must be set"))
	}
	if c.KeyFile == "" {
		errs = append(errs, errors.New("--tls-key-file must be set"))
	}
	if err := c.Inject.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

type metrics struct {
	reviews *prometheus.CounterVec
}

// Server is the admission webhook.
type Server struct {
	cfg     Config
	opts    inject.Options
	log     *slog.Logger
	metrics metrics
	gather  prometheus.Gatherer
	certs   *certLoader
}

// New validates cfg, loads the certificate and registers the metrics on
// reg (inferrail_webhook_reviews_total{outcome}).
func New(cfg Config, log *slog.Logger, reg *prometheus.Registry) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid config:\n%w", err)
	}
	s := &Server{cfg: cfg, opts: cfg.Inject, log: log, gather: reg, certs: &certLoader{cert: cfg.CertFile, key: cfg.KeyFile}}
	if _, err := s.certs.get(); err != nil {
		return nil, err
	}
	s.metrics.reviews = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "inferrail_webhook_reviews_total",
		Help: "AdmissionReview requests answered, by outcome: injected, skipped, refused (admitted unchanged) or invalid.",
	}, []string{"outcome"})
	if err := reg.Register(s.metrics.reviews); err != nil {
		return nil, fmt.Errorf("register metrics: %w", err)
	}
	return s, nil
}

// Handler returns the webhook's routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /inject", func(w http.ResponseWriter, r *http.Request) { s.review(w, r, unlessOptedOut) })
	mux.HandleFunc("POST /inject-annotated", func(w http.ResponseWriter, r *http.Request) { s.review(w, r, onlyAnnotated) })
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.gather, promhttp.HandlerOpts{}))
	return mux
}

// Run serves HTTPS on cfg.Listen until ctx ends, then drains for up to 10s.
func (s *Server) Run(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return s.certs.get()
		}},
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	s.log.Info("webhook listening", "addr", ln.Addr().String())
	errc := make(chan error, 1)
	go func() { errc <- srv.ServeTLS(ln, "", "") }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// certLoader serves the key pair in two files, read again when either
// file's modification time changes.
type certLoader struct {
	cert, key string
	mu        sync.Mutex
	stamp     [2]time.Time
	pair      *tls.Certificate
}

func (c *certLoader) get() (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var stamp [2]time.Time
	for i, p := range []string{c.cert, c.key} {
		st, err := os.Stat(p)
		if err != nil {
			if c.pair != nil {
				return c.pair, nil // mid-rotation: keep serving the old pair
			}
			return nil, fmt.Errorf("tls: %w", err)
		}
		stamp[i] = st.ModTime()
	}
	if c.pair != nil && stamp == c.stamp {
		return c.pair, nil
	}
	pair, err := tls.LoadX509KeyPair(c.cert, c.key)
	if err != nil {
		if c.pair != nil {
			return c.pair, nil
		}
		return nil, fmt.Errorf("tls: load key pair: %w", err)
	}
	c.pair, c.stamp = &pair, stamp
	return c.pair, nil
}
