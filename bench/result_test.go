package bench

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// sampleResult is a run with every optional block set and records of each
// kind (good, late, failed, cut), as bench compare writes them.
func sampleResult() *Result {
	ms := time.Millisecond
	cfg := testConfig()
	cfg.Label = "cost_model@1.5x"
	recs := []Record{
		{Session: 0, Turn: 0, Scheduled: 0, TTFT: 40 * ms, TPOT: 10 * ms, E2E: 400 * ms, Status: 200,
			PromptTokens: 1024, CompletionTokens: 32, CachedTokens: 512, CachedReported: true,
			PredictedCached: 512, PredictedReported: true, Replica: "r0"},
		{Session: 1, Turn: 0, Scheduled: 100 * ms, SendLag: ms, TTFT: 3 * time.Second, TPOT: 20 * ms,
			E2E: 4 * time.Second, Status: 200, Retries: 1, PromptTokens: 1024, CompletionTokens: 32, Replica: "r1"},
		{Session: 1, Turn: 1, Scheduled: 900 * ms, Status: 503, Err: "upstream busy"},
		{Session: 2, Turn: 0, Scheduled: 2 * time.Second, TTFT: 60 * ms, TPOT: 12 * ms, E2E: 9 * time.Second,
			Status: 200, Cut: true, PromptTokens: 6000, CompletionTokens: 700, Replica: "r0"},
	}
	return &Result{
		Config:     cfg,
		Workload:   WorkloadConfig{Name: W1, Rate: 8, Duration: 10 * time.Second, Seed: 2},
		Repetition: 1,
		Run:        RunInfo{Kind: "load", Policy: "cost_model", Balancers: 1, Load: 1.5, Replicas: 2},
		Routing:    map[string]any{"cost_model": map[string]any{"hit_weight": 0.5}},
		Elapsed:    12 * time.Second,
		Summary:    Summarize(recs, cfg.SLO),
		Capacity: &Capacity{Policy: "round_robin", Unit: "req/s", Rate: 60, Bracketed: true, Window: 23 * time.Second,
			Points: []CapacityPoint{}},
		Bounds:  &Bounds{Replicas: 2, CacheBlocks: 100, BlockSize: 16, HInf: 0.8, HPoolLRU: 0.7},
		Records: recs,
	}
}

// A result written as .json.gz is gzip, one written as .json is not, and
// both read back to the same result with the records written.
func TestResultRoundTripGzipAndPlain(t *testing.T) {
	dir := t.TempDir()
	want := sampleResult()
	plain, gz := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.json.gz")
	for _, p := range []string{plain, gz} {
		if err := want.WriteFile(p); err != nil {
			t.Fatal(err)
		}
	}
	pb, _ := os.ReadFile(plain)
	gb, _ := os.ReadFile(gz)
	if IsGzip(pb) || !json.Valid(pb) {
		t.Errorf("%s is not plain JSON", plain)
	}
	if !IsGzip(gb) {
		t.Errorf("%s does not start with gzip's magic bytes: % x", gz, gb[:min(len(gb), 4)])
	}
	fromPlain, err := ReadResult(plain)
	if err != nil {
		t.Fatal(err)
	}
	fromGzip, err := ReadResult(gz)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromPlain, fromGzip) {
		t.Errorf("the .json.gz read back differs from the .json:\n%+v\n%+v", fromGzip, fromPlain)
	}
	if !reflect.DeepEqual(fromGzip.Records, want.Records) {
		t.Errorf("records read back %+v, want %+v", fromGzip.Records, want.Records)
	}
	if !reflect.DeepEqual(fromGzip.Summary, want.Summary) {
		t.Errorf("summary read back %+v, want %+v", fromGzip.Summary, want.Summary)
	}
	// The same result gives the same bytes (no time in the gzip header):
	// rewriting an unchanged run changes nothing in git.
	if err := want.WriteFile(gz); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(gz); !bytes.Equal(again, gb) {
		t.Error("writing the same result twice gave different .json.gz bytes")
	}
}

