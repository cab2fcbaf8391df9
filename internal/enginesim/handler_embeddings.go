package enginesim

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"time"
	"unicode"

	"github.com/zeebo/xxh3"

	"github.com/inferrail/inferrail/internal/openai"
)

// EmbeddingDimensions is the size of the simulator's embeddings unless a
// request asks for another (the OpenAI "dimensions" field).
const EmbeddingDimensions = 256

// maxEmbeddingDimensions bounds a request's dimensions.
const maxEmbeddingDimensions = 4096

// embeddingRequest is the part of an OpenAI embeddings request the
// simulator reads.
type embeddingRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     *int            `json:"dimensions"`
}

// embeddingData and embeddingResponse are vLLM's EmbeddingResponse
// (vllm/entrypoints/pooling/embed/protocol.py): id "embd-…", object
// "list", created, model, data [{index, object "embedding", embedding}],
// usage.
type embeddingData struct {
	Index     int    `json:"index"`
	Object    string `json:"object"`
	Embedding any    `json:"embedding"`
}

type embeddingResponse struct {
	ID      string          `json:"id"`
	Object  string          `json:"object"`
	Created int64           `json:"created"`
	Model   string          `json:"model"`
	Data    []embeddingData `json:"data"`
	Usage   openai.Usage    `json:"usage"`
}

// handleEmbeddings serves POST /v1/embeddings: a deterministic embedding of
// each input (Embed), as floats or base64 float32.
func (s *frontEnd) handleEmbeddings(w http.ResponseWriter, r *http.Request) {
	body, e := s.readBody(w, r)
	if e != nil {
		e.Write(w)
		return
	}
	var req embeddingRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&req); err != nil {
		openai.BadRequest("", "decode request body: %v", err).Write(w)
		return
	}
	if e := s.checkModel(req.Model); e != nil {
		e.Write(w)
		return
	}
	var inputs []string
	var one string
	if err := json.Unmarshal(req.Input, &one); err == nil {
		inputs = []string{one}
	} else if err := json.Unmarshal(req.Input, &inputs); err != nil || len(inputs) == 0 {
		openai.BadRequest("input", "input must be a string or a non-empty array of strings").Write(w)
		return
	}
	dims := EmbeddingDimensions
	if req.Dimensions != nil {
		if dims = *req.Dimensions; dims < 1 || dims > maxEmbeddingDimensions {
			openai.BadRequest("dimensions", "dimensions must be in [1, %d], got %d", maxEmbeddingDimensions, dims).Write(w)
			return
		}
	}
	if req.EncodingFormat != "" && req.EncodingFormat != "float" && req.EncodingFormat != "base64" {
		openai.BadRequest("encoding_format", "encoding_format must be float or base64, got %q", req.EncodingFormat).Write(w)
		return
	}
	resp := embeddingResponse{ID: "embd-" + randomHex(), Object: "list", Created: time.Now().Unix(), Model: req.Model}
	if resp.Model == "" {
		resp.Model = s.cfg.modelName()
	}
	for i, in := range inputs {
		ids, err := s.tok.Encode(in, true)
		if err != nil {
			openai.BadRequest("input", "%v", err).Write(w)
			return
		}
		resp.Usage.PromptTokens += len(ids)
		v := Embed(in, dims)
		var enc any = v
		if req.EncodingFormat == "base64" {
			b := make([]byte, 0, 4*len(v))
			for _, f := range v {
				b = binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
			}
			enc = base64.StdEncoding.EncodeToString(b)
		}
		resp.Data = append(resp.Data, embeddingData{Index: i, Object: "embedding", Embedding: enc})
	}
	resp.Usage.TotalTokens = resp.Usage.PromptTokens
	writeJSON(w, http.StatusOK, resp)
}

// Embed is the simulator's embedding: a hashed bag of words, L2-normalized.
// The text is lower-cased and split into runs of letters and digits; each
// word adds ±1 at a position, both from its xxh3 hash. Texts that share
// words are close in cosine distance (two texts made of the same words are
// identical); texts with no word in common are near orthogonal. An empty
// text (no word) embeds as one fixed position.
func Embed(text string, dims int) []float32 {
	v := make([]float32, dims)
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	if len(words) == 0 {
		words = []string{""}
	}
	for _, w := range words {
		h := xxh3.HashString(w)
		sign := float32(1)
		if h>>63 == 1 {
			sign = -1
		}
		v[h%uint64(dims)] += sign
	}
	var s float64
	for _, f := range v {
		s += float64(f) * float64(f)
	}
	if s == 0 { // the words cancelled out
		v[0] = 1
		return v
	}
	inv := float32(1 / math.Sqrt(s))
	for i := range v {
		v[i] *= inv
	}
	return v
}
