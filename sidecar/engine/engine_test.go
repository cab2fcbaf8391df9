package engine

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestNormalizeMedium(t *testing.T) {
	for in, want := range map[string]string{
		"": MediumGPU, "GPU": MediumGPU, "gpu": MediumGPU, "cpu": MediumCPU, "CPU_PINNED": MediumCPU,
		"DISK": MediumDisk, "EXTERNAL": MediumExternal, "storage": MediumStorage, "fs": "FS", "Obj": "OBJ",
	} {
		if got := NormalizeMedium(in); got != want {
			t.Errorf("NormalizeMedium(%q) = %q, want %q", in, got, want)
		}
	}
}

var table = MetricNames{
	Kind: "test", Prefix: "t:", RankLabel: "engine",
	Running: []string{"t:running"}, Waiting: []string{"t:waiting"}, KVUsage: []string{"t:usage", "t:old_usage"},
	PrefixHits: []string{"t:hits_total", "t:old_hits_total"},
}

func TestExtractLoadPrefersTheFirstName(t *testing.T) {
	page := "t:running 1\nt:waiting 2\nt:usage 0.5\nt:old_usage 0.9\nt:hits_total 3\nt:old_hits_total 100\n"
	l, err := ParseLoad(strings.NewReader(page), 0, table)
	if err != nil {
		t.Fatal(err)
	}
	if l.KVUsage != 0.5 || l.PrefixHits != 3 {
		t.Errorf("KVUsage %v PrefixHits %v, want the new names' 0.5 and 3", l.KVUsage, l.PrefixHits)
	}
	l, err = ParseLoad(strings.NewReader("t:running 1\nt:waiting 2\nt:old_usage 0.9\n"), 0, table)
	if err != nil || l.KVUsage != 0.9 {
		t.Errorf("old name only: %+v, %v", l, err)
	}
}

func TestUnweightedUsageWhenBlocksAreUnknown(t *testing.T) {
	page := "t:running{engine=\"0\"} 1\nt:running{engine=\"1\"} 1\nt:waiting 0\n" +
		"t:usage{engine=\"0\"} 0.2\nt:usage{engine=\"1\"} 0.6\n"
	l, err := ParseLoad(strings.NewReader(page), 0, table)
	if err != nil {
		t.Fatal(err)
	}
	if l.Engines != 2 || l.KVUsage < 0.399 || l.KVUsage > 0.401 {
		t.Errorf("Engines %d KVUsage %v, want 2 and the mean 0.4", l.Engines, l.KVUsage)
	}
}

func TestParsePageReadErrorIsUnreadable(t *testing.T) {
	_, err := ParsePage(iotest.ErrReader(io.ErrUnexpectedEOF), 0)
	if !errors.Is(err, ErrUnreadable) || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("err = %v, want ErrUnreadable wrapping the read error", err)
	}
}

func TestMissingFamilyError(t *testing.T) {
	err := error(&MissingFamilyError{Kind: KindVLLM, Families: []string{"a", "b"}})
	if !errors.Is(err, ErrUnreadable) || err.Error() != "vllm metrics page lacks required families a, b" {
		t.Errorf("err = %q", err)
	}
}
