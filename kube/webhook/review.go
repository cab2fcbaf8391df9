package webhook

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/inferrail/inferrail/kube/inject"
)

// MaxReviewBytes bounds an AdmissionReview body (the API server sends at
// most 3 MiB objects; etcd's limit is 1.5 MiB).
const MaxReviewBytes = 8 << 20

var podResource = metav1.GroupVersionResource{Version: "v1", Resource: "pods"}

// mode says which pods a path injects.
type mode int

const (
	// unlessOptedOut injects every pod that does not say disabled.
	unlessOptedOut mode = iota
	// onlyAnnotated injects only pods annotated inferrail.io/inject=enabled.
	onlyAnnotated
)

// Outcomes counted in inferrail_webhook_reviews_total{outcome}.
const (
	outcomeInjected = "injected"
	outcomeSkipped  = "skipped"
	outcomeRefused  = "refused"
	outcomeInvalid  = "invalid"
)

// review answers one AdmissionReview request body.
func (s *Server) review(w http.ResponseWriter, r *http.Request, m mode) {
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		s.invalid(w, http.StatusUnsupportedMediaType, fmt.Errorf("content type must be application/json, got %q", ct))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxReviewBytes))
	if err != nil {
		s.invalid(w, http.StatusRequestEntityTooLarge, fmt.Errorf("read body: %w", err))
		return
	}
	in, err := DecodeReview(body)
	if err != nil {
		s.invalid(w, http.StatusBadRequest, err)
		return
	}
	resp, outcome := s.decide(in.Request, m)
	s.metrics.reviews.WithLabelValues(outcome).Inc()
	out := admissionv1.AdmissionReview{TypeMeta: in.TypeMeta, Response: resp}
	b, err := json.Marshal(out)
	if err != nil {
		s.invalid(w, http.StatusInternalServerError, fmt.Errorf("encode response: %w", err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// DecodeReview decodes an AdmissionReview v1 request and checks its shape.
func DecodeReview(body []byte) (*admissionv1.AdmissionReview, error) {
	var in admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, fmt.Errorf("decode AdmissionReview: %w", err)
	}
	if in.APIVersion != "admission.k8s.io/v1" || in.Kind != "AdmissionReview" {
		return nil, fmt.Errorf("want apiVersion admission.k8s.io/v1 and kind AdmissionReview, got %q %q", in.APIVersion, in.Kind)
	}
	if in.Request == nil {
		return nil, errors.New("AdmissionReview has no request")
	}
	if in.Request.UID == "" {
		return nil, errors.New("AdmissionReview request has no uid")
	}
	return &in, nil
}

// decide plans injection for one request. It always allows.
func (s *Server) decide(req *admissionv1.AdmissionRequest, m mode) (*admissionv1.AdmissionResponse, string) {
	resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	if req.Resource != podResource || req.SubResource != "" || req.Operation != admissionv1.Create {
		return resp, outcomeSkipped
	}
	var pod corev1.Pod
	if err := json.Unmarshal(req.Object.Raw, &pod); err != nil {
		resp.Warnings = []string{"inferrail: pod not injected: cannot decode it: " + err.Error()}
		s.log.Warn("undecodable pod", "namespace", req.Namespace, "err", err)
		return resp, outcomeInvalid
	}
	if m == onlyAnnotated && pod.Annotations[inject.LabelInject] != inject.InjectEnabled {
		return resp, outcomeSkipped
	}
	name := pod.Name
	if name == "" {
		name = pod.GenerateName + "*"
	}
	ops, d, err := inject.PodPatch(&pod, s.opts)
	if err != nil {
		resp.Warnings = []string{fmt.Sprintf("inferrail: pod %s/%s not injected: %v", req.Namespace, name, err)}
		s.log.Warn("pod not injected", "namespace", req.Namespace, "pod", name, "err", err)
		return resp, outcomeRefused
	}
	if d.Action != inject.Inject {
		s.log.Debug("pod skipped", "namespace", req.Namespace, "pod", name, "reason", d.Reason)
		return resp, outcomeSkipped
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		resp.Warnings = []string{"inferrail: pod not injected: " + err.Error()}
		return resp, outcomeInvalid
	}
	pt := admissionv1.PatchTypeJSONPatch
	resp.Patch, resp.PatchType = patch, &pt
	s.log.Info("pod injected", "namespace", req.Namespace, "pod", name, "engine", d.Engine.Kind,
		"container", d.Engine.Container, "port", d.Engine.Port, "kv_events", d.Engine.KVEvents)
	return resp, outcomeInjected
}

// invalid answers a request that is not an AdmissionReview.
func (s *Server) invalid(w http.ResponseWriter, status int, err error) {
	s.metrics.reviews.WithLabelValues(outcomeInvalid).Inc()
	s.log.Warn("bad admission request", slog.Int("status", status), "err", err)
	http.Error(w, err.Error(), status)
}
