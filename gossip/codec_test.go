package gossip

import (
	"errors"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/inferrail/inferrail/internal/load"
)

func randomMeta(r *rand.Rand) Meta {
	str := func(n int) string {
		b := make([]byte, r.IntN(n))
		for i := range b {
			b[i] = byte('a' + r.IntN(26))
		}
		return string(b)
	}
	m := Meta{Role: Role(1 + r.IntN(3)), Engine: str(8), BlockSize: r.Uint32N(1 << 20), DataAddr: str(24),
		AdminAddr: str(24), Version: str(16), SummaryEpoch: r.Uint64(), EnginePort: r.Uint32N(65536),
		KVCapacityBlocks: r.Uint32()}
	for range r.IntN(6) {
		m.Models = append(m.Models, str(40))
	}
	if len(m.Models) > 1 {
		m.Adapters = r.IntN(len(m.Models))
	}
	return m
}

func TestMetaRoundTripProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 1000 {
		want := randomMeta(r)
		b, err := want.Marshal()
		if err != nil {
			t.Fatalf("case %d: Marshal: %v", i, err)
		}
		got, err := UnmarshalMeta(b)
		if err != nil {
			t.Fatalf("case %d: UnmarshalMeta: %v", i, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("case %d: round trip (-want +got):\n%s", i, diff)
		}
	}
}

func TestMetaLimit(t *testing.T) {
	m := Meta{Role: RoleSidecar}
	for len(m.Models) < 20 {
		m.Models = append(m.Models, strings.Repeat("m", 30))
	}
	if _, err := m.Marshal(); !errors.Is(err, ErrMetaTooLarge) {
		t.Fatalf("Marshal of %d models: err = %v, want ErrMetaTooLarge", len(m.Models), err)
	}
	// A realistic sidecar fits with room to spare.
	m = Meta{Role: RoleSidecar, Models: []string{"meta-llama/Llama-3.1-8B-Instruct", "sql-lora"}, Engine: "vllm",
		BlockSize: 16, DataAddr: "10.12.34.56:8081", AdminAddr: "10.12.34.56:9091", Version: "v1.2.3-rc.1+abcdef0",
		SummaryEpoch: 1764460800000000000}
	b, err := m.Marshal()
	if err != nil || len(b) > 200 {
		t.Fatalf("typical metadata: %d bytes, err %v", len(b), err)
	}
}

