package enginesim

import (
	"net/http"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/inferrail/inferrail/internal/kvblock"
	"github.com/inferrail/inferrail/internal/openai"
)

// handleModels serves GET /v1/models: one card per served name.
func (s *frontEnd) handleModels(w http.ResponseWriter, _ *http.Request) {
	root := s.cfg.modelName()
	maxLen := s.cfg.Engine.MaxModelLen
	created := time.Now().Unix() // vLLM builds the cards per request
	list := openai.ModelList{Object: openai.ObjectList, Data: []openai.ModelCard{}}
	for _, name := range s.cfg.ServedModelName {
		list.Data = append(list.Data, openai.ModelCard{
			ID: name, Object: openai.ObjectModel, Created: created, OwnedBy: "vllm",
			Root: &root, MaxModelLen: &maxLen,
			Permission: []openai.ModelPermission{openai.NewModelPermission("modelperm-"+randomHex(), created)},
		})
	}
	for _, l := range s.cfg.LoRAModules {
		path := l.Path
		list.Data = append(list.Data, openai.ModelCard{
			ID: l.Name, Object: openai.ObjectModel, Created: created, OwnedBy: "vllm",
			Root: &path, Parent: &root, MaxModelLen: &maxLen,
			Permission: []openai.ModelPermission{openai.NewModelPermission("modelperm-"+randomHex(), created)},
		})
	}
	writeJSON(w, http.StatusOK, list)
}

// handleHealth serves GET /health: 200 with an empty body.
func (s *frontEnd) handleHealth(w http.ResponseWriter, _ *http.Request) {
	w.WriteHeader(http.StatusOK)
}

// handleVersion serves GET /version.
func (s *frontEnd) handleVersion(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, openai.VersionResponse{Version: s.cfg.Version})
}

// handleMetrics serves GET /metrics in the Prometheus text format.
func (s *frontEnd) handleMetrics(w http.ResponseWriter, r *http.Request) {
	promhttp.HandlerFor(s.gatherer, promhttp.HandlerOpts{}).ServeHTTP(w, r)
}

// handleTokenize serves POST /tokenize (completion and chat forms).
func (s *frontEnd) handleTokenize(w http.ResponseWriter, r *http.Request) {
	body, e := s.readBody(w, r)
	if e != nil {
		e.Write(w)
		return
	}
	req, e := openai.ParseTokenizeRequest(body)
	if e != nil {
		e.Write(w)
		return
	}
	if e := s.checkModel(req.Model); e != nil {
		e.Write(w)
		return
	}
	var ids []uint32
	if req.IsChat {
		var err error
		ids, err = s.tok.ChatPrompt(body, req.Messages, req.AddGenerationPrompt, req.ContinueFinalMessage, req.AddSpecialTokens)
		if err != nil {
			openai.BadRequest("messages", "%v", err).Write(w)
			return
		}
	} else {
		var err error
		if ids, err = s.tok.Encode(req.Prompt, req.AddSpecialTokens); err != nil {
			openai.BadRequest("prompt", "%v", err).Write(w)
			return
		}
	}
	resp := openai.TokenizeResponse{Count: len(ids), MaxModelLen: s.cfg.Engine.MaxModelLen, Tokens: ids}
	if resp.Tokens == nil {
		resp.Tokens = []uint32{}
	}
	if req.ReturnTokenStrs {
		strs := make([]string, len(ids))
		for i, id := range ids {
			strs[i], _ = s.tok.TokenText(id, false)
		}
		resp.TokenStrs = &strs
	}
	writeJSON(w, http.StatusOK, resp)
}

