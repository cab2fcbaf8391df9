package kvevents

import (
	"bytes"
	"encoding/hex"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/vmihailenco/msgpack/v5"
)

// Inputs of the engines reference, section 1.8.
var (
	refTS     = time.Unix(1767225600, 250_000_000) // 1767225600.25
	refHash   = uint64(15134234118671934477)       // 0xd20799bf0f09a40d
	refTokens = []uint32{151644, 872, 198, 9064, 374, 279, 6722, 315, 5616, 30, 151645, 198, 151644, 77091, 198, 151667}
)

// refTokensHex is the msgpack of the 16 reference tokens (array16 included).
const refTokensHex = `dc 00 10
   ce 00 02 50 5c  cd 03 68  cc c6  cd 23 68  cd 01 76  cd 01 17  cd 1a 42  cd 01 3b
   cd 15 f0  1e  ce 00 02 50 5d  cc c6  ce 00 02 50 5c  ce 00 01 2d 23  cc c6  ce 00 02 50 73`

// refHexA is section 1.8 (a), copied from the reference with its comments removed.
const refHexA = `
93
cb 41 da 55 6e 40 10 00 00
91
8b
a4 74 79 70 65
ab 42 6c 6f 63 6b 53 74 6f 72 65 64
ac 62 6c 6f 63 6b 5f 68 61 73 68 65 73
91 cf d2 07 99 bf 0f 09 a4 0d
b1 70 61 72 65 6e 74 5f 62 6c 6f 63 6b 5f 68 61 73 68
c0
a9 74 6f 6b 65 6e 5f 69 64 73
` + refTokensHex + `
aa 62 6c 6f 63 6b 5f 73 69 7a 65 10
a7 6c 6f 72 61 5f 69 64 c0
a6 6d 65 64 69 75 6d a3 47 50 55
a9 6c 6f 72 61 5f 6e 61 6d 65 c0
aa 65 78 74 72 61 5f 6b 65 79 73 91 c0
a9 67 72 6f 75 70 5f 69 64 78 00
b2 6b 76 5f 63 61 63 68 65 5f 73 70 65 63 5f 6b 69 6e 64
ae 66 75 6c 6c 5f 61 74 74 65 6e 74 69 6f 6e
00`

// refHexB is section 1.8 (b), the v0.22–v0.23 array era.
const refHexB = `
93 cb 41 da 55 6e 40 10 00 00 91 9c ab 42 6c 6f 63 6b 53 74 6f 72 65 64
91 cf d2 07 99 bf 0f 09 a4 0d c0 ` + refTokensHex + ` 10 c0
a3 47 50 55 c0 91 c0 00 ae 66 75 6c 6c 5f 61 74 74 65 6e 74 69 6f 6e c0 00`

// refHexC is section 1.8 (c), the v0.10.2–v0.13 array era.
const refHexC = `
93 cb 41 da 55 6e 40 10 00 00 91 97 ab 42 6c 6f 63 6b 53 74 6f 72 65 64
91 cf d2 07 99 bf 0f 09 a4 0d c0 ` + refTokensHex + ` 10 c0 a3 47 50 55 00`

// refHexD is section 1.8 (d), the current BlockRemoved.
const refHexD = `
93 cb 41 da 55 6e 40 10 00 00 91 84 a4 74 79 70 65 ac 42 6c 6f 63 6b 52 65 6d 6f 76 65 64
ac 62 6c 6f 63 6b 5f 68 61 73 68 65 73 91 cf d2 07 99 bf 0f 09 a4 0d
a6 6d 65 64 69 75 6d a3 47 50 55 a9 67 72 6f 75 70 5f 69 64 78 00 00`

// refHexE and refHexEArray are section 1.8 (e), AllBlocksCleared.
const (
	refHexE      = `93 cb 41 da 55 6e 40 10 00 00 91 81 a4 74 79 70 65 b0 41 6c 6c 42 6c 6f 63 6b 73 43 6c 65 61 72 65 64 00`
	refHexEArray = `93 cb 41 da 55 6e 40 10 00 00 91 91 b0 41 6c 6c 42 6c 6f 63 6b 73 43 6c 65 61 72 65 64 00`
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatalf("bad test hex: %v", err)
	}
	return b
}

