// Package apierr is the one error shape of every sensorgate HTTP response (docs/api-decisions.md
// "Errors"): {"error": "<message naming the culprit>", "code": "<code>"}.
package apierr

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// Codes of docs/api-decisions.md.
const (
	InvalidParameter     = "invalid_parameter"
	MissingAPIKey        = "missing_api_key"
	InvalidAPIKey        = "invalid_api_key"
	Forbidden            = "forbidden"
	NotFound             = "not_found"
	SensorNotFound       = "sensor_not_found"
	NoFeed               = "no_feed"
	NoReadings           = "no_readings"
	MethodNotAllowed     = "method_not_allowed"
	PayloadTooLarge      = "payload_too_large"
	UnsupportedMediaType = "unsupported_media_type"
	RateLimited          = "rate_limited"
	UpstreamUnavailable  = "upstream_unavailable"
	UpstreamTimeout      = "upstream_timeout"
	Internal             = "internal"
	// RateLimitUnavailable: Redis is down and the gateway is configured to fail closed
	// (RATE_LIMIT_FAIL_CLOSED); docs/api-decisions.md leaves this case open.
	RateLimitUnavailable = "rate_limit_unavailable"
	// StoreUnavailable: the catalog database does not answer (down, restarting, out of
	// connections); the client retries after Retry-After.
	StoreUnavailable = "store_unavailable"
	// UpstreamBadResponse: a backing service answered with a status or media type the
	// gateway does not pass on (HTML, a redirect, an unexpected 204 or 404 body).
	UpstreamBadResponse = "upstream_bad_response"
	// NotSignedIn: an /account/api route without a valid session (docs/accounts.md).
	NotSignedIn = "not_signed_in"
	// SignInFailed: a passkey, link or OpenID Connect sign-in did not succeed; the same
	// answer whatever the reason, so that it tells nothing about which accounts exist.
	SignInFailed = "sign_in_failed"
	// Conflict: the request contradicts the current state (rotating a revoked key).
	Conflict = "conflict"
	// ProjectNotFound: no project the caller may see has this id. An unknown project and
	// another owner's private one get the same answer, so that it tells nothing of the
	// latter (alert rule targets).
	ProjectNotFound = "project_not_found"
	// InvalidToken: an OAuth access token that is unknown, expired, revoked, or issued for
	// another resource (WWW-Authenticate says where to get another).
	InvalidToken = "invalid_token"
	// InsufficientScope: the token or key lacks the scope this route or tool needs.
	InsufficientScope = "insufficient_scope"
)

// StoreRetryAfter is the Retry-After, in seconds, of a store_unavailable answer: long
// enough for a database restart or failover to finish, short enough to recover quickly.
const StoreRetryAfter = 5

var statusByCode = map[string]int{
	InvalidParameter:     http.StatusBadRequest,
	MissingAPIKey:        http.StatusUnauthorized,
	InvalidAPIKey:        http.StatusUnauthorized,
	Forbidden:            http.StatusForbidden,
	NotFound:             http.StatusNotFound,
	SensorNotFound:       http.StatusNotFound,
	NoFeed:               http.StatusNotFound,
	NoReadings:           http.StatusNotFound,
	MethodNotAllowed:     http.StatusMethodNotAllowed,
	PayloadTooLarge:      http.StatusRequestEntityTooLarge,
	UnsupportedMediaType: http.StatusUnsupportedMediaType,
	RateLimited:          http.StatusTooManyRequests,
	UpstreamUnavailable:  http.StatusBadGateway,
	UpstreamTimeout:      http.StatusGatewayTimeout,
	Internal:             http.StatusInternalServerError,
	RateLimitUnavailable: http.StatusServiceUnavailable,
	StoreUnavailable:     http.StatusServiceUnavailable,
	UpstreamBadResponse:  http.StatusBadGateway,
	NotSignedIn:          http.StatusUnauthorized,
	SignInFailed:         http.StatusUnauthorized,
	Conflict:             http.StatusConflict,
	ProjectNotFound:      http.StatusNotFound,
	InvalidToken:         http.StatusUnauthorized,
	InsufficientScope:    http.StatusForbidden,
}

// Known reports whether code is one of the codes above.
func Known(code string) bool {
	_, ok := statusByCode[code]
	return ok
}

// RetryAfter is the Retry-After value (seconds) an answer with this code carries, or ""
// when the code sets none itself (rate limiting sets its own from the budget).
func (e *Error) RetryAfter() string {
	if e.Code == StoreUnavailable {
		return strconv.Itoa(StoreRetryAfter)
	}
	return ""
}

// Error is an error meant for the client: Message is safe to show, Code is stable.
type Error struct {
	Message string `json:"error"`
	Code    string `json:"code"`
	// Param is the parameter Invalid named, and Reason what it said of it: another face of
	// the same question (an MCP tool over a REST query) names the culprit in its own words.
	Param  string `json:"-"`
	Reason string `json:"-"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Status is the HTTP status of the error's code (500 for an unknown code).
func (e *Error) Status() int {
	if s, ok := statusByCode[e.Code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// New returns an Error with a formatted message.
func New(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Invalid names a bad query parameter and the form it should take.
func Invalid(param, format string, args ...any) *Error {
	reason := fmt.Sprintf(format, args...)
	return &Error{Code: InvalidParameter, Message: fmt.Sprintf("invalid parameter %q: ", param) + reason, Param: param, Reason: reason}
}

// Renamed returns e naming its parameter by another face's name for it (name maps a
// parameter to that name; "" keeps it), with prefix before the message. An error without
// a parameter keeps its message after the prefix.
func (e *Error) Renamed(prefix string, name func(param string) string) *Error {
	out := *e
	if e.Param == "" {
		out.Message = prefix + e.Message
		return &out
	}
	if n := name(e.Param); n != "" {
		out.Param = n
	}
	out.Message = fmt.Sprintf("%sinvalid argument %q: %s", prefix, out.Param, e.Reason)
	return &out
}

// From returns the client-facing form of err: the *Error inside it, or a generic internal
// error whose message reveals nothing.
func From(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: Internal, Message: "internal error"}
}

// Write renders err as JSON with its status. Internal details never reach the client.
func Write(w http.ResponseWriter, err error) {
	e := From(err)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if ra := e.RetryAfter(); ra != "" {
		w.Header().Set("Retry-After", ra)
	}
	body, _ := json.Marshal(e) // two strings: it cannot fail
	body = append(body, '\n')
	// A declared length lets a client read the whole answer even while the server still
	// has work to do on the connection (gateway/api's lingering close of a refused body).
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(e.Status())
	_, _ = w.Write(body)
}

// Clip shortens a client-supplied value to n runes before it goes into a message, so that
// a huge parameter is not echoed back whole: the one rule of every face.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	r := []rune(strings.ToValidUTF8(s, ""))
	if len(r) <= n {
		return string(r)
	}
	return string(r[:n]) + "..."
}
