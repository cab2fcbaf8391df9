package inject

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Report is what happened to one pod template of the input.
type Report struct {
	// Object names it: kind/name, with the path of the template inside it
	// ("Deployment/vllm spec.template").
	Object string
	// Decision is Plan's answer for it.
	Decision Decision
}

// MaxInputBytes bounds the YAML that InjectYAML reads.
const MaxInputBytes = 64 << 20

// InjectYAML reads Kubernetes YAML (any number of documents) and returns it
// with the sidecar added to every pod template that runs an engine. Other
// documents and templates are kept; comments and key order are kept where
// go.yaml.in/yaml/v3 keeps them (the output is re-indented by 2); input with
// nothing to inject is returned as it is. A template
// that runs an engine but cannot be injected fails the whole input, every
// problem named by document, object and template; no output is returned
// then.
func InjectYAML(in []byte, o Options) ([]byte, []Report, error) {
	if err := o.Validate(); err != nil {
		return nil, nil, err
	}
	if len(in) > MaxInputBytes {
		return nil, nil, fmt.Errorf("input is larger than %d bytes", MaxInputBytes)
	}
	dec := yaml.NewDecoder(bytes.NewReader(in))
	var docs []*yaml.Node
	for i := 1; ; i++ {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("document %d: %w", i, err)
		}
		docs = append(docs, &doc)
	}
	var reports []Report
	var errs []error
	for i, doc := range docs {
		if len(doc.Content) == 0 {
			continue
		}
		rs, err := injectObject(doc.Content[0], o, 0)
		reports = append(reports, rs...)
		if err != nil {
			errs = append(errs, fmt.Errorf("document %d: %w", i+1, err))
		}
	}
	if len(errs) > 0 {
		return nil, reports, errors.Join(errs...)
	}
	changed := false
	for _, r := range reports {
		changed = changed || r.Decision.Action == Inject
	}
	if !changed {
		return in, reports, nil
	}
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	for _, doc := range docs {
		if err := enc.Encode(doc); err != nil {
			return nil, reports, fmt.Errorf("encode yaml: %w", err)
		}
	}
	if err := enc.Close(); err != nil {
		return nil, reports, fmt.Errorf("encode yaml: %w", err)
	}
	return out.Bytes(), reports, nil
}

// maxListDepth bounds nested Lists.
const maxListDepth = 8

// injectObject injects every pod template of one object (a mapping node).
func injectObject(obj *yaml.Node, o Options, depth int) ([]Report, error) {
	if obj.Kind != yaml.MappingNode {
		return nil, nil
	}
	apiVersion, kind := scalar(obj, "apiVersion"), scalar(obj, "kind")
	name := kind + "/" + scalar(lookup(obj, "metadata"), "name")
	if kind == "List" || strings.HasSuffix(kind, "List") && lookup(obj, "items") != nil {
		items := lookup(obj, "items")
		if items == nil || items.Kind != yaml.SequenceNode || depth >= maxListDepth {
			return nil, nil
		}
		var reports []Report
		var errs []error
		for i, it := range items.Content {
			rs, err := injectObject(it, o, depth+1)
			reports = append(reports, rs...)
			if err != nil {
				errs = append(errs, fmt.Errorf("items[%d]: %w", i, err))
			}
		}
		return reports, errors.Join(errs...)
	}
	var reports []Report
	var errs []error
	for _, path := range templatePaths(apiVersion, kind) {
		tmpl := obj
		for _, k := range path {
			if tmpl = lookup(tmpl, k); tmpl == nil {
				break
			}
		}
		if tmpl == nil || tmpl.Kind != yaml.MappingNode {
			continue
		}
		where := name
		if len(path) > 0 {
			where += " " + strings.Join(path, ".")
		}
		d, err := injectTemplate(tmpl, o)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
			continue
		}
		reports = append(reports, Report{Object: where, Decision: d})
	}
	return reports, errors.Join(errs...)
}

