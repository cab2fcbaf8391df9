package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
)

// Error types vLLM puts in ErrorInfo.Type.
const (
	TypeBadRequest          = "BadRequestError"
	TypeNotFound            = "NotFoundError"
	TypeUnprocessableEntity = "UnprocessableEntityError"
	TypeInternalServer      = "InternalServerError"
	TypeNotImplemented      = "NotImplementedError"
	// The gateway's 401, 403 and 429, named like the OpenAI SDKs' error
	// classes for those statuses, as vLLM names its types.
	TypeAuthentication   = "AuthenticationError"
	TypePermissionDenied = "PermissionDeniedError"
	TypeRateLimit        = "RateLimitError"
)

// ErrorInfo is the body of vLLM's error response (since v0.10.1).
type ErrorInfo struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    int     `json:"code"`
}

// ErrorResponse is vLLM's error body: {"error": {"message", "type", "param", "code"}}.
type ErrorResponse struct {
	Error ErrorInfo `json:"error"`
}

// LegacyErrorResponse is the flat error body of vLLM before v0.10.1, still
// used by SGLang: {"object": "error", "message", "type", "param", "code"}.
type LegacyErrorResponse struct {
	Object  string  `json:"object"`
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    int     `json:"code"`
}

// Error is an API error with its HTTP status. It is an error, so handlers can
// return it and a caller can find it with errors.As.
type Error struct {
	// Status is the HTTP status and the body's code.
	Status int
	// Type is the body's type, e.g. "BadRequestError" or an HTTP phrase.
	Type string
	// Message is the human-readable message.
	Message string
	// Param names the offending request parameter, or "" for none (null).
	Param string
}

// Error returns the message.
func (e *Error) Error() string {
	if e.Param != "" {
		return fmt.Sprintf("%d %s: %s (param %s)", e.Status, e.Type, e.Message, e.Param)
	}
	return fmt.Sprintf("%d %s: %s", e.Status, e.Type, e.Message)
}

func (e *Error) param() *string {
	if e.Param == "" {
		return nil
	}
	p := e.Param
	return &p
}

// Response returns the vLLM-shaped body.
func (e *Error) Response() ErrorResponse {
	return ErrorResponse{Error: ErrorInfo{Message: e.Message, Type: e.Type, Param: e.param(), Code: e.Status}}
}

// Legacy returns the flat SGLang-shaped body.
func (e *Error) Legacy() LegacyErrorResponse {
	return LegacyErrorResponse{Object: "error", Message: e.Message, Type: e.Type, Param: e.param(), Code: e.Status}
}

// MarshalJSON encodes the vLLM-shaped body.
func (e *Error) MarshalJSON() ([]byte, error) { return json.Marshal(e.Response()) }

// Write writes the vLLM-shaped body with status e.Status.
func (e *Error) Write(w http.ResponseWriter) {
	writeJSONStatus(w, e.Status, e.Response())
}

// WriteLegacy writes the flat SGLang-shaped body with status e.Status.
func (e *Error) WriteLegacy(w http.ResponseWriter) {
	writeJSONStatus(w, e.Status, e.Legacy())
}

