package gossip

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestNodeConfigConfig(t *testing.T) {
	key := filepath.Join(t.TempDir(), "gossip.key")
	if err := os.WriteFile(key, []byte("0123456789abcdef"), 0o600); err != nil {
		t.Fatal(err)
	}
	want := func(edit func(*Config)) Config {
		c := DefaultConfig()
		c.Role = RoleSidecar
		edit(&c)
		return c
	}
	tests := []struct {
		name string
		in   NodeConfig
		want Config
	}{
		{"bind only", NodeConfig{Bind: "127.0.0.1:7946", Profile: "lan"}, want(func(c *Config) {
			c.BindAddr, c.BindPort = "127.0.0.1", 7946
		})},
		{"advertise host:port", NodeConfig{Bind: "0.0.0.0:0", Advertise: "10.0.0.7:8000", Profile: "lan"}, want(func(c *Config) {
			c.BindAddr, c.BindPort = "0.0.0.0", 0
			c.AdvertiseAddr, c.AdvertisePort = "10.0.0.7", 8000
		})},
		{"advertise host only", NodeConfig{Bind: "0.0.0.0:7946", Advertise: "10.0.0.7", Profile: "lan"}, want(func(c *Config) {
			c.AdvertiseAddr = "10.0.0.7"
		})},
		{"everything", NodeConfig{
			Bind: "0.0.0.0:7000", NodeName: "engine-0", Join: []string{"b-0:7946", "b-1:7946"}, KeyFile: key,
			ClusterLabel: "prod", Profile: "local",
			Timings: Timings{LoadInterval: 5 * time.Millisecond, SummaryMaxAge: 3 * time.Second, ResyncInterval: 50 * time.Millisecond},
		}, want(func(c *Config) {
			c.BindPort, c.NodeName, c.Join = 7000, "engine-0", []string{"b-0:7946", "b-1:7946"}
			c.SecretKey, c.ClusterLabel, c.Profile = []byte("0123456789abcdef"), "prod", ProfileLocal
			c.LoadInterval, c.SummaryMaxAge, c.ResyncInterval = 5*time.Millisecond, 3*time.Second, 50*time.Millisecond
		})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.in.Config(RoleSidecar)
			if err != nil {
				t.Fatalf("Config: %v", err)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreUnexported(Config{})); diff != "" {
				t.Errorf("Config() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNodeConfigConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		in   NodeConfig
		want string
	}{
		{"bind without port", NodeConfig{Bind: "127.0.0.1"}, "gossip.bind"},
		{"bind port not a number", NodeConfig{Bind: "127.0.0.1:http"}, "gossip.bind port"},
		{"missing key file", NodeConfig{Bind: "127.0.0.1:0", KeyFile: filepath.Join(t.TempDir(), "none")}, "none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.in.Config(RoleBalancer)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Config() error = %v, want one naming %q", err, tt.want)
			}
		})
	}
}

func TestNodeConfigValidate(t *testing.T) {
	ok := NodeConfig{Bind: "0.0.0.0:7946", Advertise: "sc-0.fleet:7946", Join: []string{"seed:7946"}, Profile: "lan"}
	if err := ok.Validate("gossip"); err != nil {
		t.Fatalf("Validate(%+v) = %v, want nil", ok, err)
	}
	bad := NodeConfig{
		Bind:         "localhost:7946",
		Advertise:    "not an ip",
		Join:         []string{"seed:7946", "seed"},
		Profile:      "wan",
		ClusterLabel: strings.Repeat("x", 256),
		Timings:      Timings{LoadMaxAge: -time.Second},
	}
	err := bad.Validate("gossip")
	if err == nil {
		t.Fatalf("Validate(%+v) = nil, want errors", bad)
	}
	for _, want := range []string{
		`gossip.bind must be IP:port, got "localhost:7946"`,
		`gossip.advertise must be an IP or host:port, got "not an ip"`,
		`gossip.join[1] must be host:port, got "seed"`,
		`gossip.profile must be lan or local, got "wan"`,
		`gossip.cluster_label must have at most 255 bytes, got "256 bytes"`,
		`gossip.load_max_age must be >= 0`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate error %q does not contain %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "join[0]") {
		t.Errorf("Validate error %q names the valid join[0]", err)
	}
}
