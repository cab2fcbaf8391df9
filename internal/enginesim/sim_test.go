package enginesim

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/inferrail/inferrail/internal/h2c"
	"github.com/inferrail/inferrail/internal/openai"
)

// runSim starts Run on 127.0.0.1:0 and returns its base URL; it stops at cleanup.
func runSim(t *testing.T, cfg Config) (string, *frontEnd) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan string, 1)
	errc := make(chan error, 1)
	cfg.OnListening = func(a string) { addrc <- a }
	go func() { errc <- Run(ctx, cfg, nil) }()
	var addr string
	select {
	case addr = <-addrc:
	case err := <-errc:
		t.Fatalf("Run: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		if err := waitFor(t, errc, "Run to return"); err != nil {
			t.Errorf("Run returned %v after cancel, want nil", err)
		}
	})
	return "http://" + addr, nil
}

func simLoopbackConfig() Config {
	cfg := simTestConfig()
	cfg.Host = "127.0.0.1"
	return cfg
}

func post(t *testing.T, c *http.Client, url, body string) (*http.Response, []byte) {
	t.Helper()
	resp, err := c.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read %s: %v", url, err)
	}
	return resp, b
}

func TestRunServesHTTP1AndH2C(t *testing.T) {
	base, _ := runSim(t, simLoopbackConfig())
	h2cClient := &http.Client{Transport: &http.Transport{Protocols: h2c.ClientProtocols()}}
	for name, c := range map[string]*http.Client{"http1": http.DefaultClient, "h2c": h2cClient} {
		t.Run(name, func(t *testing.T) {
			resp, body := post(t, c, base+"/v1/chat/completions",
				`{"messages":[{"role":"user","content":"hi"}],"max_tokens":3,"stream":true,"stream_options":{"include_usage":true}}`)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			wantProto := map[string]int{"http1": 1, "h2c": 2}[name]
			if resp.ProtoMajor != wantProto {
				t.Errorf("protocol %s, want HTTP/%d", resp.Proto, wantProto)
			}
			// Role chunk, one or more content chunks (outputs that queue up
			// are merged, as vLLM does), the usage chunk, [DONE].
			events := sseData(t, body)
			n := len(events)
			if n < 4 || !strings.Contains(events[0], `"role":"assistant"`) || events[n-1] != openai.Done ||
				!strings.Contains(events[n-2], `"choices":[],"usage":{"prompt_tokens":11,"total_tokens":14,"completion_tokens":3}`) {
				t.Errorf("events: %q", events)
			}
		})
	}
}

func TestFaults(t *testing.T) {
	base, _ := runSim(t, simLoopbackConfig())
	c := &http.Client{}
	addFault := func(spec string) {
		t.Helper()
		if resp, body := post(t, c, base+"/inferrail/debug/faults", spec); resp.StatusCode != 200 {
			t.Fatalf("add fault: %d %s", resp.StatusCode, body)
		}
	}
	chat := `{"messages":[{"role":"user","content":"hi"}],"max_tokens":2}`

	t.Run("status for the next N requests", func(t *testing.T) {
		addFault(`{"kind":"status","status":503,"count":2,"path":"/v1/"}`)
		for i := 0; i < 2; i++ {
			resp, body := post(t, c, base+"/v1/chat/completions", chat)
			e, ok := openai.ParseError(body)
			if resp.StatusCode != 503 || !ok || e.Status != 503 {
				t.Fatalf("request %d: %d %s", i, resp.StatusCode, body)
			}
		}
		if resp, body := post(t, c, base+"/v1/chat/completions", chat); resp.StatusCode != 200 {
			t.Fatalf("after the fault: %d %s", resp.StatusCode, body)
		}
	})
	t.Run("close before answering", func(t *testing.T) {
		addFault(`{"kind":"close","count":1}`)
		resp, err := c.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(chat))
		if err == nil {
			resp.Body.Close()
			t.Fatalf("got a response (%d), want the connection closed", resp.StatusCode)
		}
		if resp, body := post(t, c, base+"/v1/chat/completions", chat); resp.StatusCode != 200 {
			t.Fatalf("after the fault: %d %s", resp.StatusCode, body)
		}
	})
	t.Run("hang until the client gives up", func(t *testing.T) {
		addFault(`{"kind":"hang","count":1}`)
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "POST", base+"/v1/chat/completions", strings.NewReader(chat))
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
			t.Fatalf("got a response (%d), want none", resp.StatusCode)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want the client's deadline", err)
		}
	})
	t.Run("delay then answer", func(t *testing.T) {
		addFault(`{"kind":"delay","delay":"20ms","count":1}`)
		if resp, body := post(t, c, base+"/v1/chat/completions", chat); resp.StatusCode != 200 {
			t.Fatalf("delayed request: %d %s", resp.StatusCode, body)
		}
	})
	t.Run("garbage with a 200", func(t *testing.T) {
		addFault(`{"kind":"garbage","count":1}`)
		resp, body := post(t, c, base+"/v1/chat/completions", chat)
		if resp.StatusCode != 200 || json.Valid(body) || strings.Contains(string(body), "[DONE]") {
			t.Fatalf("garbage fault answered %d %q", resp.StatusCode, body)
		}
		if resp, body := post(t, c, base+"/v1/chat/completions", chat); resp.StatusCode != 200 || !json.Valid(body) {
			t.Fatalf("after the fault: %d %s", resp.StatusCode, body)
		}
	})
	t.Run("bad fault spec", func(t *testing.T) {
		if resp, _ := post(t, c, base+"/inferrail/debug/faults", `{"kind":"explode"}`); resp.StatusCode != 400 {
			t.Errorf("status %d, want 400", resp.StatusCode)
		}
	})
}

