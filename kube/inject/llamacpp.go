package inject

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// llama.cpp's llama-server, as its command line and environment configure
// it (docs/kubernetes.md#what-the-sidecar-gets; read from ggml-org/llama.cpp
// at 80fb11ac, the tree node-llama-cpp@3.21.1 ships):
//
//   - common/arg.cpp: --port (env LLAMA_ARG_PORT), --host (LLAMA_ARG_HOST; a
//     value ending in .sock is a UNIX socket), --metrics
//     (LLAMA_ARG_ENDPOINT_METRICS, a flag: on, enabled, true or 1 sets it),
//     -a/--alias (LLAMA_ARG_ALIAS, comma-separated). The environment is read
//     first and the command line over it; aliases from both add up.
//   - common/common.h: port 8080, endpoint_metrics false.
//   - tools/server/server-context.cpp: the served model name is the first
//     alias of a std::set, the smallest.
//   - .devops/*.Dockerfile: the server images (ghcr.io/ggml-org/llama.cpp:
//     server, server-cuda, server-vulkan...) have ENTRYPOINT
//     ["/app/llama-server"], so a pod of one often sets args only.

// Environment variables llama-server reads in place of its flags.
const (
	llamaEnvPort    = "LLAMA_ARG_PORT"
	llamaEnvHost    = "LLAMA_ARG_HOST"
	llamaEnvMetrics = "LLAMA_ARG_ENDPOINT_METRICS"
	llamaEnvAlias   = "LLAMA_ARG_ALIAS"
)

// isLlamaCppServerImage reports whether image is one of llama.cpp's server
// images: a repository named llama.cpp with a tag server or server-<backend>
// (ghcr.io/ggml-org/llama.cpp:server-cuda, the older ggerganov one, or a
// local build tagged the same way; docs/docker.md upstream).
func isLlamaCppServerImage(image string) bool {
	ref, _, _ := strings.Cut(image, "@")
	slash := strings.LastIndex(ref, "/")
	name, tag, ok := strings.Cut(ref[slash+1:], ":")
	return ok && name == "llama.cpp" && (tag == "server" || strings.HasPrefix(tag, "server-"))
}

// containerEnv is one variable of c's env: its literal value, whether it is
// set at all, and whether its value is known (a valueFrom is not). envFrom
// is not read: a variable set there counts as unset.
func containerEnv(c *corev1.Container, name string) (value string, set, known bool) {
	for i := len(c.Env) - 1; i >= 0; i-- { // the last of duplicates wins
		if e := c.Env[i]; e.Name == name {
			return e.Value, true, e.ValueFrom == nil
		}
	}
	return "", false, false
}

// readLlamaCpp reads the settings of a llama-server container c whose
// arguments (after the program name) are args. A port set by a valueFrom
// variable is unknown: Port is 0 and the caller must have an override.
func readLlamaCpp(c *corev1.Container, args []string) (EngineInfo, error) {
	e := EngineInfo{Container: c.Name, Kind: EngineLlamaCpp, Port: DefaultLlamaCppPort, DataParallelSize: 1}
	port, from := lastFlag(args, "--port"), "--port"
	if port == "" {
		if v, set, known := containerEnv(c, llamaEnvPort); set && !known {
			e.Port = 0
		} else if set {
			port, from = v, "env "+llamaEnvPort
		}
	}
	if port != "" {
		n, err := strconv.Atoi(strings.TrimSpace(port))
		if err != nil || n < 1 || n > 65535 {
			return e, fmt.Errorf("container %q: %s %q is not a number in 1..65535", c.Name, from, port)
		}
		e.Port = n
	}
	host := lastFlag(args, "--host")
	if host == "" {
		host, _, _ = containerEnv(c, llamaEnvHost)
	}
	if strings.HasSuffix(host, ".sock") {
		return e, fmt.Errorf("container %q: llama-server listens on the UNIX socket %q: the sidecar reaches the engine over TCP (set --host and --port)", c.Name, host)
	}
	_, e.Metrics = flagValues(args, "--metrics")
	if v, set, known := containerEnv(c, llamaEnvMetrics); set && (!known || isTruthy(v)) {
		e.Metrics = true // a valueFrom may well say "on": do not refuse on a guess
	}
	var aliases []string
	values, _ := flagValues(args, "-a", "--alias")
	if v, set, _ := containerEnv(c, llamaEnvAlias); set {
		values = append(values, v)
	}
	for _, v := range values {
		for _, a := range strings.Split(v, ",") {
			if a = strings.TrimSpace(a); a != "" {
				aliases = append(aliases, a)
			}
		}
	}
	if len(aliases) > 0 {
		e.Model = slices.Min(aliases) // the server names itself after the set's first
	}
	return e, nil
}

// isTruthy is llama.cpp's common_arg_utils::is_truthy.
func isTruthy(v string) bool {
	return v == "on" || v == "enabled" || v == "true" || v == "1"
}
