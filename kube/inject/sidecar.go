package inject

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Port names of the sidecar's container ports (at most 15 characters, unique
// in the pod).
const (
	PortData      = "ir-data"
	PortAdmin     = "ir-admin"
	PortGossip    = "ir-gossip"
	PortGossipUDP = "ir-gossip-udp"
)

// uid the image runs as (distroless "nonroot").
const nonRootUID = 65532

// sidecarArgs is the sidecar's command line (flags of `inferrail sidecar`,
// cmd/inferrail/sidecar.go) for engine e.
func sidecarArgs(o Options, e EngineInfo) []string {
	all := func(port int) string { return "0.0.0.0:" + strconv.Itoa(port) }
	args := []string{"sidecar",
		"--engine-url", "http://127.0.0.1:" + strconv.Itoa(e.Port),
		"--engine", e.Kind,
		"--listen", all(o.DataPort),
		"--admin", all(o.AdminPort),
		"--gossip-bind", all(o.GossipPort),
		"--join", strings.Join(o.Join, ","),
	}
	if e.Model != "" {
		args = append(args, "--model", e.Model)
	}
	if e.BlockSize > 0 {
		args = append(args, "--block-size", strconv.Itoa(e.BlockSize))
	}
	if e.KVEvents != "" {
		args = append(args, "--kv-events-endpoint", e.KVEvents)
		if e.KVReplay != "" {
			args = append(args, "--kv-events-replay-endpoint", e.KVReplay)
		}
	}
	if e.DataParallelSize > 1 {
		args = append(args, "--data-parallel-size", strconv.Itoa(e.DataParallelSize))
	}
	if o.GossipKeySecret != "" {
		args = append(args, "--gossip-key-file", path.Join(GossipKeyDir, o.GossipKeySecretKey))
	}
	if o.ClusterLabel != "" {
		args = append(args, "--cluster-label", o.ClusterLabel)
	}
	return append(args, "--log-level", o.LogLevel)
}

// sidecarContainer builds the sidecar for engine e.
func sidecarContainer(o Options, e EngineInfo) corev1.Container {
	fieldEnv := func(name, field string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: field}}}
	}
	port := func(name string, n int, proto corev1.Protocol) corev1.ContainerPort {
		return corev1.ContainerPort{Name: name, ContainerPort: int32(n), Protocol: proto}
	}
	c := corev1.Container{
		Name:            SidecarName,
		Image:           o.Image,
		ImagePullPolicy: corev1.PullPolicy(o.ImagePullPolicy),
		Args:            sidecarArgs(o, e),
		Env: []corev1.EnvVar{
			fieldEnv("POD_NAME", "metadata.name"),
			fieldEnv("POD_IP", "status.podIP"),
			fieldEnv("NODE_NAME", "spec.nodeName"),
		},
		Ports: []corev1.ContainerPort{
			port(PortData, o.DataPort, corev1.ProtocolTCP),
			port(PortAdmin, o.AdminPort, corev1.ProtocolTCP),
			port(PortGossip, o.GossipPort, corev1.ProtocolTCP),
			port(PortGossipUDP, o.GossipPort, corev1.ProtocolUDP),
		},
		// /healthz answers 503 while the sidecar drains (sidecar/admin.go):
		// readiness takes the pod out of Services at once. Liveness only asks
		// that the admin port accepts, so a drain is never cut short.
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString(PortAdmin)}},
			PeriodSeconds:    5,
			FailureThreshold: 2,
		},
		LivenessProbe: &corev1.Probe{
			ProbeHandler:        corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString(PortAdmin)}},
			InitialDelaySeconds: 5,
			PeriodSeconds:       10,
			FailureThreshold:    6,
		},
		Resources: resources(o),
		SecurityContext: &corev1.SecurityContext{
			RunAsNonRoot:             ptr(true),
			RunAsUser:                ptr(int64(nonRootUID)),
			AllowPrivilegeEscalation: ptr(false),
			ReadOnlyRootFilesystem:   ptr(true),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
	}
	if o.GossipKeySecret != "" {
		c.VolumeMounts = []corev1.VolumeMount{{Name: GossipKeyVolume, MountPath: GossipKeyDir, ReadOnly: true}}
	}
	return c
}

func resources(o Options) corev1.ResourceRequirements {
	var r corev1.ResourceRequirements
	set := func(m *corev1.ResourceList, name corev1.ResourceName, v string) {
		if v == "" {
			return
		}
		if *m == nil {
			*m = corev1.ResourceList{}
		}
		(*m)[name] = resource.MustParse(v) // Validate parsed it
	}
	set(&r.Requests, corev1.ResourceCPU, o.CPURequest)
	set(&r.Requests, corev1.ResourceMemory, o.MemoryRequest)
	set(&r.Limits, corev1.ResourceMemory, o.MemoryLimit)
	return r
}

// gossipKeyVolume is the Secret volume the sidecar reads its key from.
func gossipKeyVolume(o Options) *corev1.Volume {
	if o.GossipKeySecret == "" {
		return nil
	}
	return &corev1.Volume{Name: GossipKeyVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName:  o.GossipKeySecret,
		Items:       []corev1.KeyToPath{{Key: o.GossipKeySecretKey, Path: o.GossipKeySecretKey}},
		DefaultMode: ptr(int32(0o440)),
	}}}
}

func ptr[T any](v T) *T { return &v }

// portConflicts lists the sidecar ports that a container of spec already
// uses, by number or name.
func portConflicts(spec *corev1.PodSpec, c *corev1.Container, e EngineInfo) []string {
	var out []string
	mine := map[int32]string{}
	names := map[string]bool{}
	for _, p := range c.Ports {
		mine[p.ContainerPort] = p.Name
		names[p.Name] = true
	}
	if n, ok := mine[int32(e.Port)]; ok {
		out = append(out, fmt.Sprintf("the engine's port %d is the sidecar's %s port", e.Port, n))
	}
	for _, list := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for _, o := range list {
			for _, p := range o.Ports {
				if n, ok := mine[p.ContainerPort]; ok && (p.Protocol == "" || p.Protocol == corev1.ProtocolTCP || n == PortGossipUDP) {
					out = append(out, fmt.Sprintf("container %q already uses port %d (the sidecar's %s)", o.Name, p.ContainerPort, n))
				} else if p.Name != "" && names[p.Name] {
					out = append(out, fmt.Sprintf("container %q already has a port named %q", o.Name, p.Name))
				}
			}
		}
	}
	return out
}