// handleDetokenize serves POST /detokenize.
func (s *frontEnd) handleDetokenize(w http.ResponseWriter, r *http.Request) {
	body, e := s.readBody(w, r)
	if e != nil {
		e.Write(w)
		return
	}
	req, e := openai.ParseDetokenizeRequest(body)
	if e != nil {
		e.Write(w)
		return
	}
	if e := s.checkModel(req.Model); e != nil {
		e.Write(w)
		return
	}
	text, err := s.tok.Decode(req.Tokens, false)
	if err != nil {
		openai.BadRequest("tokens", "%v", err).Write(w)
		return
	}
	writeJSON(w, http.StatusOK, openai.DetokenizeResponse{Prompt: text})
}

// handleResetPrefixCache serves POST /reset_prefix_cache. Like vLLM it
// answers 200 even when a rank could not reset because blocks are in use
// (vLLM only logs that).
func (s *frontEnd) handleResetPrefixCache(w http.ResponseWriter, _ *http.Request) {
	s.log.Info("resetting prefix cache")
	for _, rk := range s.ranks {
		if !rk.core.ResetPrefixCache() {
			s.log.Warn("failed to reset prefix cache because some blocks are not freed yet", "rank", rk.rank)
		}
	}
	w.WriteHeader(http.StatusOK)
}

// handleRestart serves POST /inferrail/debug/restart: every rank drops its
// sequences and cache, and its KV-event publisher starts again at seq 0.
func (s *frontEnd) handleRestart(w http.ResponseWriter, _ *http.Request) {
	s.restartAll()
	writeJSON(w, http.StatusOK, map[string]any{"restarted": len(s.ranks)})
}

// gapEvents makes every rank's publisher skip the live send of its next n
// batches (a kv_gap fault).
func (s *frontEnd) gapEvents(n int) {
	s.log.Warn("fault: KV-event batches numbered but not sent live", "batches", n)
	for _, rk := range s.ranks {
		if rk.gapEvents != nil {
			rk.gapEvents(n)
		}
	}
}

func (s *frontEnd) restartAll() {
	s.log.Warn("fault: restarting every engine with an empty cache")
	for _, rk := range s.ranks {
		rk.core.Restart()
		if rk.restartEvents != nil {
			rk.restartEvents()
		}
	}
}

// kvCacheRank is one rank of GET /inferrail/debug/kv_cache.
type kvCacheRank struct {
	Rank      int            `json:"rank"`
	BlockSize int            `json:"block_size"`
	Hashes    []kvblock.Hash `json:"hashes"`
}

// handleKVCache serves GET /inferrail/debug/kv_cache: the router block
// hashes each rank's prefix cache holds, sorted.
func (s *frontEnd) handleKVCache(w http.ResponseWriter, _ *http.Request) {
	out := struct {
		Model string        `json:"model"`
		Ranks []kvCacheRank `json:"ranks"`
	}{Model: s.cfg.modelName(), Ranks: []kvCacheRank{}}
	for _, rk := range s.ranks {
		kr := kvCacheRank{Rank: rk.rank, BlockSize: s.cfg.Engine.BlockSize, Hashes: []kvblock.Hash{}}
		if rk.cachedHashes != nil {
			kr.Hashes = append(kr.Hashes, rk.cachedHashes()...)
			sort.Slice(kr.Hashes, func(i, j int) bool { return kr.Hashes[i] < kr.Hashes[j] })
		}
		out.Ranks = append(out.Ranks, kr)
	}
	writeJSON(w, http.StatusOK, out)
}

// handleLoad serves GET /inferrail/debug/load: the front end's in-flight
// requests and the engine's occupancy per rank.
func (s *frontEnd) handleLoad(w http.ResponseWriter, _ *http.Request) {
	type rankLoad struct {
		Rank     int   `json:"rank"`
		InFlight int64 `json:"in_flight"`
		Engine   *Load `json:"engine,omitempty"`
	}
	out := []rankLoad{}
	for _, rk := range s.ranks {
		rl := rankLoad{Rank: rk.rank, InFlight: rk.inflight.Load()}
		if rk.load != nil {
			l := rk.load()
			rl.Engine = &l
		}
		out = append(out, rl)
	}
	writeJSON(w, http.StatusOK, map[string]any{"ranks": out})
}
