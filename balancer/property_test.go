package balancer

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
)

// chunkReader returns its data in random pieces, like a client writing a
// body in bursts.
type chunkReader struct {
	data []byte
	rng  *rand.Rand
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(c.data), 1+c.rng.IntN(4096))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

// TestBodiesAndStreamsPassByteForByte is a property test through the whole
// balancer: a request body sent in random chunks (random JSON spacing and
// content, the model already canonical) reaches the engine byte for byte,
// and an SSE stream written in random chunks reaches the client byte for
// byte.
func TestBodiesAndStreamsPassByteForByte(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	var stream []byte
	var cuts []int
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		off := 0
		for _, k := range cuts {
			_, _ = w.Write(stream[off : off+k])
			off += k
			w.(http.Flusher).Flush()
		}
	})
	_, srv := newTestBalancer(t, testConfig(up.srv.URL))
	for trial := range 30 {
		sp := func() string { return strings.Repeat(" ", rng.IntN(3)) + strings.Repeat("\n", rng.IntN(2)) }
		var prompt strings.Builder
		for range rng.IntN(3000) {
			prompt.WriteString(fmt.Sprintf("w%d ", rng.IntN(1000)))
		}
		body := fmt.Sprintf(`{%s"prompt"%s:%s%q,%s"model":%s"m"%s,"stream":true,"max_tokens":%d,"x":{"é":[1,2.50,"\u00e9"]}%s}`,
			sp(), sp(), sp(), prompt.String(), sp(), sp(), sp(), rng.IntN(100), sp())
		stream = stream[:0]
		for i := range rng.IntN(200) {
			stream = append(stream, fmt.Sprintf("data: {\"i\":%d,\"t\":%q}\n\n", i, strings.Repeat("é", rng.IntN(50)))...)
		}
		stream = append(stream, "data: [DONE]\n\n"...)
		cuts = cuts[:0]
		for n := 0; n < len(stream); {
			k := min(1+rng.IntN(700), len(stream)-n)
			cuts = append(cuts, k)
			n += k
		}
		req, _ := http.NewRequest("POST", srv.URL+"/v1/completions", &chunkReader{data: []byte(body), rng: rng})
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("trial %d: %s, %v", trial, resp.Status, err)
		}
		<-up.hits
		if sent := <-up.bodies; !bytes.Equal(sent, []byte(body)) {
			t.Errorf("trial %d: the engine got a different body:\n%q\nwant\n%q", trial, sent, body)
		}
		if !bytes.Equal(got, stream) {
			t.Errorf("trial %d: the client got a different stream (%d vs %d bytes)", trial, len(got), len(stream))
		}
	}
}
