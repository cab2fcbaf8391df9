package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
)

// testConfig is a component config for serve's tests: the file holds one
// line, "name port".
type testConfig struct {
	Name  string
	Port  int
	Steps []string // what touched the config, in order
}

type testRunner struct {
	cfg testConfig
	ran bool
}

func (r *testRunner) Run(context.Context) error { r.ran = true; return nil }

func testComponent(got **testRunner, reload *func() (testConfig, error)) component[testConfig, *testRunner] {
	return component[testConfig, *testRunner]{
		name:        "test",
		configUsage: "config file",
		defaults:    func() testConfig { return testConfig{Name: "default", Steps: []string{"defaults"}} },
		loadFile: func(path string) (testConfig, error) {
			b, err := os.ReadFile(path)
			if err != nil {
				return testConfig{}, err
			}
			name, port, _ := strings.Cut(strings.TrimSpace(string(b)), " ")
			n, err := strconv.Atoi(port)
			return testConfig{Name: name, Port: n, Steps: []string{"file"}}, err
		},
		flags: []configFlag[testConfig]{
			{"name", "name", func(c *testConfig, v string) error { c.Name = v; c.Steps = append(c.Steps, "--name"); return nil }},
			{"port", "port", func(c *testConfig, v string) error {
				n, err := strconv.Atoi(v)
				c.Port = n
				c.Steps = append(c.Steps, "--port")
				return err
			}},
		},
		finish: func(c *testConfig) error {
			c.Steps = append(c.Steps, "finish")
			if c.Port < 0 {
				return errors.New("invalid config: port < 0")
			}
			return nil
		},
		newRunner: func(c testConfig, log *slog.Logger, reg *prometheus.Registry) (*testRunner, error) {
			if log == nil || reg == nil {
				return nil, errors.New("no logger or registry")
			}
			if mfs, err := reg.Gather(); err != nil || len(mfs) == 0 {
				return nil, errors.New("the registry has no Go and process collectors")
			}
			return &testRunner{cfg: c}, nil
		},
		started: func(r *testRunner, load func() (testConfig, error)) { *got, *reload = r, load },
	}
}

// TestServeAppliesFlagsOverFileThenFinishes checks the start-up order: the
// file (or the defaults), each flag in order, then finish; and that the
// reload source reads the file again with the same flags and without finish.
func TestServeAppliesFlagsOverFileThenFinishes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c")
	if err := os.WriteFile(path, []byte("file 1"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want testConfig
	}{
		{"defaults", nil, testConfig{Name: "default", Steps: []string{"defaults", "finish"}}},
		{"file", []string{"--config", path}, testConfig{Name: "file", Port: 1, Steps: []string{"file", "finish"}}},
		{"flags over file, in order", []string{"--port", "3", "--config", path, "--name", "flag", "--port", "4"},
			testConfig{Name: "flag", Port: 4, Steps: []string{"file", "--port", "--name", "--port", "finish"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r *testRunner
			var reload func() (testConfig, error)
			if err := serve(context.Background(), tt.args, &bytes.Buffer{}, testComponent(&r, &reload)); err != nil {
				t.Fatal(err)
			}
			if r == nil || !r.ran {
				t.Fatal("the component was not started and run")
			}
			if diff := cmp.Diff(tt.want, r.cfg); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
			again, err := reload()
			if err != nil {
				t.Fatal(err)
			}
			want := tt.want
			want.Steps = want.Steps[:len(want.Steps)-1]
			if diff := cmp.Diff(want, again); diff != "" {
				t.Errorf("reloaded config (-want +got):\n%s", diff)
			}
		})
	}
}

func TestServeErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"bad flag value", []string{"--port", "x"}, `--port "x": strconv.Atoi`},
		{"bad log level", []string{"--log-level", "loud"}, "--log-level"},
		{"missing file", []string{"--config", filepath.Join(t.TempDir(), "none")}, "none"},
		{"finish fails", []string{"--port", "-1"}, "invalid config: port < 0"},
		{"unknown flag", []string{"--nope"}, errUsage.Error()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r *testRunner
			var reload func() (testConfig, error)
			err := serve(context.Background(), tt.args, &bytes.Buffer{}, testComponent(&r, &reload))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("serve(%q) = %v, want an error containing %q", tt.args, err, tt.want)
			}
			if r != nil {
				t.Error("the component started despite the error")
			}
		})
	}
}

// TestStartupErrorsThroughTheCLI checks that the balancer and the sidecar
// report bad flags and bad configs through the shared start-up flow before
// they open any port.
func TestStartupErrorsThroughTheCLI(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"sidecar", "--block-size", "x"}, `inferrail sidecar: --block-size "x"`},
		{[]string{"sidecar", "--listen", "nowhere"}, "inferrail sidecar: invalid config:"},
		{[]string{"sidecar", "--log-level", "loud"}, "inferrail sidecar: --log-level"},
		{[]string{"balancer", "--log-level", "loud"}, "inferrail balancer: --log-level"},
		{[]string{"balancer", "--listen", "nowhere"}, "inferrail balancer: invalid config:"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stderr bytes.Buffer
			if code := runMain(context.Background(), tt.args, &bytes.Buffer{}, &stderr); code != 1 {
				t.Errorf("exit code %d, want 1", code)
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("stderr %q, want it to contain %q", stderr.String(), tt.want)
			}
		})
	}
}

func TestSplitList(t *testing.T) {
	for in, want := range map[string][]string{"": nil, " , ": nil, "a": {"a"}, " a, b ,,c ": {"a", "b", "c"}} {
		if got := splitList(in); !cmp.Equal(got, want) {
			t.Errorf("splitList(%q) = %q, want %q", in, got, want)
		}
	}
}
