package sidecar

import "github.com/inferrail/inferrail/internal/yamlconf"

// LoadConfigFile reads a YAML config file over DefaultConfig. It does not
// validate: apply flags and the environment first, then call Validate.
func LoadConfigFile(path string) (Config, error) {
	return yamlconf.LoadFile(path, DefaultConfig())
}

// DecodeConfig decodes one YAML document over base, strictly: every unknown
// key (with its path and line), every wrong type and a second document are
// reported at once. An empty document leaves base as it is.
func DecodeConfig(b []byte, base Config) (Config, error) {
	return yamlconf.Decode(b, base)
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
