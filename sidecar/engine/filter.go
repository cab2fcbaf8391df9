package engine

import (
	"bytes"
	"fmt"
	"io"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// MaxSeriesPerFamily bounds the samples of one family the tables read: a
// page with more is unreadable. 16384 covers 1,024 data-parallel engines
// (the sidecar's limit) with 16 tensor or pipeline replicas each.
const MaxSeriesPerFamily = 16384

// sampleSuffixes are the suffixes the text format adds to a family's name
// in its samples (counters, histograms, summaries).
var sampleSuffixes = []string{"_total", "_bucket", "_sum", "_count", "_created"}

// ParsePageFor reads at most maxBytes of a page like ParsePage, but parses
// only the families the tables read: the lines of every other family are
// skipped by a scan that does not allocate, so a page that is mostly one
// family nobody reads costs a pass over its bytes. A family the tables read
// with more than MaxSeriesPerFamily samples makes the page unreadable.
func ParsePageFor(r io.Reader, maxBytes int64, tables ...MetricNames) (Page, error) {
	buf, err := readPage(r, maxBytes)
	if err != nil {
		return nil, err
	}
	wanted := wantedFamilies(tables)
	kept, err := filterPage(buf, wanted)
	if err != nil {
		return nil, err
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(kept))
	if err != nil {
		return nil, fmt.Errorf("parse metrics page: %w: %w", ErrUnreadable, err)
	}
	return Page(fams), nil
}

// wantedFamilies lists every family name the tables read.
func wantedFamilies(tables []MetricNames) map[string]bool {
	w := map[string]bool{}
	for _, t := range tables {
		for _, names := range [][]string{t.Running, t.Waiting, t.KVUsage, t.PromptTokens, t.GenerationTokens,
			t.PrefixQueries, t.PrefixHits, t.Preemptions, {t.CacheInfo, t.BlockSizeGauge, t.CapacityTokens}} {
			for _, n := range names {
				if n != "" {
					w[n] = true
				}
			}
		}
	}
	return w
}

// filterPage returns the lines of buf that belong to wanted families (by the
// name in a "# HELP"/"# TYPE" line or a sample, with or without a sample
// suffix), counting each family's samples against MaxSeriesPerFamily.
func filterPage(buf []byte, wanted map[string]bool) ([]byte, error) {
	out := make([]byte, 0, min(len(buf), 64<<10))
	counts := map[string]int{}
	for rest := buf; len(rest) > 0; {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i+1], rest[i+1:]
		} else {
			rest = nil
		}
		name, sample := lineFamily(line)
		if name == nil {
			continue
		}
		fam, ok := wantedName(name, wanted)
		if !ok {
			continue
		}
		if sample {
			if counts[fam]++; counts[fam] > MaxSeriesPerFamily {
				return nil, fmt.Errorf("%w: family %s has more than %d series", ErrUnreadable, fam, MaxSeriesPerFamily)
			}
		}
		out = append(out, line...)
		if line[len(line)-1] != '\n' {
			out = append(out, '\n')
		}
	}
	return out, nil
}

// lineFamily returns the metric name a line is about (nil for blank lines,
// other comments and names the scan does not recognise), and whether the
// line is a sample.
func lineFamily(line []byte) (name []byte, sample bool) {
	line = bytes.TrimLeft(line, " \t")
	if len(line) == 0 || line[0] == '\n' || line[0] == '\r' {
		return nil, false
	}
	if line[0] == '#' {
		f := bytes.Fields(line[1:])
		if len(f) < 2 || (string(f[0]) != "HELP" && string(f[0]) != "TYPE") {
			return nil, false
		}
		return f[1], false
	}
	end := bytes.IndexAny(line, "{ \t\r\n")
	if end <= 0 {
		return nil, false
	}
	return line[:end], true
}

// wantedName reports whether name is a wanted family, or one with a sample
// suffix, and returns the family.
func wantedName(name []byte, wanted map[string]bool) (string, bool) {
	if wanted[string(name)] { // no allocation: map lookup by converted key
		return string(name), true
	}
	for _, s := range sampleSuffixes {
		if base, ok := bytes.CutSuffix(name, []byte(s)); ok && wanted[string(base)] {
			return string(base), true
		}
	}
	return "", false
}