// TestUnmarshalMetaWithoutEnginePort decodes metadata from an encoder that
// predates the engine port: everything else is read, the port is 0.
func TestUnmarshalMetaWithoutEnginePort(t *testing.T) {
	want := Meta{Role: RoleSidecar, Models: []string{"m"}, DataAddr: "10.0.0.7:8081"}
	b, err := (&Meta{Role: RoleSidecar, Models: []string{"m"}, DataAddr: "10.0.0.7:8081", EnginePort: 8000}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	got, err := UnmarshalMeta(b[:len(b)-4]) // 8000 is a two-byte varint, then the adapters and the capacity (0)
	if err != nil {
		t.Fatalf("UnmarshalMeta: %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

// TestUnmarshalMetaWithoutCapacity decodes metadata from an encoder that
// predates the KV capacity: the adapters are read, the capacity is 0.
func TestUnmarshalMetaWithoutCapacity(t *testing.T) {
	want := Meta{Role: RoleSidecar, Models: []string{"m", "a"}, Adapters: 1, EnginePort: 8000}
	full := want
	full.KVCapacityBlocks = 27500
	b, err := full.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	got, err := UnmarshalMeta(b[:len(b)-3]) // 27500 is a three-byte varint
	if err != nil {
		t.Fatalf("UnmarshalMeta: %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

func TestUnmarshalMetaRejects(t *testing.T) {
	good, _ := (&Meta{Role: RoleBalancer, Models: []string{"a"}}).Marshal()
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"wrong type", []byte{'X', 1, 1, 0, 0, 0, 0, 0, 0, 0}},
		{"wrong version", []byte{'M', 9, 1, 0, 0, 0, 0, 0, 0, 0}},
		{"truncated", good[:len(good)-4]}, // into the last model name, before the optional engine port, adapters and capacity
		{"trailing", append(append([]byte{}, good...), 0)},
		{"model count too large", []byte{'M', 1, 1, 0, 0, 0, 0, 0, 0, 0xff, 0x01}},
		{"engine port too large", []byte{'M', 1, 1, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x80, 0x04}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := UnmarshalMeta(tc.b); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

func TestAnnounceRoundTripProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 1000 {
		want := announce{From: "sidecar-" + string(rune('a'+r.IntN(26))), SentAt: r.Int64(),
			Load: load.Report{Running: int64(r.Uint32()), Waiting: int64(r.Uint32()), InFlight: int64(r.Uint32()),
				KVUsage: widen(r.Float32()), PrefillTokens: r.Int64(), Pending: int64(r.Uint32())},
			Epoch: r.Uint64(), Seq: r.Uint64()}
		for j := range r.IntN(MaxOrigins + 1) {
			want.Load.Origins = append(want.Load.Origins, load.Share{Origin: "balancer-" + string(rune('a'+j)),
				InFlight: int64(r.Uint32()), Pending: int64(r.Uint32()), PrefillTokens: r.Int64()})
		}
		b := want.marshal()
		h, body, err := decodeHeader(b)
		if err != nil || h.typ != msgAnnounce || h.from != want.From {
			t.Fatalf("case %d: header %+v, err %v", i, h, err)
		}
		got, err := decodeAnnounce(h.from, body)
		if err != nil {
			t.Fatalf("case %d: decodeAnnounce: %v", i, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("case %d: round trip (-want +got):\n%s", i, diff)
		}
		if limit := 80 + len(want.Load.Origins)*45; len(b) > limit {
			t.Fatalf("announcement with %d origins is %d bytes, over %d", len(want.Load.Origins), len(b), limit)
		}
	}
}

// The KV usage crosses the wire as a float32 and comes back as the float64
// of its shortest decimal, so 0.3 reads 0.3 in /v1/gossip/state, not
// 0.30000001192092896.
func TestAnnounceKVUsageDecimal(t *testing.T) {
	for _, u := range []float64{0, 0.3, 0.875, 1, 0.1234567} {
		got := announceRoundTrip(t, announce{From: "s", Load: load.Report{KVUsage: u}})
		if got.Load.KVUsage != u {
			t.Errorf("KV usage %v came back as %v", u, got.Load.KVUsage)
		}
	}
}

// announceRoundTrip encodes a and decodes it as a node receives it.
func announceRoundTrip(t *testing.T, a announce) announce {
	t.Helper()
	h, body, err := decodeHeader(a.marshal())
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeAnnounce(h.from, body)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// An announcement from a sender that predates Pending and Origins (it ends
// after the summary version) or the blocks held still decodes (the blocks
// held unknown), and a count of origins over the bound is rejected.
func TestAnnounceCompatibility(t *testing.T) {
	a := announce{From: "s", SentAt: 5, Load: load.Report{Running: 2, PrefillTokens: 9}, Epoch: 1, Seq: 2}
	b := a.marshal()
	h, body, err := decodeHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	a.Load.HeldBlocks = -1
	got, err := decodeAnnounce(h.from, body[:len(body)-1]) // without the blocks held
	if err != nil {
		t.Fatalf("announcement without the blocks held: %v", err)
	}
	if diff := cmp.Diff(a, got); diff != "" {
		t.Errorf("announcement without the blocks held (-want +got):\n%s", diff)
	}
	old := body[:len(body)-3] // without Pending (0), the origin count (0) and the blocks held
	got, err = decodeAnnounce(h.from, old)
	if err != nil {
		t.Fatalf("old announcement: %v", err)
	}
	if diff := cmp.Diff(a, got); diff != "" {
		t.Errorf("old announcement (-want +got):\n%s", diff)
	}
	bad := append(append([]byte{}, old...), 0, MaxOrigins+1)
	if _, err := decodeAnnounce(h.from, bad); !errors.Is(err, ErrMalformed) {
		t.Errorf("%d origins: err %v, want ErrMalformed", MaxOrigins+1, err)
	}
}

func TestDecodeHeaderRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"short", []byte{msgAnnounce, wireVersion}},
		{"unknown type", []byte{0x42, wireVersion, 1, 'a'}},
		{"version", []byte{msgAnnounce, 2, 1, 'a'}},
		{"empty name", []byte{msgAnnounce, wireVersion, 0}},
		{"name past end", []byte{msgAnnounce, wireVersion, 5, 'a'}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := decodeHeader(tc.b); !errors.Is(err, ErrMalformed) {
				t.Fatalf("err = %v, want ErrMalformed", err)
			}
		})
	}
	for _, m := range [][]byte{marshalResync("b"), marshalLeave("b"), marshalSummary("b", []byte{1, 2})} {
		if _, _, err := decodeHeader(m); err != nil {
			t.Errorf("decodeHeader(%x): %v", m, err)
		}
	}
}

func FuzzDecodeMessage(f *testing.F) {
	f.Add((&announce{From: "s", SentAt: 1, Load: load.Report{Running: 3}, Epoch: 4, Seq: 5}).marshal())
	f.Add(marshalResync("bal"))
	f.Add(marshalSummary("s", []byte{1, 1, 0, 0, 0}))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, body, err := decodeHeader(b)
		if err != nil {
			return
		}
		if h.typ == msgAnnounce {
			a, err := decodeAnnounce(h.from, body)
			if err != nil {
				return
			}
			h2, body2, err := decodeHeader(a.marshal())
			if err != nil {
				t.Fatalf("re-decoding header: %v", err)
			}
			a2, err := decodeAnnounce(h2.from, body2)
			if err != nil {
				t.Fatalf("re-decoding announcement: %v", err)
			}
			if diff := cmp.Diff(a, a2, cmp.Comparer(func(x, y float64) bool { return x == y || x != x && y != y })); diff != "" {
				t.Fatalf("re-encoding changed it:\n%s", diff)
			}
		}
	})
}

func FuzzUnmarshalMeta(f *testing.F) {
	b, _ := (&Meta{Role: RoleSidecar, Models: []string{"m"}, Engine: "vllm", BlockSize: 16}).Marshal()
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := UnmarshalMeta(b)
		if err != nil {
			return
		}
		enc, err := m.Marshal()
		if err != nil {
			t.Fatalf("re-encoding decoded metadata: %v", err)
		}
		again, err := UnmarshalMeta(enc)
		if err != nil {
			t.Fatalf("re-decoding: %v", err)
		}
		if diff := cmp.Diff(m, again); diff != "" {
			t.Fatalf("re-encoding changed it:\n%s", diff)
		}
	})
}

func TestParseLogLine(t *testing.T) {
	for _, tc := range []struct {
		in    string
		level slog.Level
		msg   string
	}{
		{"[DEBUG] memberlist: Stream connection from=x", slog.LevelDebug, "Stream connection from=x"},
		{"[WARN] memberlist: Refuting a dead message", slog.LevelWarn, "Refuting a dead message"},
		{"[ERR] memberlist: Failed to receive", slog.LevelError, "Failed to receive"},
		{"[INFO] memberlist: Marking x as failed", slog.LevelInfo, "Marking x as failed"},
		{"Err: Could not set the deadline", slog.LevelInfo, "Err: Could not set the deadline"},
	} {
		level, msg := parseLogLine(tc.in)
		if level != tc.level || msg != tc.msg {
			t.Errorf("parseLogLine(%q) = %v %q, want %v %q", tc.in, level, msg, tc.level, tc.msg)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Role = RoleSidecar
	if err := cfg.Validate(); err != nil {
		t.Fatalf("defaults with a role: %v", err)
	}
	bad := Config{NodeName: strings.Repeat("n", 1000), BindAddr: "nope", BindPort: 70000, SecretKey: []byte("short"), Profile: "wan", Join: []string{"nohost"}}
	err := bad.Validate()
	if err == nil {
		t.Fatal("bad config validated")
	}
	for _, want := range []string{"node_name", "role", "bind_addr", "bind_port", "secret_key", "profile", "join", "load_interval", "inbox_size"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %s:\n%v", want, err)
		}
	}
}

func TestLoadKeyFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name, content string
		wantLen       int
	}{
		{"base64", "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=\n", 32},
		{"raw16", "0123456789abcdef", 16},
		{"bad", "too short", 0},
	} {
		k, err := LoadKeyFile(write(tc.name, tc.content))
		if tc.wantLen == 0 {
			if err == nil {
				t.Errorf("%s: accepted", tc.name)
			}
			continue
		}
		if err != nil || len(k) != tc.wantLen {
			t.Errorf("%s: %d bytes, err %v", tc.name, len(k), err)
		}
	}
}

func TestRoleText(t *testing.T) {
	for _, r := range []Role{RoleSidecar, RoleBalancer, RoleObserver, Role(9)} {
		b, err := r.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var got Role
		if err := got.UnmarshalText(b); err != nil || got != r {
			t.Errorf("round trip of %v via %q = %v, %v", r, b, got, err)
		}
	}
	var r Role
	if err := r.UnmarshalText([]byte("chef")); err == nil {
		t.Error("unknown role name accepted")
	}
}
