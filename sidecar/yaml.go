package sidecar

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"go.yaml.in/yaml/v3"
)

// LoadConfigFile reads a YAML config file over DefaultConfig. It does not
// validate: apply flags and the environment first, then call Validate.
func LoadConfigFile(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("read config: %w", err)
	}
	cfg, err := DecodeConfig(b, DefaultConfig())
	if err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	return cfg, nil
}

// DecodeConfig decodes one YAML document over base, strictly: an unknown key,
// a wrong type or a second document is an error. An empty document leaves
// base as it is.
func DecodeConfig(b []byte, base Config) (Config, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	cfg := base
	if err := dec.Decode(&cfg); err != nil {
		if errors.Is(err, io.EOF) {
			return base, nil
		}
		return Config{}, fmt.Errorf("decode yaml: %w", err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return Config{}, errors.New("decode yaml: more than one document")
	}
	return cfg, nil
}

// Environment variables that Kubernetes injects through the downward API.
const (
	EnvPodIP    = "POD_IP"
	EnvPodName  = "POD_NAME"
	EnvNodeName = "NODE_NAME"
)

// ApplyEnv fills the gossip identity from the environment where the config
// leaves it unset: POD_IP becomes the advertise address, POD_NAME the node
// name and NODE_NAME the Kubernetes node. getenv is os.Getenv in production.
func (c *Config) ApplyEnv(getenv func(string) string) {
	if c.Gossip.Advertise == "" {
		c.Gossip.Advertise = getenv(EnvPodIP)
	}
	if c.Gossip.NodeName == "" {
		c.Gossip.NodeName = getenv(EnvPodName)
	}
	if c.Gossip.KubeNode == "" {
		c.Gossip.KubeNode = getenv(EnvNodeName)
	}
}
