package tracing

import "net/http"

// StatusWriter records the status of the response written through it, for
// a server span. Unwrap lets http.ResponseController reach the writer's
// Flush and deadlines.
type StatusWriter struct {
	http.ResponseWriter
	// Status is the final status written (0: none yet); 1xx are passed on
	// and not recorded.
	Status int
}

// WriteHeader records code and passes it on.
func (w *StatusWriter) WriteHeader(code int) {
	if w.Status == 0 && code >= 200 {
		w.Status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write records an implicit 200.
func (w *StatusWriter) Write(p []byte) (int, error) {
	if w.Status == 0 {
		w.Status = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap returns the wrapped writer.
func (w *StatusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
