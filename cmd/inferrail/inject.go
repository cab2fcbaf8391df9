package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/inferrail/inferrail/internal/buildinfo"
	"github.com/inferrail/inferrail/kube/inject"
)

func init() {
	register(command{name: "inject", summary: "add the sidecar to the engine pods of Kubernetes YAML", run: runInject})
}

// injectOptionFlags registers the flags that build the sidecar (shared by
// inject and webhook) and returns a function that reads them.
func injectOptionFlags(fs *flag.FlagSet) func() inject.Options {
	d := inject.DefaultOptions(buildinfo.Version())
	o := d
	fs.StringVar(&o.Image, "image", d.Image, "sidecar image")
	fs.StringVar(&o.ImagePullPolicy, "image-pull-policy", d.ImagePullPolicy, "sidecar image pull policy: Always, IfNotPresent or Never")
	fs.IntVar(&o.DataPort, "data-port", d.DataPort, "sidecar data-path port (balancers send requests here)")
	fs.IntVar(&o.AdminPort, "admin-port", d.AdminPort, "sidecar admin port (/healthz, /metrics)")
	fs.IntVar(&o.GossipPort, "gossip-port", d.GossipPort, "sidecar gossip port (TCP and UDP)")
	join := fs.String("join", strings.Join(d.Join, ","), "comma-separated gossip seeds host:port (the chart's gossip Service)")
	fs.StringVar(&o.GossipKeySecret, "gossip-key-secret", d.GossipKeySecret, `Secret with the gossip key, mounted into the sidecar; "" for no encryption`)
	fs.StringVar(&o.GossipKeySecretKey, "gossip-key-secret-key", d.GossipKeySecretKey, "data key of the gossip key in that Secret")
	fs.StringVar(&o.ClusterLabel, "cluster-label", d.ClusterLabel, "gossip cluster label")
	fs.StringVar(&o.CPURequest, "cpu-request", d.CPURequest, `sidecar CPU request ("" for none)`)
	fs.StringVar(&o.MemoryRequest, "memory-request", d.MemoryRequest, `sidecar memory request ("" for none)`)
	fs.StringVar(&o.MemoryLimit, "memory-limit", d.MemoryLimit, `sidecar memory limit ("" for none)`)
	fs.StringVar(&o.EngineContainer, "engine-container", "", "engine container name (default: the one container running vLLM, SGLang or llama-server; annotation "+inject.AnnotationContainer+")")
	fs.StringVar(&o.Engine, "engine", "", "engine kind vllm, sglang or llamacpp (default: from the command line; annotation "+inject.AnnotationEngine+")")
	fs.IntVar(&o.EnginePort, "engine-port", 0, "engine API port (default: --port of the command line, else 8000 for vLLM, 30000 for SGLang; annotation "+inject.AnnotationPort+")")
	fs.StringVar(&o.LogLevel, "sidecar-log-level", d.LogLevel, "sidecar log level")
	return func() inject.Options {
		o.Join = nil
		for _, s := range strings.Split(*join, ",") {
			if s = strings.TrimSpace(s); s != "" {
				o.Join = append(o.Join, s)
			}
		}
		return o
	}
}

func runInject(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("inject", "[flags] [FILE...]   (no FILE or - reads stdin)", stderr)
	options := injectOptionFlags(fs)
	quiet := fs.Bool("quiet", false, "do not report each pod template on stderr")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	o := options()
	if err := o.Validate(); err != nil {
		return fmt.Errorf("invalid flags:\n%w", err)
	}
	files := fs.Args()
	if len(files) == 0 {
		files = []string{"-"}
	}
	var out bytes.Buffer
	var errs []error
	for i, f := range files {
		in, err := readInput(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		res, reports, err := inject.InjectYAML(in, o)
		if !*quiet {
			for _, r := range reports {
				fmt.Fprintf(stderr, "%s: %s: %s\n", name(f), r.Object, r.Decision)
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name(f), err))
			continue
		}
		if i > 0 && len(res) > 0 {
			out.WriteString("---\n")
		}
		out.Write(res)
	}
	if len(errs) > 0 {
		return fmt.Errorf("nothing written:\n%w", errors.Join(errs...))
	}
	_, err := stdout.Write(out.Bytes())
	return err
}

func name(f string) string {
	if f == "-" {
		return "stdin"
	}
	return f
}

func readInput(f string) ([]byte, error) {
	var r io.Reader = os.Stdin
	if f != "-" {
		fh, err := os.Open(f)
		if err != nil {
			return nil, err
		}
		defer fh.Close()
		r = fh
	}
	b, err := io.ReadAll(io.LimitReader(r, inject.MaxInputBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name(f), err)
	}
	return b, nil
}
