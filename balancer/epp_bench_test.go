package balancer

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/inferrail/inferrail/balancer/epp"
)

// BenchmarkEPP compares the decision per request in the two modes over one
// fleet of 8 static cost_model replicas and one ~600-token chat prompt:
//
//   - decide/proxy: proxy mode's steps in process (prepare, decide,
//     TryAcquire, Prefilled, Done), without the HTTP;
//   - decide/epp: the picker's (the same steps, plus the subset, the
//     endpoint list with its fallbacks, and the lease);
//   - roundtrip/proxy: a client's HTTP request through the balancer to a
//     fake engine that answers at once (what proxy mode adds in front of an
//     engine);
//   - roundtrip/epp: one ext_proc stream over loopback gRPC as Envoy plays it
//     in FULL_DUPLEX_STREAMED mode (headers, the body in two chunks, the
//     pick, the response headers and body echoed, the close): what the
//     gateway waits for before it sends the request on, and after.
//
// docs/epp.md has the command and figures.
func BenchmarkEPP(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(okHandler))
	defer up.Close()
	cfg := eppTestConfig()
	for i := range 8 {
		cfg.Replicas = append(cfg.Replicas, ReplicaConfig{Name: fmt.Sprintf("r%d", i), URL: up.URL, Models: []string{"m"}})
	}
	cfg.EPP.Listen = "127.0.0.1:0"
	bal, err := New(cfg, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer bal.proxy.Close()
	prompt := strings.Repeat("You are a careful assistant; answer briefly and cite the document. ", 30)
	body := fmt.Sprintf(`{"model":"m","messages":[{"role":"system","content":%q},{"role":"user","content":"hi"}],"max_tokens":1}`, prompt)
	ctx := context.Background()

	b.Run("decide/proxy", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sc := bal.getScratch()
			rq := request{start: bal.now(), kind: kindChat, mode: modeProxy}
			if oerr := bal.prepare(ctx, &rq, []byte(body), sc); oerr != nil {
				b.Fatal(oerr)
			}
			set := bal.fleet.Snapshot().Models["m"]
			sc.exclude = sc.exclude[:0]
			idx, d, err := bal.decide(&rq, set, bal.now(), sc.preparedPrompt(&rq), sc)
			if err != nil {
				b.Fatal(err)
			}
			rep := set.Replicas[idx]
			ticket, ok := rep.TryAcquire(d.UncachedTokens, 0)
			if !ok {
				b.Fatal("full")
			}
			rep.Counters.Prefilled(d.UncachedTokens, ticket, bal.now())
			rep.Counters.Done(d.UncachedTokens, 0, ticket, true)
			bal.putScratch(sc)
		}
	})
	b.Run("decide/epp", func(b *testing.B) {
		p := &eppPicker{b: bal}
		b.ReportAllocs()
		for b.Loop() {
			pk, err := p.Pick(ctx, &epp.Request{Method: "POST", Path: "/v1/chat/completions", Header: http.Header{}, Body: []byte(body)})
			if err != nil {
				b.Fatal(err)
			}
			pk.Lease.Served(pk.Endpoints[0], 200)
			pk.Lease.Prefilled(true)
			pk.Lease.Done()
		}
	})
	b.Run("roundtrip/proxy", func(b *testing.B) {
		front := httptest.NewServer(bal.Handler())
		defer front.Close()
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
		defer client.CloseIdleConnections()
		b.ReportAllocs()
		for b.Loop() {
			resp, err := client.Post(front.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
	b.Run("roundtrip/epp", func(b *testing.B) {
		es, err := bal.newEPPServer(ctx)
		if err != nil {
			b.Fatal(err)
		}
		go func() { _ = es.grpc.Serve(es.ln) }()
		defer es.grpc.Stop()
		conn, err := grpc.NewClient(es.ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		client := extprocv3.NewExternalProcessorClient(conn)
		half := len(body) / 2
		msgs := []*extprocv3.ProcessingRequest{
			{Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{Headers: &corev3.HeaderMap{
				Headers: []*corev3.HeaderValue{{Key: ":method", RawValue: []byte("POST")}, {Key: ":path", RawValue: []byte("/v1/chat/completions")}}}}},
				ProtocolConfig: &extprocv3.ProtocolConfiguration{RequestBodyMode: extprocfilterv3.ProcessingMode_FULL_DUPLEX_STREAMED,
					ResponseBodyMode: extprocfilterv3.ProcessingMode_FULL_DUPLEX_STREAMED}},
			{Request: &extprocv3.ProcessingRequest_RequestBody{RequestBody: &extprocv3.HttpBody{Body: []byte(body[:half])}}},
			{Request: &extprocv3.ProcessingRequest_RequestBody{RequestBody: &extprocv3.HttpBody{Body: []byte(body[half:]), EndOfStream: true}}},
		}
		respMsgs := []*extprocv3.ProcessingRequest{
			{Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{Headers: &corev3.HeaderMap{
				Headers: []*corev3.HeaderValue{{Key: ":status", RawValue: []byte("200")}}}}}},
			{Request: &extprocv3.ProcessingRequest_ResponseBody{ResponseBody: &extprocv3.HttpBody{Body: []byte(`{"ok":true}`), EndOfStream: true}}},
		}
		b.ReportAllocs()
		for b.Loop() {
			s, err := client.Process(ctx)
			if err != nil {
				b.Fatal(err)
			}
			for _, m := range msgs {
				if err := s.Send(m); err != nil {
					b.Fatal(err)
				}
			}
			for range 2 { // the headers response and the body
				if _, err := s.Recv(); err != nil {
					b.Fatal(err)
				}
			}
			for _, m := range respMsgs {
				if err := s.Send(m); err != nil {
					b.Fatal(err)
				}
				if _, err := s.Recv(); err != nil {
					b.Fatal(err)
				}
			}
			_ = s.CloseSend()
			if _, err := s.Recv(); err != io.EOF {
				b.Fatalf("stream end: %v", err)
			}
		}
	})
}
