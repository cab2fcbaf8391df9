// Package yamlconf decodes YAML config files strictly over defaults: every
// unknown key (named by its path and line), every key that was removed (with
// where its setting lives now, see Removed), every wrong type and a second
// document are reported, all at once. The balancer and the sidecar share it.
package yamlconf

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// LoadFile reads path and decodes it over base (see Decode). Errors name the
// file.
func LoadFile[T any](path string, base T) (T, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		var zero T
		return zero, fmt.Errorf("read config: %w", err)
	}
	cfg, err := Decode(b, base)
	if err != nil {
		return cfg, fmt.Errorf("config %s:\n%w", path, err)
	}
	return cfg, nil
}

// Decode decodes one YAML document over base. An empty document returns base.
// On an error the returned value holds what could be decoded, so a caller can
// still validate it and report every problem at once. Types may implement
// yaml.Unmarshaler (e.g. to start list entries from their own defaults): the
// unknown-key check walks the document against the Go types itself, because
// yaml's own strict mode is lost inside custom unmarshalers.
func Decode[T any](b []byte, base T) (T, error) {
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return base, nil
		}
		var zero T
		return zero, fmt.Errorf("decode yaml: %w", err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		var zero T
		return zero, errors.New("decode yaml: more than one document")
	}
	var errs []error
	if len(root.Content) > 0 {
		errs = checkKnown(root.Content[0], reflect.TypeFor[T](), "", errs)
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

var durationType = reflect.TypeFor[time.Duration]()

// Removed is implemented by a config struct that once had keys it has no
// longer: RemovedKeys maps each such key to what replaces it (a sentence
// fragment such as "the load staleness limit is gossip.load_max_age"). A
// document that still sets one gets an error naming its path, its line and
// that replacement, not a bare "unknown key".
type Removed interface {
	RemovedKeys() map[string]string
}

// removedKeys returns t's RemovedKeys (nil when t does not implement Removed).
func removedKeys(t reflect.Type) map[string]string {
	if r, ok := reflect.Zero(t).Interface().(Removed); ok {
		return r.RemovedKeys()
	}
	if r, ok := reflect.New(t).Interface().(Removed); ok {
		return r.RemovedKeys()
	}
	return nil
}

// checkKnown appends an error for every mapping key of n that has no field
// in t, naming it by path and line.
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
		removed := removedKeys(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := join(path, k.Value)
			ft, ok := fields[k.Value]
			if !ok {
				if now, ok := removed[k.Value]; ok {
					errs = append(errs, fmt.Errorf("line %d: %s: removed: %s", k.Line, p, now))
				} else {
					errs = append(errs, fmt.Errorf("line %d: %s: unknown key", k.Line, p))
				}
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
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
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

// MissingKeys lists, sorted, the config keys of T (as dotted paths, "[]" for
// list entries) that the YAML document does not name. Tests use it to keep an
// example config documenting every key.
func MissingKeys[T any](doc []byte) ([]string, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(doc, &root); err != nil {
		return nil, fmt.Errorf("decode yaml: %w", err)
	}
	have := map[string]bool{}
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				walk(c, path)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				p := join(path, n.Content[i].Value)
				have[p] = true
				walk(n.Content[i+1], p)
			}
		case yaml.SequenceNode:
			for _, c := range n.Content {
				walk(c, path+"[]")
			}
		}
	}
	walk(&root, "")
	var missing []string
	var want func(t reflect.Type, path string)
	want = func(t reflect.Type, path string) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch {
		case t == durationType:
		case t.Kind() == reflect.Struct:
			for name, ft := range yamlFields(t) {
				p := join(path, name)
				if !have[p] {
					missing = append(missing, p)
				}
				want(ft, p)
			}
		case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct:
			want(t.Elem(), path+"[]")
		}
	}
	want(reflect.TypeFor[T](), "")
	slices.Sort(missing)
	return missing, nil
}
