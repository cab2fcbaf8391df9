package openai

import (
	"errors"
	"net/http"
	"testing"
)

func answerHeader(ct string) http.Header {
	h := http.Header{}
	if ct != "" {
		h.Set("Content-Type", ct)
	}
	return h
}

// checkAll feeds body to a fresh check in chunks of size k and returns the
// well-formed bytes and the error.
func checkAll(ct, body string, k int) (int, bool, error) {
	c := NewAnswerCheck(answerHeader(ct))
	good := 0
	for i := 0; i < len(body); i += k {
		p := []byte(body[i:min(i+k, len(body))])
		n, err := c.Check(p)
		good += n
		if err != nil {
			return good, c.Decided(), err
		}
	}
	return good, c.Decided(), nil
}

func TestAnswerCheck(t *testing.T) {
	for _, tc := range []struct {
		name, ct, body string
		good           int  // well-formed bytes (-1: all)
		decided        bool // at the end, with no error
	}{
		{"json object", "application/json", ` {"id":"x","choices":[]}`, -1, true},
		{"json charset", "application/json; charset=utf-8", `[1]`, -1, true},
		{"json odd params", "Application/JSON ; charset=UTF-8", `{}`, -1, true},
		{"json white space only", "application/json", " \n\t", -1, false},
		{"json garbage", "application/json", "\x00\xff{\"choices\": [garbage", 0, false},
		{"json string", "application/json", `  "text"`, 2, false},
		{"plain text", "text/plain", `{"ok":true}`, 0, false},
		{"no content type", "", `{"ok":true}`, 0, false},
		{"html", "text/html", `<html>`, 0, false},
		{"stream", "text/event-stream", "data: {\"a\":1}\n\ndata: [DONE]\n\n", -1, true},
		{"stream crlf", "text/event-stream; charset=utf-8", "data: {}\r\n\r\nevent: x\r\nid: 3\r\nretry: 10\r\n\r\n", -1, true},
		{"stream comment first", "text/event-stream", ": keep-alive\n\ndata: x\n\n", -1, true},
		{"stream bom", "text/event-stream", "\xEF\xBB\xBFdata: x\n\n", -1, true},
		{"stream blank only", "text/event-stream", "\n\n\r\n", -1, false},
		{"stream garbage", "text/event-stream", "\x00\xff{\"choices\"", 0, false},
		{"stream broken bom", "text/event-stream", "\xEF\xBBdata: x\n", 2, false},
		{"stream line without colon", "text/event-stream", "data: x\n\nhello\n", 9, false},
		{"stream unknown field", "text/event-stream", "data: x\n\nfoo: y\n", 9, false},
		{"stream long name", "text/event-stream", "data: x\n\ngarbage garbage\n", 9, false},
		{"stream name too long", "text/event-stream", "data: x\n\ndataa: y\n", 9, false},
		{"stream name past retry", "text/event-stream", "data: x\n\nretryy: 1\n", 9, false},
		{"stream turns garbage", "text/event-stream", "data: {\"a\":1}\n\n{\"x\":", 15, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []int{1, 2, 3, 7, 1 << 20} {
				good, decided, err := checkAll(tc.ct, tc.body, k)
				if tc.good < 0 {
					if err != nil || good != len(tc.body) || decided != tc.decided {
						t.Fatalf("chunks of %d: good %d of %d, decided %v, err %v; want all, decided %v, no error", k, good, len(tc.body), decided, err, tc.decided)
					}
					continue
				}
				if !errors.Is(err, ErrMalformedAnswer) {
					t.Fatalf("chunks of %d: err %v, want ErrMalformedAnswer", k, err)
				}
				// A field name begun in an earlier chunk was counted
				// there (at most 5 bytes).
				if good < tc.good || good > tc.good+5 || (k == 1<<20 && good != tc.good) {
					t.Fatalf("chunks of %d: %d well-formed bytes, want %d (err %v)", k, good, tc.good, err)
				}
			}
		})
	}
}

func TestAnswerCheckKeepsItsError(t *testing.T) {
	c := NewAnswerCheck(answerHeader("text/event-stream"))
	if _, err := c.Check([]byte("nope\n")); err == nil {
		t.Fatal("want an error")
	}
	if n, err := c.Check([]byte("data: x\n")); n != 0 || !errors.Is(err, ErrMalformedAnswer) {
		t.Fatalf("after an error: %d, %v; want 0 and the error again", n, err)
	}
	c.Reset(answerHeader("text/event-stream"))
	if n, err := c.Check([]byte("data: x\n")); n != 8 || err != nil {
		t.Fatalf("after Reset: %d, %v", n, err)
	}
}

// FuzzAnswerCheck: any body split anywhere gets the same verdict as in one
// piece, and about the same count of well-formed bytes (up to a field name
// begun in an earlier chunk), never more bytes than it has.
func FuzzAnswerCheck(f *testing.F) {
	f.Add("text/event-stream", []byte("data: {\"a\":1}\n\ndata: [DONE]\n\n"), 3)
	f.Add("application/json", []byte(" {\"id\":1}"), 1)
	f.Add("text/event-stream", []byte("\xEF\xBB\xBF: c\r\nretry: 1\r\n\r\nbad\n"), 2)
	f.Add("application/json", []byte("\x00\xff{\"choices\": [garbage\r\ndata: {not json\n\n\xfe\xfe"), 5)
	f.Fuzz(func(t *testing.T, ct string, body []byte, k int) {
		if k <= 0 || k > len(body) {
			k = max(len(body), 1)
		}
		whole, wdec, werr := checkAll(ct, string(body), len(body)+1)
		split, sdec, serr := checkAll(ct, string(body), k)
		if split < whole || split > whole+5 || (werr == nil) != (serr == nil) || (werr == nil && wdec != sdec) {
			t.Fatalf("whole: %d %v %v; in chunks of %d: %d %v %v", whole, wdec, werr, k, split, sdec, serr)
		}
		if split > len(body) || (werr == nil && whole != len(body)) {
			t.Fatalf("%d (split %d) well-formed bytes of %d (err %v)", whole, split, len(body), werr)
		}
		if werr != nil && !errors.Is(werr, ErrMalformedAnswer) {
			t.Fatalf("error %v does not wrap ErrMalformedAnswer", werr)
		}
	})
}

// BenchmarkAnswerCheck is the check's cost over a stream of chat chunks as
// an engine sends them (about 150 bytes an event), and over a JSON body (its
// start only).
func BenchmarkAnswerCheck(b *testing.B) {
	event := []byte(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" word"},"logprobs":null,"finish_reason":null}]}` + "\n\n")
	for _, tc := range []struct {
		name, ct string
		body     []byte
	}{
		{"event-stream", "text/event-stream", event},
		{"json", "application/json", []byte(`{"id":"cmpl-1","object":"text_completion","choices":[{"index":0,"text":"hello"}]}`)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			c := NewAnswerCheck(answerHeader(tc.ct))
			b.SetBytes(int64(len(tc.body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Check(tc.body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