func writeJSONStatus(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil { // cannot happen for the fixed shapes above
		b = []byte(`{"error":{"message":"internal error","type":"InternalServerError","param":null,"code":500}}`)
		status = http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// BadRequest is a 400 BadRequestError naming param ("" for none).
func BadRequest(param, format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Type: TypeBadRequest, Message: fmt.Sprintf(format, args...), Param: param}
}

// ValidationError is a 400 shaped like vLLM's answer to a request that fails
// pydantic validation: type "Bad Request", the message counting the errors.
// param is the dotted location (e.g. "body.max_tokens").
func ValidationError(param, kind, msg string) *Error {
	loc := "'body'"
	if param != "" {
		loc = ""
		for i, p := range splitDots(param) {
			if i > 0 {
				loc += ", "
			}
			loc += "'" + p + "'"
		}
	}
	return &Error{
		Status:  http.StatusBadRequest,
		Type:    http.StatusText(http.StatusBadRequest),
		Message: fmt.Sprintf("1 validation error:\n  {'type': '%s', 'loc': (%s), 'msg': '%s'}", kind, loc, msg),
		Param:   param,
	}
}

func splitDots(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// ModelNotFound is vLLM's 404 for an unknown model: "The model `x` does not exist.".
func ModelNotFound(model string) *Error {
	return &Error{Status: http.StatusNotFound, Type: TypeNotFound, Message: fmt.Sprintf("The model `%s` does not exist.", model), Param: "model"}
}

// RouteNotFound is the 404 vLLM (FastAPI) gives for an unknown path.
func RouteNotFound() *Error {
	return &Error{Status: http.StatusNotFound, Type: http.StatusText(http.StatusNotFound), Message: http.StatusText(http.StatusNotFound)}
}

// MethodNotAllowed is the 405 vLLM (FastAPI) gives for a known path and a wrong method.
func MethodNotAllowed() *Error {
	return &Error{Status: http.StatusMethodNotAllowed, Type: http.StatusText(http.StatusMethodNotAllowed), Message: http.StatusText(http.StatusMethodNotAllowed)}
}

// Unprocessable is a 422 UnprocessableEntityError.
func Unprocessable(param, format string, args ...any) *Error {
	return &Error{Status: http.StatusUnprocessableEntity, Type: TypeUnprocessableEntity, Message: fmt.Sprintf(format, args...), Param: param}
}

// Internal is a 500 InternalServerError.
func Internal(format string, args ...any) *Error {
	return &Error{Status: http.StatusInternalServerError, Type: TypeInternalServer, Message: fmt.Sprintf(format, args...)}
}

// NotImplemented is a 501 NotImplementedError.
func NotImplemented(format string, args ...any) *Error {
	return &Error{Status: http.StatusNotImplemented, Type: TypeNotImplemented, Message: fmt.Sprintf(format, args...)}
}

// Unavailable is a 503 with the HTTP phrase as type, as vLLM answers when it
// cannot take the request (e.g. the engine is dead or sleeping).
func Unavailable(format string, args ...any) *Error {
	return &Error{Status: http.StatusServiceUnavailable, Type: http.StatusText(http.StatusServiceUnavailable), Message: fmt.Sprintf(format, args...)}
}

// StatusError returns an error with the given status, typed like vLLM types
// it: the named types for 400/404/422/500/501, else the HTTP phrase.
func StatusError(status int, message string) *Error {
	t := http.StatusText(status)
	switch status {
	case http.StatusBadRequest:
		t = TypeBadRequest
	case http.StatusNotFound:
		t = TypeNotFound
	case http.StatusUnprocessableEntity:
		t = TypeUnprocessableEntity
	case http.StatusInternalServerError:
		t = TypeInternalServer
	case http.StatusNotImplemented:
		t = TypeNotImplemented
	}
	if t == "" {
		t = "Error"
	}
	if message == "" {
		message = http.StatusText(status)
	}
	return &Error{Status: status, Type: t, Message: message}
}

// ParseError decodes an error body in either shape (vLLM's nested one or the
// flat legacy one). It reports false when body is neither.
func ParseError(body []byte) (*Error, bool) {
	var nested struct {
		Error *json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(body, &nested); err != nil {
		return nil, false
	}
	var info LegacyErrorResponse
	src := body
	if nested.Error != nil {
		src = *nested.Error
	}
	if err := json.Unmarshal(src, &info); err != nil || info.Code == 0 {
		return nil, false
	}
	e := &Error{Status: info.Code, Type: info.Type, Message: info.Message}
	if info.Param != nil {
		e.Param = *info.Param
	}
	return e, true
}

// AsError returns err as an *Error: itself if it is one (or wraps one), else
// a 500 InternalServerError with its message.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return Internal("%v", err)
}

// ValueError is the 400 vLLM gives when one of its request model validators
// rejects a body: type "Bad Request", a pydantic-style message wrapping msg,
// and param naming the parameter.
func ValueError(param, msg string) *Error {
	return &Error{
		Status:  http.StatusBadRequest,
		Type:    http.StatusText(http.StatusBadRequest),
		Message: fmt.Sprintf("1 validation error:\n  {'type': 'value_error', 'loc': ('body',), 'msg': 'Value error, %s (parameter=%s)'}", msg, param),
		Param:   param,
	}
}
