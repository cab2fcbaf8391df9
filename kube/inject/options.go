package inject

import (
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Names of the labels and annotations injection reads and writes.
const (
	// LabelInject opts a pod (label or annotation) or a namespace (label) in
	// with "enabled" and out with "disabled".
	LabelInject = "inferrail.io/inject"
	// AnnotationInjected marks a pod injected; its value is the sidecar
	// image. A pod that carries it, or a container named SidecarName, is
	// left alone.
	AnnotationInjected = "inferrail.io/injected"
	// LabelSidecar labels injected pods (value "injected"), for the chart's
	// NetworkPolicy and for monitoring selectors.
	LabelSidecar = "inferrail.io/sidecar"
	// AnnotationContainer names the engine container when the command line
	// does not make it plain.
	AnnotationContainer = "inferrail.io/engine-container"
	// AnnotationEngine sets the engine kind (vllm, sglang or llamacpp) of a
	// container whose command line is not recognised (a wrapper script).
	AnnotationEngine = "inferrail.io/engine"
	// AnnotationPort sets the engine's API port.
	AnnotationPort = "inferrail.io/engine-port"
	// AnnotationModel sets the served model name the sidecar announces.
	AnnotationModel = "inferrail.io/model"
)

// Values of LabelInject.
const (
	InjectEnabled  = "enabled"
	InjectDisabled = "disabled"
)

// SidecarName is the injected container's name.
const SidecarName = "inferrail-sidecar"

// Where the gossip key Secret is mounted in the sidecar.
const (
	GossipKeyVolume = "inferrail-gossip-key"
	GossipKeyDir    = "/etc/inferrail/gossip"
)

// Options say how the sidecar is built. The zero value is not usable: start
// from DefaultOptions. Each field names the `inferrail inject` and
// `inferrail webhook` flag that sets it.
type Options struct {
	// Image is the inferrail image (--image).
	Image string
	// ImagePullPolicy is IfNotPresent, Always or Never (--image-pull-policy).
	ImagePullPolicy string
	// DataPort, AdminPort and GossipPort are the sidecar's data path, admin
	// and gossip (TCP and UDP) ports (--data-port, --admin-port,
	// --gossip-port).
	DataPort, AdminPort, GossipPort int
	// Join lists the gossip seeds host:port, usually the chart's headless
	// gossip Service (--join, comma-separated).
	Join []string
	// GossipKeySecret names the Secret holding the gossip key, "" for no
	// encryption (--gossip-key-secret); GossipKeySecretKey is its data key
	// (--gossip-key-secret-key).
	GossipKeySecret, GossipKeySecretKey string
	// ClusterLabel is the gossip cluster label (--cluster-label).
	ClusterLabel string
	// CPURequest, MemoryRequest and MemoryLimit are the sidecar's resources
	// (--cpu-request, --memory-request, --memory-limit; "" leaves one unset).
	CPURequest, MemoryRequest, MemoryLimit string
	// EngineContainer, Engine and EnginePort override what the command line
	// says for every pod (--engine-container, --engine, --engine-port); the
	// pod's annotations override these in turn.
	EngineContainer, Engine string
	EnginePort              int
	// LogLevel is the sidecar's --log-level (--sidecar-log-level).
	LogLevel string
}

// releaseVersion matches the versions that name a released image tag.
var releaseVersion = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+(-rc\.[0-9]+)?$`)

// DefaultOptions returns the defaults: the image of this version, the
// sidecar's documented ports and the seeds and Secret of a chart installed
// as release "inferrail" in namespace "inferrail".
func DefaultOptions(version string) Options {
	tag := "latest"
	if releaseVersion.MatchString(version) {
		tag = version
	}
	return Options{
		Image:              "ghcr.io/inferrail/inferrail:" + tag,
		ImagePullPolicy:    string(corev1.PullIfNotPresent),
		DataPort:           8100,
		AdminPort:          9100,
		GossipPort:         7946,
		Join:               []string{"inferrail-gossip.inferrail.svc.cluster.local:7946"},
		GossipKeySecret:    "inferrail-gossip",
		GossipKeySecretKey: "gossip.key",
		CPURequest:         "100m",
		MemoryRequest:      "128Mi",
		MemoryLimit:        "512Mi",
		LogLevel:           "info",
	}
}

// Validate reports every problem at once, each with its flag and value.
func (o Options) Validate() error {
	var errs []error
	bad := func(flag string, v any, why string) {
		errs = append(errs, fmt.Errorf("--%s %s, got %q", flag, why, fmt.Sprint(v)))
	}
	if o.Image == "" || strings.ContainsAny(o.Image, " \t\n") {
		bad("image", o.Image, "must be an image reference")
	}
	switch corev1.PullPolicy(o.ImagePullPolicy) {
	case corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	default:
		bad("image-pull-policy", o.ImagePullPolicy, "must be Always, IfNotPresent or Never")
	}
	ports := map[int]string{}
	for _, p := range []struct {
		flag string
		v    int
	}{{"data-port", o.DataPort}, {"admin-port", o.AdminPort}, {"gossip-port", o.GossipPort}} {
		if p.v < 1 || p.v > 65535 {
			bad(p.flag, p.v, "must be in 1..65535")
		} else if prev, ok := ports[p.v]; ok {
			bad(p.flag, p.v, "must differ from --"+prev)
		}
		ports[p.v] = p.flag
	}
	if len(o.Join) == 0 {
		bad("join", "", "must name at least one gossip seed host:port")
	}
	for _, j := range o.Join {
		if h, p, err := net.SplitHostPort(j); err != nil || h == "" || !validPort(p) {
			bad("join", j, "must be host:port")
		}
	}
	if o.GossipKeySecret != "" && o.GossipKeySecretKey == "" {
		bad("gossip-key-secret-key", o.GossipKeySecretKey, "must not be empty when --gossip-key-secret is set")
	}
	for _, q := range []struct{ flag, v string }{{"cpu-request", o.CPURequest}, {"memory-request", o.MemoryRequest}, {"memory-limit", o.MemoryLimit}} {
		if q.v == "" {
			continue
		}
		if _, err := resource.ParseQuantity(q.v); err != nil {
			bad(q.flag, q.v, "must be a Kubernetes quantity (100m, 128Mi)")
		}
	}
	if o.Engine != "" && !validEngine(o.Engine) {
		bad("engine", o.Engine, "must be "+engineKinds)
	}
	if o.EnginePort < 0 || o.EnginePort > 65535 {
		bad("engine-port", o.EnginePort, "must be in 1..65535 (0: from the command line)")
	}
	switch o.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		bad("sidecar-log-level", o.LogLevel, "must be debug, info, warn or error")
	}
	return errors.Join(errs...)
}

func validPort(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n >= 1 && n <= 65535
}