// ReadResult tells gzip by its first bytes, not by the file's name.
func TestReadResultByContentNotName(t *testing.T) {
	dir := t.TempDir()
	r := sampleResult()
	gz := filepath.Join(dir, "a.json.gz")
	plain := filepath.Join(dir, "b.json")
	if err := r.WriteFile(gz); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteFile(plain); err != nil {
		t.Fatal(err)
	}
	// Swap the contents: gzip under a .json name, plain under .json.gz.
	gb, _ := os.ReadFile(gz)
	pb, _ := os.ReadFile(plain)
	swappedGz, swappedPlain := filepath.Join(dir, "gzip.json"), filepath.Join(dir, "plain.json.gz")
	if err := os.WriteFile(swappedGz, gb, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(swappedPlain, pb, 0o644); err != nil {
		t.Fatal(err)
	}
	want, err := ReadResult(plain)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{swappedGz, swappedPlain} {
		got, err := ReadResult(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s read back differs from the plain result", p)
		}
	}
}

// A damaged file is an error that names it, never a panic or a result.
func TestReadResultCorruptGzip(t *testing.T) {
	dir := t.TempDir()
	gz := filepath.Join(dir, "good.json.gz")
	if err := sampleResult().WriteFile(gz); err != nil {
		t.Fatal(err)
	}
	good, _ := os.ReadFile(gz)
	flipped := bytes.Clone(good)
	flipped[len(flipped)/2] ^= 0xff
	badCRC := bytes.Clone(good)
	badCRC[len(badCRC)-8] ^= 0xff // the CRC-32 of the trailer
	gzipOfNotJSON, err := gzipBytes([]byte("not json\n"))
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string][]byte{
		"magic-only":  {0x1f, 0x8b},
		"bad-header":  {0x1f, 0x8b, 0x00, 0x00, 0x00},
		"truncated":   good[:len(good)/2],
		"no-trailer":  good[:len(good)-8],
		"flipped":     flipped,
		"bad-crc":     badCRC,
		"not-json":    gzipOfNotJSON,
		"trailing":    append(bytes.Clone(good), "junk"...),
		"empty":       {},
		"plain-wrong": []byte(`{"records": 3}`),
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(dir, name+".json.gz")
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
			r, err := ReadResult(p)
			if err == nil {
				t.Fatalf("ReadResult(%s) = %+v, want an error", name, r)
			}
			if !strings.Contains(err.Error(), p) {
				t.Errorf("error %q does not name %s", err, p)
			}
		})
	}
	if _, err := ReadResult(filepath.Join(dir, "missing.json.gz")); err == nil ||
		!strings.Contains(err.Error(), "missing.json.gz") {
		t.Errorf("a missing file: error %v, want one naming it", err)
	}
}

// bench compare writes NAME.json.gz and removes a NAME.json that an earlier
// run (before results were compressed) left, so a rerun part holds each
// run once; other runs' files stay.
func TestWriteRunReplacesPlainResult(t *testing.T) {
	dir := t.TempDir()
	r := sampleResult()
	if err := r.WriteFile(filepath.Join(dir, "cost_model-rep0.json")); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteFile(filepath.Join(dir, "round_robin-rep0.json")); err != nil {
		t.Fatal(err)
	}
	if err := writeRun(dir, "cost_model-rep0", r); err != nil {
		t.Fatal(err)
	}
	if err := writeRun(dir, "cost_model-rep1", r); err != nil { // no plain file to remove
		t.Fatal(err)
	}
	var names []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		names = append(names, e.Name())
	}
	want := []string{"cost_model-rep0.json.gz", "cost_model-rep1.json.gz", "round_robin-rep0.json"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("files %v, want %v", names, want)
	}
	if _, err := ReadResult(filepath.Join(dir, "cost_model-rep0.json.gz")); err != nil {
		t.Error(err)
	}
}

// FuzzReadResult: whatever a result file holds, ReadResult returns a result
// or an error naming the file, never panics; and gzip-compressing a file's
// bytes changes nothing in what it reads.
func FuzzReadResult(f *testing.F) {
	plain, err := json.Marshal(sampleResult())
	if err != nil {
		f.Fatal(err)
	}
	gz, err := gzipBytes(plain)
	if err != nil {
		f.Fatal(err)
	}
	small, _ := gzipBytes([]byte(`{"records":[{"status":200,"ttft_ns":5}]}`))
	f.Add(plain)
	f.Add(gz)
	f.Add(small)
	f.Add(gz[:len(gz)/2])
	f.Add([]byte{0x1f, 0x8b})
	f.Add([]byte(`{"records":null}`))
	f.Add([]byte{})
	const path = "fuzz/r.json.gz"
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeResult(path, b)
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		if IsGzip(b) {
			return
		}
		z, err := gzipBytes(b)
		if err != nil {
			t.Fatal(err)
		}
		rz, err := decodeResult(path, z)
		if err != nil {
			t.Fatalf("the gzip of a readable result: %v", err)
		}
		if !reflect.DeepEqual(r, rz) {
			t.Fatalf("the gzip of a result read back differently:\n%+v\n%+v", rz, r)
		}
	})
}
