package inject

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Engine kinds, as the sidecar's --engine flag spells them.
const (
	EngineVLLM     = "vllm"
	EngineSGLang   = "sglang"
	EngineLlamaCpp = "llamacpp"
)

// engineKinds lists the engine kinds, for the messages that name them.
const engineKinds = "vllm, sglang or llamacpp"

// Default API ports of the engines when the command line sets no --port:
// vLLM's `vllm serve` and its OpenAI api_server (vllm/entrypoints/openai/
// cli_args.py, port 8000) and SGLang's launch_server (python/sglang/srt/
// server_args.py, port 30000) and llama.cpp's llama-server (common/common.h,
// port 8080).
const (
	DefaultVLLMPort     = 8000
	DefaultSGLangPort   = 30000
	DefaultLlamaCppPort = 8080
)

// EngineInfo is what the engine container's command line says.
type EngineInfo struct {
	// Container is the engine container's name.
	Container string
	// Kind is EngineVLLM, EngineSGLang or EngineLlamaCpp.
	Kind string
	// Port is the engine's API port (also its /metrics port).
	Port int
	// Model is the served model name (--served-model-name, first of a list;
	// llama-server's --alias), or "" when the engine names it after the
	// model path: the sidecar then asks GET /v1/models.
	Model string
	// BlockSize is the KV block size (vLLM --block-size, SGLang --page-size),
	// 0 when unset: the sidecar reads it from the engine.
	BlockSize int
	// DataParallelSize is --data-parallel-size (vLLM) or --dp-size (SGLang).
	DataParallelSize int
	// KVEvents and KVReplay are the engine's KV-event PUB and replay
	// endpoints as the sidecar in the same pod dials them, "" when the
	// engine publishes none.
	KVEvents, KVReplay string
	// Metrics is false for an SGLang server without --enable-metrics and a
	// llama-server without --metrics, which serve no /metrics page.
	Metrics bool
}

// engineArgs returns the argv of c, with a shell wrapper (sh -c "...")
// split on white space, and the engine kind it starts, "" when none. A
// llama.cpp server image without a command runs llama-server (its
// entrypoint) with the container's args.
func engineArgs(c *corev1.Container) ([]string, string) {
	argv := append(append([]string{}, c.Command...), c.Args...)
	var words []string
	for i, a := range argv {
		if (a == "-c" || a == "-lc") && i > 0 && isShell(argv[i-1]) {
			for _, rest := range argv[i+1:] {
				words = append(words, splitShell(rest)...)
			}
			break
		}
		words = append(words, a)
	}
	for i, w := range words {
		base := w[strings.LastIndex(w, "/")+1:]
		switch {
		case base == "vllm" && i+1 < len(words) && words[i+1] == "serve":
			return words[i+2:], EngineVLLM
		case w == "vllm.entrypoints.openai.api_server":
			return words[i+1:], EngineVLLM
		case w == "sglang.launch_server":
			return words[i+1:], EngineSGLang
		case base == "sglang" && i+1 < len(words) && words[i+1] == "serve":
			return words[i+2:], EngineSGLang
		case base == "llama-server":
			return words[i+1:], EngineLlamaCpp
		}
	}
	if len(c.Command) == 0 && isLlamaCppServerImage(c.Image) {
		return append([]string{}, c.Args...), EngineLlamaCpp
	}
	return nil, ""
}

func isShell(s string) bool {
	base := s[strings.LastIndex(s, "/")+1:]
	return base == "sh" || base == "bash" || base == "dash" || base == "ash" || base == "zsh"
}

// splitShell splits a shell command on white space, keeping single- and
// double-quoted words whole (the KV-events JSON is usually quoted). It is
// not a shell: expansions stay as they are.
func splitShell(s string) []string {
	var words []string
	var cur strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case quote != 0 && ch == quote:
			quote = 0
		case quote != 0:
			cur.WriteByte(ch)
		case ch == '\'' || ch == '"':
			quote, in = ch, true
		case ch == ' ' || ch == '\t' || ch == '\n' || ch == ';' || ch == '&' || ch == '|':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		case ch == '\\' && i+1 < len(s) && s[i+1] == '\n':
			i++
		default:
			cur.WriteByte(ch)
			in = true
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words
}

// flagValues returns the values of the named flags in args, in order, for
// both "--name value" and "--name=value"; present reports a valueless
// "--name" too.
func flagValues(args []string, names ...string) (values []string, present bool) {
	for i := 0; i < len(args); i++ {
		for _, n := range names {
			if v, ok := strings.CutPrefix(args[i], n+"="); ok {
				values, present = append(values, v), true
			} else if args[i] == n {
				present = true
				if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
					values = append(values, args[i+1])
				}
			}
		}
	}
	return values, present
}