func refStored() Event {
	return Event{Type: BlockStored, BlockHashes: []uint64{refHash}, TokenIDs: refTokens, BlockSize: 16}
}

func TestAppendBatchReferenceBytes(t *testing.T) {
	tests := []struct {
		name   string
		format Format
		event  Event
		want   string
		size   int
	}{
		{"a map BlockStored", FormatMap, refStored(), refHexA, 239},
		{"b array BlockStored", FormatArray, refStored(), refHexB, 118},
		{"c array-v0.10 BlockStored", FormatArrayV010, refStored(), refHexC, 98},
		{"d map BlockRemoved", FormatMap, Event{Type: BlockRemoved, BlockHashes: []uint64{refHash}}, refHexD, 76},
		{"e map AllBlocksCleared", FormatMap, Event{Type: AllBlocksCleared}, refHexE, 35},
		{"e array AllBlocksCleared", FormatArray, Event{Type: AllBlocksCleared}, refHexEArray, 30},
		{"e array-v0.10 AllBlocksCleared", FormatArrayV010, Event{Type: AllBlocksCleared}, refHexEArray, 30},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := unhex(t, tt.want)
			if len(want) != tt.size {
				t.Fatalf("reference hex has %d bytes, the reference says %d", len(want), tt.size)
			}
			got := AppendBatch(nil, tt.format, refTS, []Event{tt.event}, 0)
			if !bytes.Equal(got, want) {
				t.Errorf("AppendBatch() =\n%x\nwant\n%x", got, want)
			}
		})
	}
}

func TestAppendBatchArrayBlockRemoved(t *testing.T) {
	prefix := "93 cb 41 da 55 6e 40 10 00 00 91 "
	hashes := "ac 42 6c 6f 63 6b 52 65 6d 6f 76 65 64 91 cf d2 07 99 bf 0f 09 a4 0d a3 47 50 55 "
	tests := []struct {
		format Format
		want   string
	}{
		{FormatArray, prefix + "94 " + hashes + "00 00"},
		{FormatArrayV010, prefix + "93 " + hashes + "00"},
	}
	for _, tt := range tests {
		t.Run(string(tt.format), func(t *testing.T) {
			got := AppendBatch(nil, tt.format, refTS, []Event{{Type: BlockRemoved, BlockHashes: []uint64{refHash}}}, 0)
			if want := unhex(t, tt.want); !bytes.Equal(got, want) {
				t.Errorf("AppendBatch() =\n%x\nwant\n%x", got, want)
			}
		})
	}
}

func TestAppendUintWidths(t *testing.T) {
	tests := []struct {
		v    uint64
		want string
	}{
		{0, "00"}, {127, "7f"}, {128, "cc80"}, {255, "ccff"}, {256, "cd0100"}, {65535, "cdffff"},
		{65536, "ce00010000"}, {1<<32 - 1, "ceffffffff"}, {1 << 32, "cf0000000100000000"},
		{1<<64 - 1, "cfffffffffffffffff"},
	}
	for _, tt := range tests {
		if got := hex.EncodeToString(appendUint(nil, tt.v)); got != tt.want {
			t.Errorf("appendUint(%d) = %s, want %s", tt.v, got, tt.want)
		}
	}
}

func TestAppendHeadersAndStrings(t *testing.T) {
	tests := []struct {
		name string
		got  []byte
		want string
	}{
		{"fixstr 31", appendStr(nil, strings.Repeat("x", 31))[:1], "bf"},
		{"str8 32", appendStr(nil, strings.Repeat("x", 32))[:2], "d920"},
		{"str16 256", appendStr(nil, strings.Repeat("x", 256))[:3], "da0100"},
		{"str32 65536", appendStr(nil, strings.Repeat("x", 65536))[:5], "db00010000"},
		{"fixarray 15", appendArrayHeader(nil, 15), "9f"},
		{"array16 16", appendArrayHeader(nil, 16), "dc0010"},
		{"array32 65536", appendArrayHeader(nil, 65536), "dd00010000"},
		{"fixmap 15", appendMapHeader(nil, 15), "8f"},
		{"map16 16", appendMapHeader(nil, 16), "de0010"},
		{"map32 65536", appendMapHeader(nil, 65536), "df00010000"},
	}
	for _, tt := range tests {
		if got := hex.EncodeToString(tt.got); got != tt.want {
			t.Errorf("%s: got %s, want %s", tt.name, got, tt.want)
		}
	}
}

