package balancer

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/inferrail/inferrail/balancer/route"
	"github.com/inferrail/inferrail/internal/openai"
)

// Response headers the balancer adds.
const (
	HeaderRequestID    = "X-Request-Id"
	HeaderReplica      = "X-Inferrail-Replica"
	HeaderPromptTokens = "X-Inferrail-Prompt-Tokens"
	HeaderCachedTokens = "X-Inferrail-Cached-Tokens"
	// HeaderTokensEstimated is "true" when the prompt and cached token
	// counts are estimates from the text prefix identity (no tokenizer).
	HeaderTokensEstimated = "X-Inferrail-Tokens-Estimated"
	// HeaderServerTiming is the W3C Server-Timing header of a proxied
	// answer: the balancer's own time (serverTiming).
	HeaderServerTiming = "Server-Timing"
)

// The balancer's Server-Timing metrics (serverTiming).
const (
	// TimingRoute is the time from the request's headers to the sending of
	// the attempt that answered: reading the body, tokenizing, admission,
	// the routing decision and any attempts that failed before it. Its desc
	// is the decision's reason (route.Reason, the decision log's reason).
	TimingRoute = "inferrail-route"
	// TimingUpstream is the time from that sending to the answer's first
	// bytes from the replica (a stream's first event).
	TimingUpstream = "inferrail-upstream"
	// TimingEstimate is the policy's estimated time to first token on the
	// replica that answered (route.Decision.EstimatedTTFT; cost_model only),
	// TimingQueueWait and TimingMemoryWait its parts spent waiting for the
	// work queued there and for KV memory. What the balancer expected, to
	// hold against what the engine took: bench run records them.
	// TimingLowestEstimate is the lowest estimate among the candidates: the
	// pick's estimate above it is what the rule that chose the pick
	// (rotation, near tie, hot prefix, TPOT guard) paid for it.
	TimingEstimate       = "inferrail-estimate"
	TimingQueueWait      = "inferrail-queue-wait"
	TimingMemoryWait     = "inferrail-memory-wait"
	TimingLowestEstimate = "inferrail-lowest-estimate"
)

// serverTiming is the Server-Timing value for an answer to a request that
// arrived at start, was sent at sent to the replica that answered, the
// candidate pick of decision d, and got its first bytes at first; durations
// in milliseconds to the microsecond. The route metric's desc is the
// decision's reason (a token: route.Reason values are lower case letters
// and underscores). The estimates are there when d has them (cost_model).
func serverTiming(start, sent, first time.Time, d *route.Decision, pick int) string {
	ms := func(d time.Duration) string {
		return strconv.FormatFloat(float64(max(d, 0))/float64(time.Millisecond), 'f', 3, 64)
	}
	v := TimingRoute + ";dur=" + ms(sent.Sub(start))
	if d.Reason != "" {
		v += ";desc=" + string(d.Reason)
	}
	v += ", " + TimingUpstream + ";dur=" + ms(first.Sub(sent))
	if d.EstimatedTTFT > 0 {
		v += ", " + TimingEstimate + ";dur=" + ms(d.EstimatedTTFT)
		if lowest, ok := lowestEstimate(d.TTFTs); ok {
			v += ", " + TimingLowestEstimate + ";dur=" + ms(lowest)
		}
		if pick >= 0 && pick < len(d.Waits) && d.Waits[pick] >= 0 {
			v += ", " + TimingQueueWait + ";dur=" + ms(d.Waits[pick])
		}
		if pick >= 0 && pick < len(d.MemoryWaits) && d.MemoryWaits[pick] >= 0 && d.MemoryWaits[pick] != route.MemoryShort {
			v += ", " + TimingMemoryWait + ";dur=" + ms(d.MemoryWaits[pick])
		}
	}
	return v
}

// lowestEstimate returns the lowest of the eligible candidates' estimates
// (route.Decision.TTFTs, negative where not eligible).
func lowestEstimate(ttfts []time.Duration) (time.Duration, bool) {
	lowest, ok := time.Duration(0), false
	for _, t := range ttfts {
		if t >= 0 && (!ok || t < lowest) {
			lowest, ok = t, true
		}
	}
	return lowest, ok
}

// kind is a proxied route.
type kind uint8

const (
	kindChat kind = iota
	kindCompletions
	kindEmbeddings
)

func (k kind) String() string {
	switch k {
	case kindChat:
		return "chat"
	case kindCompletions:
		return "completions"
	default:
		return "embeddings"
	}
}

// Handler returns the client API: POST /v1/chat/completions,
// /v1/completions and /v1/embeddings, GET /v1/models and /health. Other paths
// get 404 and wrong methods 405, in the OpenAI error shape.
func (b *Balancer) Handler() http.Handler { return http.HandlerFunc(b.serveClient) }

