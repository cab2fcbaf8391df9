package gateway

import (
	"net/http/httptest"
	"testing"
	"time"
)

func TestCORS(t *testing.T) {
	p := NewCORS(CORSConfig{AllowedOrigins: []string{"https://app.example"}, AllowedHeaders: []string{"Authorization", "Content-Type"}, MaxAge: time.Minute})
	tests := []struct {
		name                  string
		method, origin        string
		reqMethod, reqHeaders string
		handled               bool
		status                int
		allowOrigin           string
		allowHeaders          string
	}{
		{"preflight allowed", "OPTIONS", "https://app.example", "POST", "authorization, content-type", true, 204, "https://app.example", "authorization, content-type"},
		{"preflight case-insensitive origin", "OPTIONS", "HTTPS://APP.EXAMPLE", "POST", "", true, 204, "HTTPS://APP.EXAMPLE", ""},
		{"preflight other origin", "OPTIONS", "https://evil.example", "POST", "", true, 403, "", ""},
		{"preflight header not allowed", "OPTIONS", "https://app.example", "POST", "x-secret", true, 403, "https://app.example", ""},
		{"preflight method not allowed", "OPTIONS", "https://app.example", "DELETE", "", true, 403, "https://app.example", ""},
		{"simple request allowed", "POST", "https://app.example", "", "", false, 0, "https://app.example", ""},
		{"simple request other origin", "POST", "https://evil.example", "", "", false, 0, "", ""},
		{"no origin", "POST", "", "", "", false, 0, "", ""},
		{"options without preflight header", "OPTIONS", "https://app.example", "", "", false, 0, "https://app.example", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, "/v1/chat/completions", nil)
			if tc.origin != "" {
				r.Header.Set("Origin", tc.origin)
			}
			if tc.reqMethod != "" {
				r.Header.Set("Access-Control-Request-Method", tc.reqMethod)
			}
			if tc.reqHeaders != "" {
				r.Header.Set("Access-Control-Request-Headers", tc.reqHeaders)
			}
			w := httptest.NewRecorder()
			handled := p.Handle(w, r)
			if handled != tc.handled {
				t.Fatalf("handled = %v, want %v", handled, tc.handled)
			}
			if handled && w.Code != tc.status {
				t.Errorf("status = %d, want %d", w.Code, tc.status)
			}
			h := w.Header()
			if got := h.Get("Access-Control-Allow-Origin"); got != tc.allowOrigin {
				t.Errorf("Allow-Origin = %q, want %q", got, tc.allowOrigin)
			}
			if got := h.Get("Access-Control-Allow-Headers"); got != tc.allowHeaders {
				t.Errorf("Allow-Headers = %q, want %q", got, tc.allowHeaders)
			}
			if tc.status == 204 && (h.Get("Access-Control-Max-Age") != "60" || h.Get("Access-Control-Allow-Methods") == "") {
				t.Errorf("preflight answer lacks max-age or methods: %v", h)
			}
			if h.Get("Vary") == "" {
				t.Error("no Vary: Origin")
			}
		})
	}
	star := NewCORS(CORSConfig{AllowedOrigins: []string{"*"}, AllowedHeaders: []string{"*"}})
	r := httptest.NewRequest("OPTIONS", "/v1/models", nil)
	r.Header.Set("Origin", "https://any.example")
	r.Header.Set("Access-Control-Request-Method", "GET")
	r.Header.Set("Access-Control-Request-Headers", "x-stainless-os, authorization")
	w := httptest.NewRecorder()
	if !star.Handle(w, r) || w.Code != 204 || w.Header().Get("Access-Control-Allow-Origin") != "*" ||
		w.Header().Get("Access-Control-Allow-Headers") != "x-stainless-os, authorization" {
		t.Errorf("wildcard preflight: %d %v", w.Code, w.Header())
	}
	off := NewCORS(CORSConfig{})
	if off.Handle(httptest.NewRecorder(), r) {
		t.Error("CORS off answered a preflight")
	}
}

func FuzzCORS(f *testing.F) {
	f.Add("https://app.example", "POST", "authorization, content-type", "OPTIONS")
	f.Add("null", "", ",,,", "GET")
	f.Fuzz(func(t *testing.T, origin, reqMethod, reqHeaders, method string) {
		for _, p := range []*CORS{
			NewCORS(CORSConfig{AllowedOrigins: []string{"https://app.example"}, AllowedHeaders: []string{"Authorization"}}),
			NewCORS(CORSConfig{AllowedOrigins: []string{"*"}, AllowedHeaders: []string{"*"}}),
		} {
			r := httptest.NewRequest("GET", "/", nil)
			r.Method = method
			r.Header["Origin"] = []string{origin}
			r.Header["Access-Control-Request-Method"] = []string{reqMethod}
			r.Header["Access-Control-Request-Headers"] = []string{reqHeaders}
			w := httptest.NewRecorder()
			if p.Handle(w, r) && w.Code != 204 && w.Code != 403 {
				t.Fatalf("answered a preflight with %d", w.Code)
			}
		}
		_ = validOrigin(origin)
	})
}