func lastFlag(args []string, names ...string) string {
	v, _ := flagValues(args, names...)
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

// readEngine reads the engine settings of container c, whose engine
// arguments are args.
func readEngine(c *corev1.Container, args []string, kind string) (EngineInfo, error) {
	if kind == EngineLlamaCpp {
		return readLlamaCpp(c, args)
	}
	e := EngineInfo{Container: c.Name, Kind: kind, Metrics: true, DataParallelSize: 1}
	num := func(flag string, dst *int, names ...string) error {
		if v := lastFlag(args, names...); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 65535 {
				return fmt.Errorf("container %q: %s %q is not a number in 1..65535", c.Name, flag, v)
			}
			*dst = n
		}
		return nil
	}
	e.Port = DefaultVLLMPort
	dpFlags := []string{"--data-parallel-size", "-dp"}
	blockFlags := []string{"--block-size"}
	if kind == EngineSGLang {
		e.Port = DefaultSGLangPort
		dpFlags = []string{"--dp-size", "--dp", "--data-parallel-size"}
		blockFlags = []string{"--page-size"}
		_, e.Metrics = flagValues(args, "--enable-metrics")
	}
	if err := num("--port", &e.Port, "--port"); err != nil {
		return e, err
	}
	if err := num(dpFlags[0], &e.DataParallelSize, dpFlags...); err != nil {
		return e, err
	}
	if err := num(blockFlags[0], &e.BlockSize, blockFlags...); err != nil {
		return e, err
	}
	if names, _ := flagValues(args, "--served-model-name"); len(names) > 0 {
		e.Model = strings.TrimSpace(strings.Split(names[0], ",")[0])
	}
	if cfg := lastFlag(args, "--kv-events-config"); cfg != "" {
		var kv struct {
			Enable   *bool  `json:"enable_kv_cache_events"`
			Endpoint string `json:"endpoint"`
			Replay   string `json:"replay_endpoint"`
		}
		if err := json.Unmarshal([]byte(cfg), &kv); err != nil {
			return e, fmt.Errorf("container %q: --kv-events-config is not JSON: %w", c.Name, err)
		}
		if kind == EngineSGLang || (kv.Enable != nil && *kv.Enable) {
			ep := kv.Endpoint
			if ep == "" {
				ep = "tcp://*:5557" // vLLM's and SGLang's default endpoint
			}
			var err error
			if e.KVEvents, err = localEndpoint(ep); err != nil {
				return e, fmt.Errorf("container %q: --kv-events-config endpoint: %w", c.Name, err)
			}
			if kv.Replay != "" {
				if e.KVReplay, err = localEndpoint(kv.Replay); err != nil {
					return e, fmt.Errorf("container %q: --kv-events-config replay_endpoint: %w", c.Name, err)
				}
			}
		}
	}
	return e, nil
}

// localEndpoint turns an engine's bind endpoint (tcp://*:5557) into the one
// a container of the same pod dials (tcp://127.0.0.1:5557).
func localEndpoint(ep string) (string, error) {
	u, err := url.Parse(ep)
	if err != nil || u.Scheme != "tcp" {
		return "", fmt.Errorf("%q is not tcp://host:port (the sidecar reads events over TCP only)", ep)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		return "", fmt.Errorf("%q is not tcp://host:port", ep)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("%q has no valid port", ep)
	}
	if host == "*" || host == "0.0.0.0" || host == "" || host == "::" || host == "[::]" {
		host = "127.0.0.1"
	}
	return "tcp://" + net.JoinHostPort(host, port), nil
}

// findEngine returns the pod's one engine container. name picks it
// explicitly (annotation or option); otherwise exactly one container must
// start vLLM, SGLang or llama-server.
func findEngine(spec *corev1.PodSpec, name, kindOverride string) (EngineInfo, bool, error) {
	var found []EngineInfo
	for i := range spec.Containers {
		c := &spec.Containers[i]
		if name != "" && c.Name != name {
			continue
		}
		args, kind := engineArgs(c)
		if kindOverride != "" {
			if kind == "" {
				args = append(append([]string{}, c.Command...), c.Args...)
			}
			kind = kindOverride
		}
		if kind == "" {
			if name != "" {
				return EngineInfo{}, false, fmt.Errorf("container %q runs neither vllm serve, vllm.entrypoints.openai.api_server, sglang.launch_server nor llama-server; set %s to %s", name, AnnotationEngine, engineKinds)
			}
			continue
		}
		e, err := readEngine(c, args, kind)
		if err != nil {
			return e, false, err
		}
		found = append(found, e)
	}
	switch {
	case len(found) == 1:
		return found[0], true, nil
	case len(found) > 1:
		names := make([]string, len(found))
		for i, e := range found {
			names[i] = e.Container
		}
		return EngineInfo{}, false, fmt.Errorf("containers %q all run an engine; name the one to front with %s", names, AnnotationContainer)
	case name != "":
		return EngineInfo{}, false, fmt.Errorf("no container named %q (from %s)", name, AnnotationContainer)
	}
	return EngineInfo{}, false, nil
}