// decoded is what a consumer extracts from one event, whatever the encoding.
type decoded struct {
	Type      string
	Hashes    []uint64
	Parent    *uint64
	Tokens    []uint64
	BlockSize uint64
	Medium    string
	LoRAName  any
	ExtraKeys any
}

// decodeBatch decodes a payload with vmihailenco/msgpack into generic values,
// independently of the encoder, and extracts the events the way an llm-d
// style adapter does (by key for maps, by position for arrays).
func decodeBatch(t testing.TB, payload []byte) (ts float64, events []decoded, rank uint64) {
	t.Helper()
	dec := msgpack.NewDecoder(bytes.NewReader(payload))
	dec.UseLooseInterfaceDecoding(true)
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode payload: %v", err)
	}
	outer, ok := v.([]any)
	if !ok || len(outer) != 3 {
		t.Fatalf("payload is %T %v, want a 3-element array", v, v)
	}
	ts, ok = outer[0].(float64)
	if !ok {
		t.Fatalf("ts is %T, want float64", outer[0])
	}
	for _, raw := range outer[1].([]any) {
		var d decoded
		switch e := raw.(type) {
		case map[string]any:
			d.Type, _ = e["type"].(string)
			d.Hashes = uints(t, e["block_hashes"])
			d.Parent = optUint(t, e["parent_block_hash"])
			d.Tokens = uints(t, e["token_ids"])
			d.BlockSize = toUint(t, e["block_size"])
			d.Medium, _ = e["medium"].(string)
			d.LoRAName = e["lora_name"]
			d.ExtraKeys = e["extra_keys"]
		case []any:
			d.Type, _ = e[0].(string)
			switch d.Type {
			case "BlockStored":
				d.Hashes = uints(t, e[1])
				d.Parent = optUint(t, e[2])
				d.Tokens = uints(t, e[3])
				d.BlockSize = toUint(t, e[4])
				d.Medium, _ = e[6].(string)
				if len(e) > 7 {
					d.LoRAName, d.ExtraKeys = e[7], e[8]
				}
			case "BlockRemoved":
				d.Hashes = uints(t, e[1])
				d.Medium, _ = e[2].(string)
			}
		default:
			t.Fatalf("event is %T, want map or array", raw)
		}
		events = append(events, d)
	}
	return ts, events, toUint(t, outer[2])
}

func toUint(t testing.TB, v any) uint64 {
	t.Helper()
	switch n := v.(type) {
	case nil:
		return 0
	case uint64:
		return n
	case int64:
		if n < 0 {
			t.Fatalf("negative integer %d", n)
		}
		return uint64(n)
	default:
		t.Fatalf("%T is not an integer", v)
		return 0
	}
}

func optUint(t testing.TB, v any) *uint64 {
	if v == nil {
		return nil
	}
	n := toUint(t, v)
	return &n
}

func uints(t testing.TB, v any) []uint64 {
	if v == nil {
		return nil
	}
	var out []uint64
	for _, x := range v.([]any) {
		out = append(out, toUint(t, x))
	}
	return out
}