// injectTemplate plans and applies injection to one pod template node.
func injectTemplate(tmpl *yaml.Node, o Options) (Decision, error) {
	specNode := lookup(tmpl, "spec")
	if specNode == nil || specNode.Kind != yaml.MappingNode {
		return Decision{Action: Skip, Reason: ReasonNoEngine}, nil
	}
	var meta metav1.ObjectMeta
	if m := lookup(tmpl, "metadata"); m != nil {
		if err := viaJSON(m, &meta); err != nil {
			return Decision{}, fmt.Errorf("metadata: %w", err)
		}
	}
	var spec corev1.PodSpec
	if err := viaJSON(specNode, &spec); err != nil {
		return Decision{}, fmt.Errorf("spec: %w", err)
	}
	d, err := Plan(meta, &spec, o)
	if err != nil || d.Action != Inject {
		return d, err
	}
	containers := lookup(specNode, "containers")
	if containers == nil || containers.Kind != yaml.SequenceNode {
		return Decision{}, errors.New("spec.containers is not a list")
	}
	cn, err := toNode(d.Container)
	if err != nil {
		return Decision{}, err
	}
	containers.Content = append(containers.Content, cn)
	if d.Volume != nil {
		vn, err := toNode(d.Volume)
		if err != nil {
			return Decision{}, err
		}
		vols := ensure(specNode, "volumes", yaml.SequenceNode)
		vols.Content = append(vols.Content, vn)
	}
	mn := ensure(tmpl, "metadata", yaml.MappingNode)
	labels := ensure(mn, "labels", yaml.MappingNode)
	for k, v := range d.Labels {
		set(labels, k, v)
	}
	ann := ensure(mn, "annotations", yaml.MappingNode)
	for k, v := range d.Annotations {
		set(ann, k, v)
	}
	return d, nil
}

// viaJSON decodes a YAML node into a Kubernetes Go type the way the API
// server reads it: through JSON, so the types' json tags apply.
func viaJSON(n *yaml.Node, v any) error {
	var raw any
	if err := n.Decode(&raw); err != nil {
		return err
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return fmt.Errorf("not a Kubernetes object: %w", err)
	}
	return json.Unmarshal(b, v)
}

// toNode turns a Kubernetes Go value into a block-style YAML node.
func toNode(v any) (*yaml.Node, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	n := doc.Content[0]
	plain(n)
	return n, nil
}

// yaml11Bools are the words YAML 1.1 readers (sigs.k8s.io/yaml, so kubectl)
// take for booleans where YAML 1.2 reads strings.
var yaml11Bools = map[string]bool{"y": true, "Y": true, "yes": true, "Yes": true, "YES": true, "n": true, "N": true,
	"no": true, "No": true, "NO": true, "on": true, "On": true, "ON": true, "off": true, "Off": true, "OFF": true}

// plain drops the flow and quoting styles that JSON gave n, keeping quotes
// only where a plain scalar would change type for a YAML 1.1 or 1.2 reader.
func plain(n *yaml.Node) {
	n.Style = 0
	if n.Kind == yaml.ScalarNode && n.Tag == "!!str" {
		var back any
		if yaml11Bools[n.Value] || yaml.Unmarshal([]byte(n.Value), &back) != nil || back != n.Value {
			n.Style = yaml.DoubleQuotedStyle
		}
	}
	for _, c := range n.Content {
		plain(c)
	}
}

// lookup returns the value of key in mapping n, or nil.
func lookup(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

func scalar(n *yaml.Node, key string) string {
	if v := lookup(n, key); v != nil && v.Kind == yaml.ScalarNode {
		return v.Value
	}
	return ""
}

// ensure returns the value of key in mapping n, adding it (or replacing a
// null) as an empty node of kind.
func ensure(n *yaml.Node, key string, kind yaml.Kind) *yaml.Node {
	tag := map[yaml.Kind]string{yaml.MappingNode: "!!map", yaml.SequenceNode: "!!seq"}[kind]
	if v := lookup(n, key); v != nil {
		if v.Kind != kind {
			*v = yaml.Node{Kind: kind, Tag: tag, HeadComment: v.HeadComment, LineComment: v.LineComment}
		}
		return v
	}
	v := &yaml.Node{Kind: kind, Tag: tag}
	n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
	return v
}

// set sets key to the string value in mapping n.
func set(n *yaml.Node, key, value string) {
	v := ensure(n, key, yaml.ScalarNode)
	v.Tag, v.Value, v.Style = "!!str", value, 0
	plain(v)
}
