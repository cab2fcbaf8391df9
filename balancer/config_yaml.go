package balancer

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// LoadConfigFile reads a YAML config file over DefaultConfig. It does not
// validate: apply flags first, then call Validate. On a decoding error the
// config holds what could be decoded (see DecodeConfig).
func LoadConfigFile(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("read config: %w", err)
	}
	cfg, err := DecodeConfig(b, DefaultConfig())
	if err != nil {
		return cfg, fmt.Errorf("config %s:\n%w", path, err)
	}
	return cfg, nil
}

// DecodeConfig decodes one YAML document over base, strictly: every
// unknown key (named by its path and line), every wrong type and a second
// document are reported, all at once. Each models[] entry starts from the
// model defaults. An empty document returns base. On an error the returned
// config holds what could be decoded, so a caller can still validate it and
// report every problem at once.
func DecodeConfig(b []byte, base Config) (Config, error) {
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return base, nil
		}
		return Config{}, fmt.Errorf("decode yaml: %w", err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return Config{}, errors.New("decode yaml: more than one document")
	}
	var errs []error
	if len(root.Content) > 0 {
		errs = checkKnown(root.Content[0], reflect.TypeFor[Config](), "", errs)
	}
	cfg := base
	if err := root.Decode(&cfg); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			for _, e := range te.Errors {
				errs = append(errs, errors.New(e))
			}
		} else {
			errs = append(errs, fmt.Errorf("decode yaml: %w", err))
		}
	}
	return cfg, errors.Join(errs...)
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

var durationType = reflect.TypeFor[time.Duration]()

// checkKnown appends an error for every mapping key of n that has no field
// in t, naming it by path and line. yaml's own strict mode is lost inside
// custom unmarshalers, so the balancer checks the whole tree itself.
func checkKnown(n *yaml.Node, t reflect.Type, path string, errs []error) []error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	switch t.Kind() {
	case reflect.Struct:
		if t == durationType || n.Kind != yaml.MappingNode {
			return errs
		}
		fields := yamlFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := join(path, k.Value)
			ft, ok := fields[k.Value]
			if !ok {
				errs = append(errs, fmt.Errorf("line %d: %s: unknown key", k.Line, p))
				continue
			}
			errs = checkKnown(v, ft, p, errs)
		}
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml.SequenceNode {
			return errs
		}
		for i, v := range n.Content {
			errs = checkKnown(v, t.Elem(), fmt.Sprintf("%s[%d]", path, i), errs)
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return errs
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			errs = checkKnown(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value), errs)
		}
	}
	return errs
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// yamlFields maps the YAML keys of struct t (inline fields flattened) to
// their types.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") {
			for k, v := range yamlFields(f.Type) {
				out[k] = v
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f.Type
	}
	return out
}