// TestRefuseReopens: a refuse fault closes the port; it listens again on
// the same address afterwards.
func TestRefuseReopens(t *testing.T) {
	cfg := simLoopbackConfig()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h := newSimHarness(t, cfg)
	if err := h.fe.listen(); err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- h.fe.serve(ctx) }()
	base := "http://" + h.fe.Addr()
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	if resp, _ := post(t, c, base+"/inferrail/debug/faults", `{"kind":"refuse","duration":"100ms"}`); resp.StatusCode != 200 {
		t.Fatalf("add refuse: %d", resp.StatusCode)
	}
	h.fe.mu.Lock()
	reopened := h.fe.reopened
	h.fe.mu.Unlock()
	_, err := net.Dial("tcp", h.fe.Addr())
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial while refusing: %v, want connection refused", err)
	}
	waitFor(t, reopened, "the listener to reopen")
	if resp, body := post(t, c, base+"/v1/completions", `{"prompt":"x","max_tokens":1}`); resp.StatusCode != 200 {
		t.Errorf("after reopening: %d %s", resp.StatusCode, body)
	}
	cancel()
	if err := waitFor(t, served, "serve to return"); err != nil {
		t.Errorf("serve: %v", err)
	}
}

// TestClientDisconnectOverTCP: closing the connection mid-stream aborts
// the engine sequence (counted as abort).
func TestClientDisconnectOverTCP(t *testing.T) {
	cfg := simLoopbackConfig()
	cfg.Engine.ZeroLatency = false
	h := newSimHarness(t, cfg)
	chatDone := make(chan struct{}, 1)
	h.fe.afterRequest = func(r *http.Request) {
		if r.URL.Path == "/v1/chat/completions" {
			chatDone <- struct{}{}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := h.fe.listen(); err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- h.fe.serve(ctx) }()
	conn, err := net.Dial("tcp", h.fe.Addr())
	if err != nil {
		t.Fatal(err)
	}
	body := `{"messages":[{"role":"user","content":"go on"}],"max_tokens":3000,"ignore_eos":true,"stream":true}`
	_, _ = io.WriteString(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "+
		itoaTest(len(body))+"\r\n\r\n"+body)
	rd := bufio.NewReader(conn)
	for chunks := 0; chunks < 3; {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		if strings.HasPrefix(line, "data: ") {
			chunks++
		}
	}
	_ = conn.Close()
	waitFor(t, chatDone, "the handler to see the disconnect") // it aborted the sequence
	if got := counterValue(t, h.reg, "vllm:request_success_total", map[string]string{"finished_reason": "abort"}); got != 1 {
		t.Errorf("request_success_total{finished_reason=abort} = %v, want 1", got)
	}
	if l := h.engines[0].Load(); l.Running != 0 {
		t.Errorf("running = %d after the client left", l.Running)
	}
	cancel()
	waitFor(t, served, "serve to return")
}

func itoaTest(n int) string {
	b := []byte{}
	if n == 0 {
		return "0"
	}
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// TestGracefulShutdown: when Run's context ends, a stream in flight still
// finishes (finish_reason "length", [DONE]) before Run returns nil.
func TestGracefulShutdown(t *testing.T) {
	cfg := simLoopbackConfig()
	cfg.Engine.ZeroLatency = false
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan string, 1)
	cfg.OnListening = func(a string) { addrc <- a }
	errc := make(chan error, 1)
	go func() { errc <- Run(ctx, cfg, nil) }()
	addr := <-addrc
	resp, err := http.Post("http://"+addr+"/v1/completions", "application/json",
		strings.NewReader(`{"prompt":"finish me","max_tokens":30,"ignore_eos":true,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rd := openai.NewReader(resp.Body)
	if _, err := rd.Next(); err != nil {
		t.Fatalf("first event: %v", err)
	}
	cancel() // SIGTERM
	var last, lastChunk string
	for {
		ev, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("stream broken by shutdown: %v", err)
		}
		if ev.Data != openai.Done {
			lastChunk = ev.Data
		}
		last = ev.Data
	}
	if last != openai.Done || !strings.Contains(lastChunk, `"finish_reason":"length"`) {
		t.Errorf("stream ended with %q after %q", last, lastChunk)
	}
	if err := waitFor(t, errc, "Run to return"); err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
}

// waitFor receives from ch, failing the test (with every goroutine's stack
// in the log) if nothing arrives within a minute: a guard against a hang,
// not a timing assertion.
func waitFor[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	timer := time.NewTimer(time.Minute)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		buf := make([]byte, 1<<20)
		t.Fatalf("timed out waiting for %s; goroutines:\n%s", what, buf[:runtime.Stack(buf, true)])
		panic("unreachable")
	}
}
