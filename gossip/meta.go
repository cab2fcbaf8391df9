package gossip

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/hashicorp/memberlist"
)

// MaxMetaSize is memberlist's limit on node metadata.
const MaxMetaSize = memberlist.MetaMaxSize

// metaType and metaVersion are the first two bytes of encoded metadata.
const (
	metaType    byte = 'M'
	metaVersion byte = 1
)

// ErrMetaTooLarge is returned when metadata does not fit MaxMetaSize.
var ErrMetaTooLarge = errors.New("node metadata too large")

// Meta is a node's metadata, carried by memberlist in every alive message.
type Meta struct {
	Role Role `json:"role"`
	// Models served (sidecars): base model names, then LoRA adapters.
	Models []string `json:"models,omitempty"`
	// Adapters is how many of the last Models are LoRA adapters of the
	// first (the base model): their prefixes are hashed with the base
	// model and the adapter (kvblock.NewSeed).
	Adapters int `json:"adapters,omitempty"`
	// Engine kind behind a sidecar: vllm, sglang, llamacpp, sim.
	Engine string `json:"engine,omitempty"`
	// BlockSize is the engine's KV block size in tokens.
	BlockSize uint32 `json:"block_size,omitempty"`
	// DataAddr is where balancers send requests (the sidecar's h2c port).
	DataAddr string `json:"data_addr,omitempty"`
	// AdminAddr serves metrics and /v1/gossip/*.
	AdminAddr string `json:"admin_addr,omitempty"`
	// Version is the inferrail build version.
	Version string `json:"version,omitempty"`
	// SummaryEpoch is the sidecar's current summary epoch (0: none yet).
	SummaryEpoch uint64 `json:"summary_epoch,omitempty"`
	// EnginePort is the engine's own port on the sidecar's host (the pod):
	// with DataAddr's host it is the engine's pod IP:port, the endpoint a
	// Gateway API InferencePool whose target port is the engine names
	// (0: not advertised).
	EnginePort uint32 `json:"engine_port,omitempty"`
	// KVCapacityBlocks is the engine's KV cache capacity in blocks of
	// BlockSize tokens, summed over its data-parallel ranks (0: unknown).
	// Balancers bound the KV memory a replica is sent (docs/routing.md).
	KVCapacityBlocks uint32 `json:"kv_capacity_blocks,omitempty"`
}

// Marshal encodes m: type and version bytes, role, then varints and
// length-prefixed strings, and last the engine port, the adapter count and the
// KV capacity (varints that older encoders did not write, so decoders accept
// their absence). It fails with
// ErrMetaTooLarge past MaxMetaSize.
func (m *Meta) Marshal() ([]byte, error) {
	b := make([]byte, 0, 128)
	b = append(b, metaType, metaVersion, byte(m.Role))
	b = binary.AppendUvarint(b, uint64(m.BlockSize))
	b = binary.AppendUvarint(b, m.SummaryEpoch)
	for _, s := range []string{m.Engine, m.DataAddr, m.AdminAddr, m.Version} {
		b = appendString(b, s)
	}
	b = binary.AppendUvarint(b, uint64(len(m.Models)))
	for _, s := range m.Models {
		b = appendString(b, s)
	}
	// Added after the first release, each optional: decoders accept
	// metadata that ends before them.
	b = binary.AppendUvarint(b, uint64(m.EnginePort))
	b = binary.AppendUvarint(b, uint64(max(m.Adapters, 0)))
	b = binary.AppendUvarint(b, uint64(m.KVCapacityBlocks))
	if len(b) > MaxMetaSize {
		return nil, fmt.Errorf("%w: %d bytes > %d", ErrMetaTooLarge, len(b), MaxMetaSize)
	}
	return b, nil
}

// UnmarshalMeta decodes metadata written by Meta.Marshal.
func UnmarshalMeta(b []byte) (Meta, error) {
	var m Meta
	if len(b) < 3 || b[0] != metaType {
		return m, fmt.Errorf("%w: not node metadata", ErrMalformed)
	}
	if b[1] != metaVersion {
		return m, fmt.Errorf("%w: metadata version %d", ErrMalformed, b[1])
	}
	if len(b) > MaxMetaSize {
		return m, fmt.Errorf("%w: %d bytes", ErrMetaTooLarge, len(b))
	}
	m.Role = Role(b[2])
	d := decoder{b: b[3:]}
	bs := d.uvarint()
	if bs > 1<<20 {
		d.fail("block size %d", bs)
	}
	m.BlockSize = uint32(bs)
	m.SummaryEpoch = d.uvarint()
	m.Engine = d.string()
	m.DataAddr = d.string()
	m.AdminAddr = d.string()
	m.Version = d.string()
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail("%d models in %d bytes", n, len(d.b))
	}
	for i := uint64(0); i < n && d.err == nil; i++ {
		m.Models = append(m.Models, d.string())
	}
	if d.err == nil && len(d.b) > 0 {
		if p := d.uvarint(); p > 65535 {
			d.fail("engine port %d", p)
		} else {
			m.EnginePort = uint32(p)
		}
	}
	if d.err == nil && len(d.b) > 0 {
		a := d.uvarint()
		if a >= uint64(max(len(m.Models), 1)) {
			d.fail("%d adapters of %d models", a, len(m.Models))
		}
		m.Adapters = int(a)
	}
	if d.err == nil && len(d.b) > 0 {
		c := d.uvarint()
		if c > math.MaxUint32 {
			d.fail("KV capacity %d blocks", c)
		}
		m.KVCapacityBlocks = uint32(c)
	}
	d.end()
	if d.err != nil {
		return Meta{}, d.err
	}
	return m, nil
}