func TestAppendBatchDecodesIndependently(t *testing.T) {
	parent := uint64(7)
	events := []Event{
		{Type: BlockStored, BlockHashes: []uint64{1 << 63, 5}, ParentBlockHash: &parent, TokenIDs: []uint32{1, 2, 3, 4}, BlockSize: 2, LoRAName: "sql-lora"},
		{Type: BlockStored, BlockHashes: []uint64{refHash}, TokenIDs: refTokens, BlockSize: 16},
		{Type: BlockRemoved, BlockHashes: []uint64{5}},
		{Type: AllBlocksCleared},
	}
	want := []decoded{
		{Type: "BlockStored", Hashes: []uint64{1 << 63, 5}, Parent: &parent, Tokens: []uint64{1, 2, 3, 4}, BlockSize: 2, Medium: "GPU",
			LoRAName: "sql-lora", ExtraKeys: []any{[]any{"sql-lora"}, []any{"sql-lora"}}},
		{Type: "BlockStored", Hashes: []uint64{refHash}, Tokens: u64s(refTokens), BlockSize: 16, Medium: "GPU", ExtraKeys: []any{nil}},
		{Type: "BlockRemoved", Hashes: []uint64{5}, Medium: "GPU"},
		{Type: "AllBlocksCleared"},
	}
	for _, f := range []Format{FormatMap, FormatArray, FormatArrayV010} {
		t.Run(string(f), func(t *testing.T) {
			ts, got, rank := decodeBatch(t, AppendBatch(nil, f, refTS, events, 3))
			if ts != 1767225600.25 || rank != 3 {
				t.Errorf("ts, rank = %v, %d, want 1767225600.25, 3", ts, rank)
			}
			w := want
			if f == FormatArrayV010 { // no lora_name, no extra_keys
				w = cloneDecoded(want)
				for i := range w {
					w[i].LoRAName, w[i].ExtraKeys = nil, nil
				}
			}
			if diff := cmp.Diff(w, got); diff != "" {
				t.Errorf("decoded events mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func cloneDecoded(in []decoded) []decoded { return append([]decoded(nil), in...) }

func u64s(in []uint32) []uint64 {
	out := make([]uint64, len(in))
	for i, v := range in {
		out[i] = uint64(v)
	}
	return out
}

// TestAppendBatchRoundTripProperty encodes random events and checks that an
// independent decoder reads back the same hashes, tokens and sizes.
func TestAppendBatchRoundTripProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	randUint := func() uint64 { return rng.Uint64() >> rng.UintN(64) }
	for iter := range 100 {
		var events []Event
		var want []decoded
		for range rng.IntN(20) {
			switch rng.IntN(3) {
			case 0:
				n := 1 + rng.IntN(40)
				bs := 1 + rng.IntN(4)
				e := Event{Type: BlockStored, BlockSize: bs}
				for range n {
					e.BlockHashes = append(e.BlockHashes, randUint())
				}
				for range n * bs {
					e.TokenIDs = append(e.TokenIDs, uint32(randUint()))
				}
				var parent *uint64
				if rng.IntN(2) == 0 {
					p := randUint()
					parent, e.ParentBlockHash = &p, &p
				}
				events = append(events, e)
				want = append(want, decoded{Type: "BlockStored", Hashes: e.BlockHashes, Parent: parent,
					Tokens: u64s(e.TokenIDs), BlockSize: uint64(bs), Medium: "GPU"})
			case 1:
				h := randUint()
				events = append(events, Event{Type: BlockRemoved, BlockHashes: []uint64{h}})
				want = append(want, decoded{Type: "BlockRemoved", Hashes: []uint64{h}, Medium: "GPU"})
			default:
				events = append(events, Event{Type: AllBlocksCleared})
				want = append(want, decoded{Type: "AllBlocksCleared"})
			}
		}
		rank := rng.IntN(300)
		for _, f := range []Format{FormatMap, FormatArray, FormatArrayV010} {
			_, got, gotRank := decodeBatch(t, AppendBatch(nil, f, refTS, events, rank))
			ignore := cmp.FilterPath(func(p cmp.Path) bool {
				name := p.Last().String()
				return name == ".LoRAName" || name == ".ExtraKeys"
			}, cmp.Ignore())
			if diff := cmp.Diff(want, got, ignore); diff != "" || gotRank != uint64(rank) {
				t.Fatalf("iteration %d, format %s: rank %d want %d; mismatch (-want +got):\n%s", iter, f, gotRank, rank, diff)
			}
		}
	}
}

func TestParseFormat(t *testing.T) {
	tests := []struct {
		in      string
		want    Format
		wantErr bool
	}{
		{"", FormatMap, false}, {"map", FormatMap, false}, {"array", FormatArray, false},
		{"array-v0.10", FormatArrayV010, false}, {"sglang", "", true},
	}
	for _, tt := range tests {
		got, err := ParseFormat(tt.in)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("ParseFormat(%q) = %q, %v; want %q, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}
