package sidecar

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"time"
)

// maxAdvertisedModelBytes bounds the model names put in the gossip metadata
// (memberlist allows 512 bytes of metadata in all).
const maxAdvertisedModelBytes = 320

// modelsRefresh is how often the engine's model list is read again (LoRA
// adapters can be loaded at run time).
const modelsRefresh = 30 * time.Second

// engineModels is what the engine's GET /v1/models says.
type engineModels struct {
	// Base is the first base model (the served model name).
	Base string
	// IDs are every model id: base models and their aliases first, then
	// LoRA adapters.
	IDs []string
	// LoRAs are the ids of LoRA adapters (cards with a parent).
	LoRAs map[string]bool
}

// fetchModels reads the engine's GET /v1/models.
func fetchModels(ctx context.Context, client *http.Client, base *url.URL) (engineModels, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base.JoinPath("/v1/models").String(), nil)
	if err != nil {
		return engineModels{}, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return engineModels{}, fmt.Errorf("list models: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return engineModels{}, fmt.Errorf("list models: status %s", resp.Status)
	}
	var body struct {
		Data []struct {
			ID     string  `json:"id"`
			Parent *string `json:"parent"`
		} `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&body); err != nil {
		return engineModels{}, fmt.Errorf("list models: %w", err)
	}
	m := engineModels{LoRAs: map[string]bool{}}
	var loras []string
	for _, c := range body.Data {
		switch {
		case c.ID == "":
		case c.Parent == nil:
			if m.Base == "" {
				m.Base = c.ID
			}
			m.IDs = append(m.IDs, c.ID)
		default:
			m.LoRAs[c.ID] = true
			loras = append(loras, c.ID)
		}
	}
	if m.Base == "" {
		return engineModels{}, errors.New("list models: no base model listed")
	}
	m.IDs = append(m.IDs, loras...)
	return m, nil
}

// modelsLoop learns the engine's models: the served model name (unless
// configured) as soon as the engine answers, then the list again every
// modelsRefresh.
func (s *Sidecar) modelsLoop(ctx context.Context) error {
	client := &http.Client{Transport: s.transport, Timeout: 5 * time.Second}
	backoff := 250 * time.Millisecond
	for {
		m, err := fetchModels(ctx, client, s.engineURL)
		wait := modelsRefresh
		switch {
		case err == nil:
			if s.cfg.Model == "" && s.currentModel() == "" {
				s.log.Info("served model learned from the engine", "model", m.Base)
			}
			if s.cfg.Model == "" {
				s.setModel(m.Base)
			}
			s.models.Store(&m)
		case s.models.Load() == nil:
			s.log.Debug("engine models not known yet", "err", err)
			wait = backoff
			backoff = min(backoff*2, 5*time.Second)
		default:
			s.log.Debug("engine models refresh failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// loraOf returns the LoRA adapter a request's model field names, or "" for
// the base model and its aliases.
func (s *Sidecar) loraOf(model string) string {
	if m := s.models.Load(); m != nil && m.LoRAs[model] {
		return model
	}
	return ""
}

// advertisedModels returns the model names for the gossip metadata: the
// served model first, then the engine's other ids (LoRA adapters last),
// within maxAdvertisedModelBytes.
func (s *Sidecar) advertisedModels() []string {
	ids, _ := s.advertised()
	return ids
}

// advertised returns advertisedModels and how many of its last names are
// LoRA adapters (gossip.Meta.Adapters).
func (s *Sidecar) advertised() (ids []string, adapters int) {
	ids = s.advertisedNames()
	if m := s.models.Load(); m != nil {
		for i := len(ids) - 1; i > 0 && m.LoRAs[ids[i]]; i-- {
			adapters++
		}
	}
	return ids, adapters
}

func (s *Sidecar) advertisedNames() []string {
	var ids []string
	if cur := s.currentModel(); cur != "" {
		ids = append(ids, cur)
	}
	if m := s.models.Load(); m != nil {
		for _, id := range m.IDs {
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	n := 0
	for i, id := range ids {
		if n += len(id) + 2; n > maxAdvertisedModelBytes {
			return ids[:i]
		}
	}
	return ids
}
