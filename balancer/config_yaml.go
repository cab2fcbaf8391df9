package balancer

import (
	"go.yaml.in/yaml/v3"

	"github.com/inferrail/inferrail/internal/yamlconf"
)

// LoadConfigFile reads a YAML config file over DefaultConfig. It does not
// validate: apply flags first, then call Validate. On a decoding error the
// config holds what could be decoded (see DecodeConfig).
func LoadConfigFile(path string) (Config, error) {
	return yamlconf.LoadFile(path, DefaultConfig())
}

// DecodeConfig decodes one YAML document over base, strictly: every
// unknown key (named by its path and line), every wrong type and a second
// document are reported, all at once. Each models[] entry starts from the
// model defaults. An empty document returns base. On an error the returned
// config holds what could be decoded, so a caller can still validate it and
// report every problem at once.
func DecodeConfig(b []byte, base Config) (Config, error) {
	return yamlconf.Decode(b, base)
}

// UnmarshalYAML decodes a discovery.dns[] entry over the group defaults.
func (g *DNSGroupConfig) UnmarshalYAML(n *yaml.Node) error {
	type plain DNSGroupConfig
	p := plain(defaultDNSGroup())
	if err := n.Decode(&p); err != nil {
		return err
	}
	*g = DNSGroupConfig(p)
	return nil
}

// UnmarshalYAML decodes a models[] entry over the model defaults.
func (m *ModelConfig) UnmarshalYAML(n *yaml.Node) error {
	type plain ModelConfig
	p := plain(defaultModel())
	if err := n.Decode(&p); err != nil {
		return err
	}
	*m = ModelConfig(p)
	return nil
}