func (b *Balancer) serveClient(w http.ResponseWriter, r *http.Request) {
	g := b.cur().gate
	w.Header().Set(HeaderRequestID, requestID(r))
	if g.CORS().Handle(w, r) {
		return
	}
	post := func(k kind) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			openai.MethodNotAllowed().Write(w)
			return
		}
		r, ok := b.authenticate(w, r, g)
		if !ok {
			return
		}
		b.forward(w, r, k)
	}
	get := func(h func(http.ResponseWriter, *http.Request)) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			openai.MethodNotAllowed().Write(w)
			return
		}
		h(w, r)
	}
	switch r.URL.Path {
	case "/v1/chat/completions":
		post(kindChat)
	case "/v1/completions":
		post(kindCompletions)
	case "/v1/embeddings":
		post(kindEmbeddings)
	case "/v1/models":
		get(func(w http.ResponseWriter, r *http.Request) {
			if r, ok := b.authenticate(w, r, g); ok {
				b.serveModels(w, r)
			}
		})
	case "/health":
		get(b.serveHealth)
	default:
		openai.RouteNotFound().Write(w)
	}
}

// serveModels lists every model a replica serves or the config names, with
// the aliases, in vLLM's shape; with keys on, only those the key may use.
func (b *Balancer) serveModels(w http.ResponseWriter, r *http.Request) {
	snap := b.fleet.Snapshot()
	cfg := b.cur().cfg
	who, _ := identityOf(r)
	seen := map[string]bool{}
	list := openai.ModelList{Object: "list", Data: []openai.ModelCard{}}
	created := b.now().Unix()
	add := func(id, root string) {
		if seen[id] || !who.AllowsModel(root) {
			return
		}
		seen[id] = true
		rt := root
		list.Data = append(list.Data, openai.ModelCard{ID: id, Object: "model", Created: created, OwnedBy: "inferrail",
			Root: &rt, Permission: []openai.ModelPermission{openai.NewModelPermission("modelperm-"+id, created)}})
	}
	for _, mc := range cfg.Models {
		if snap.Models[mc.Name] == nil {
			continue
		}
		add(mc.Name, mc.Name)
		for _, a := range mc.Aliases {
			add(a, mc.Name)
		}
	}
	for _, name := range snap.ModelNames {
		add(name, name)
	}
	writeJSON(w, http.StatusOK, list)
}

// serveHealth answers 200 when some replica is healthy, else 503.
func (b *Balancer) serveHealth(w http.ResponseWriter, r *http.Request) {
	now := b.now()
	for _, rep := range b.fleet.Snapshot().Replicas {
		if rep.Healthy(now) {
			w.WriteHeader(http.StatusOK)
			return
		}
	}
	openai.Unavailable("no healthy replica").Write(w)
}

// AdminHandler serves /metrics, /healthz, /v1/gossip/*, the introspection
// endpoints (GET /v1/replicas, /v1/config, /docs, /debug/decisions), POST
// /v1/explain, POST /admin/reload and the web UI (/ui/, /debug/series).
func (b *Balancer) AdminHandler() http.Handler {
	mux := http.NewServeMux()
	b.adminRoutes(mux)
	g := b.gather
	if g == nil {
		g = prometheus.NewRegistry()
	}
	mux.Handle("GET /metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
	})
	if b.node != nil {
		mux.Handle("/v1/gossip/", b.node.Handler())
	}
	if b.ui != nil {
		b.ui.Mount(mux)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if b.cur().gate.CORS().Handle(w, r) {
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// requestID returns the client's x-request-id when it is short and
// printable, else a new random one.
func requestID(r *http.Request) string {
	if id := r.Header.Get(HeaderRequestID); id != "" && len(id) <= 128 {
		ok := true
		for i := 0; i < len(id) && ok; i++ {
			ok = id[i] > 0x20 && id[i] < 0x7f
		}
		if ok {
			return id
		}
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// readBody reads the whole body within MaxBodyBytes and the read deadline.
func (b *Balancer) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *openai.Error) {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(b.now().Add(b.cfg.Timeouts.ReadBody))
	if r.ContentLength > b.cfg.MaxBodyBytes {
		// The body stays unread: close the connection after the answer
		// instead of draining it.
		w.Header().Set("Connection", "close")
		return nil, openai.StatusError(http.StatusRequestEntityTooLarge, "request body too large")
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, b.cfg.MaxBodyBytes))
	if err == nil {
		_ = rc.SetReadDeadline(time.Time{})
	} else {
		// A body that failed (stalled past read_body, cut, too large) is
		// not drained: net/http would read the rest of a small one with no
		// deadline left, forever, before sending the answer. Keep the
		// expired deadline and close the connection after the answer.
		w.Header().Set("Connection", "close")
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, openai.StatusError(http.StatusRequestEntityTooLarge, "request body too large")
		}
		return nil, openai.BadRequest("", "could not read the request body: %v", err)
	}
	return body, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := jsonMarshal(v)
	if err != nil {
		openai.Internal("encode response: %v", err).Write(w)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
