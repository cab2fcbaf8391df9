package main

import (
	"context"
	"io"

	"github.com/inferrail/inferrail/kube/webhook"
)

func init() {
	register(command{name: "webhook", summary: "admission webhook that injects the sidecar into engine pods", run: runWebhook})
}

func runWebhook(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("webhook", "--tls-cert-file FILE --tls-key-file FILE [flags]", stderr)
	listen := fs.String("listen", "0.0.0.0:8443", "HTTPS address: POST /inject, POST /inject-annotated, GET /healthz, GET /metrics")
	cert := fs.String("tls-cert-file", "", "PEM serving certificate (read again when it changes)")
	key := fs.String("tls-key-file", "", "PEM private key of the certificate")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn or error")
	options := injectOptionFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	log, err := levelLogger(*logLevel, stderr)
	if err != nil {
		return err
	}
	s, err := webhook.New(webhook.Config{Listen: *listen, CertFile: *cert, KeyFile: *key, Inject: options()}, log, processRegistry())
	if err != nil {
		return err
	}
	return s.Run(ctx)
}
