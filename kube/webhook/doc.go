// Package webhook is the mutating admission webhook that injects the
// inferrail sidecar into engine pods as they are created, with the same code
// as `inferrail inject` (kube/inject). It serves AdmissionReview v1 over TLS:
//
//   - POST /inject: inject every pod sent, unless it opts out
//     (inferrail.io/inject=disabled) — the MutatingWebhookConfiguration sends
//     the pods that opt in by label, or whose namespace does;
//   - POST /inject-annotated: inject only pods annotated
//     inferrail.io/inject=enabled (for a configuration that sends every pod);
//   - GET /healthz: 200 while serving.
//
// The answer always allows the pod: a pod that cannot be injected is
// admitted unchanged with a warning, so the webhook never blocks an engine
// (the chart also sets failurePolicy: Ignore). A pod already injected gets
// an empty patch, so reinvocation is harmless.
package webhook
