package yamlconf

import (
	"strings"
	"testing"
	"time"
)

type inner struct {
	Port  int           `yaml:"port"`
	Every time.Duration `yaml:"every"`
}

type conf struct {
	Name  string            `yaml:"name"`
	Items []inner           `yaml:"items"`
	ByKey map[string]inner  `yaml:"by_key"`
	Tags  map[string]string `yaml:"tags"`
}

func TestDecodeOverDefaults(t *testing.T) {
	base := conf{Name: "default", Tags: map[string]string{"a": "b"}}
	got, err := Decode([]byte("items:\n  - port: 8\n    every: 2s\n"), base)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "default" || len(got.Items) != 1 || got.Items[0].Port != 8 || got.Items[0].Every != 2*time.Second {
		t.Fatalf("Decode = %+v", got)
	}
	if empty, err := Decode([]byte(""), base); err != nil || empty.Name != "default" {
		t.Fatalf("empty document: %+v, %v", empty, err)
	}
}

func TestDecodeReportsEveryProblemWithItsPath(t *testing.T) {
	doc := "nme: x\nitems:\n  - port: 1\n    prot: 2\nby_key:\n  k:\n    porrt: 3\n  j:\n    port: notanumber\n"
	_, err := Decode([]byte(doc), conf{})
	if err == nil {
		t.Fatal("Decode accepted unknown keys")
	}
	for _, want := range []string{"line 1: nme: unknown key", "line 4: items[0].prot: unknown key", "line 7: by_key.k.porrt: unknown key", "notanumber"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}

func TestDecodeRejectsASecondDocument(t *testing.T) {
	if _, err := Decode([]byte("name: a\n---\nname: b\n"), conf{}); err == nil || !strings.Contains(err.Error(), "more than one document") {
		t.Fatalf("err = %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte("name: a\nitems: [{port: 1}]\n"))
	f.Add([]byte("&a {x: *a}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = Decode(b, conf{})
	})
}

func TestMissingKeys(t *testing.T) {
	got, err := MissingKeys[conf]([]byte("name: x\nitems:\n  - port: 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"by_key", "items[].every", "tags"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("MissingKeys = %v, want %v", got, want)
	}
}

type moved struct {
	Port int `yaml:"port"`
}

func (moved) RemovedKeys() map[string]string {
	return map[string]string{"old_port": "the port is server.port now"}
}

type withMoved struct {
	Moved []moved `yaml:"moved"`
}

func TestDecodeNamesWhereARemovedKeyLivesNow(t *testing.T) {
	_, err := Decode([]byte("moved:\n  - port: 1\n    old_port: 2\n    oldport: 3\n"), withMoved{})
	if err == nil {
		t.Fatal("Decode accepted a removed key")
	}
	for _, want := range []string{
		"line 3: moved[0].old_port: removed: the port is server.port now",
		"line 4: moved[0].oldport: unknown key",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}
