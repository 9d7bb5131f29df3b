package openapi

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
)

// TB is the part of testing.TB the validator reports through, so that this package does
// not import testing into the gateway binary.
type TB interface {
	Helper()
	Errorf(format string, args ...any)
}

// Validator checks exchanges against the document, so that the document cannot drift from
// the code: a status, header or field the document does not list, a route it does not
// know, or a request it forbids that the gateway accepted, is a failure.
//
// Tests opt in with one line, either around the handler under test:
//
//	srv := httptest.NewServer(openapi.Validate(t, handler))
//
// or around the client of a gateway running as a process:
//
//	client.Transport = openapi.ValidateTransport(t, client.Transport)
type Validator struct {
	doc    *openapi3.T
	router routers.Router
	ignore []string

	mu   sync.Mutex
	seen map[string]int // "GET /api/v1/sensors 200" -> count
}

// DefaultIgnored returns the operational paths outside the public API that tests may hit.
func DefaultIgnored() []string { return []string{"/metrics", "/healthz", "/readyz", "/debug/"} }

// NewValidator loads the document and builds its router. Paths that start with one of
// ignore (default DefaultIgnored()) are not checked.
func NewValidator(ignore ...string) (*Validator, error) {
	doc, err := Load()
	if err != nil {
		return nil, err
	}
	// Tests serve on random ports: match paths only, whatever the host.
	doc.Servers = nil
	router, err := legacy.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("openapi: build router: %w", err)
	}
	if len(ignore) == 0 {
		ignore = DefaultIgnored()
	}
	return &Validator{doc: doc, router: router, ignore: ignore, seen: map[string]int{}}, nil
}

// Exchange is one request and the response it got.
type Exchange struct {
	Request     *http.Request // URL, method and headers; the body is RequestBody
	RequestBody []byte
	Status      int
	Header      http.Header
	Body        []byte
}

// Check returns every way the exchange departs from the document, joined, or nil.
func (v *Validator) Check(ctx context.Context, x Exchange) error {
	if x.Header.Get("Content-Encoding") == "gzip" {
		// The gateway gzips answers of 1 KiB or more for clients that accept it; the
		// document describes the decoded body.
		zr, err := gzip.NewReader(bytes.NewReader(x.Body))
		if err != nil {
			return fmt.Errorf("a gzip answer that does not decode: %w", err)
		}
		if x.Body, err = io.ReadAll(zr); err != nil {
			return fmt.Errorf("a gzip answer that does not decode: %w", err)
		}
	}
	req := x.Request.Clone(ctx)
	req.Body = io.NopCloser(bytes.NewReader(x.RequestBody))
	req.ContentLength = int64(len(x.RequestBody))
	for _, p := range v.ignore {
		if strings.HasPrefix(req.URL.Path, p) {
			return nil
		}
	}
	route, params, err := v.router.FindRoute(req)
	if err != nil {
		return v.checkUnrouted(req, x, err)
	}
	v.mu.Lock()
	v.seen[fmt.Sprintf("%s %s %d", req.Method, route.Path, x.Status)]++
	v.mu.Unlock()

	opts := &openapi3filter.Options{
		MultiError:         true,
		AuthenticationFunc: checkSecurity,
	}
	opts.WithCustomSchemaErrorFunc(schemaMessage)
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: opts}
	var errs []error
	if reqErr := openapi3filter.ValidateRequest(ctx, in); reqErr != nil && x.Status < 400 && !answeredInProtocol(route, reqErr) {
		errs = append(errs, fmt.Errorf("the gateway answered %d to a request the document forbids: %w", x.Status, reqErr))
	}

	resp := route.Operation.Responses.Status(x.Status)
	if resp == nil {
		resp = route.Operation.Responses.Default()
	}
	if resp == nil || resp.Value == nil {
		errs = append(errs, fmt.Errorf("status %d is not documented for %s %s", x.Status, req.Method, route.Path))
		return errors.Join(errs...)
	}
	if len(resp.Value.Content) == 0 && len(x.Body) > 0 && req.Method != http.MethodHead {
		errs = append(errs, fmt.Errorf("status %d of %s %s is documented without a body, got %d bytes", x.Status, req.Method, route.Path, len(x.Body)))
	}
	if x.Status == http.StatusNotModified {
		// openapi3filter skips 304; its headers are still ours to check.
		errs = append(errs, checkHeaders(resp.Value, x.Header)...)
	}
	rin := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 x.Status,
		Header:                 x.Header,
		Body:                   io.NopCloser(bytes.NewReader(x.Body)),
		Options:                &openapi3filter.Options{MultiError: true, IncludeResponseStatus: true},
	}
	rin.Options.WithCustomSchemaErrorFunc(schemaMessage)
	if err := openapi3filter.ValidateResponse(ctx, rin); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// checkUnrouted accepts an exchange on a path or method the document does not list only
// when the gateway refused it with the documented error shape.
func (v *Validator) checkUnrouted(req *http.Request, x Exchange, routeErr error) error {
	want := http.StatusNotFound
	if errors.Is(routeErr, routers.ErrMethodNotAllowed) || strings.Contains(routeErr.Error(), routers.ErrMethodNotAllowed.Error()) {
		want = http.StatusMethodNotAllowed
	}
	if x.Status != want && x.Status != http.StatusNotFound {
		return fmt.Errorf("%s %s is not in the document (%v), yet the gateway answered %d", req.Method, req.URL.Path, routeErr, x.Status)
	}
	if req.Method == http.MethodHead {
		return nil
	}
	return v.checkError(x)
}

// checkError checks that a body is the one error shape.
func (v *Validator) checkError(x Exchange) error {
	ref := v.doc.Components.Schemas["Error"]
	if ref == nil || ref.Value == nil {
		return errors.New("the document has no Error schema")
	}
	if ct := x.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return fmt.Errorf("error response %d has Content-Type %q, want application/json", x.Status, ct)
	}
	var body any
	if err := json.Unmarshal(x.Body, &body); err != nil {
		return fmt.Errorf("error response %d is not JSON: %w", x.Status, err)
	}
	if err := ref.Value.VisitJSON(body); err != nil {
		return fmt.Errorf("error response %d does not match the Error schema: %w", x.Status, err)
	}
	return nil
}

// checkHeaders checks the required headers of a response without a body.
func checkHeaders(resp *openapi3.Response, h http.Header) []error {
	var errs []error
	for name, ref := range resp.Headers {
		if ref.Value != nil && ref.Value.Required && h.Get(name) == "" {
			errs = append(errs, fmt.Errorf("response header %q is required", name))
		}
	}
	return errs
}

// answeredInProtocol reports whether a JSON-RPC endpoint answered a malformed body in the
// protocol (HTTP 200 with a JSON-RPC error), as docs/api-decisions.md says it must.
func answeredInProtocol(route *routers.Route, err error) bool {
	if v, ok := route.Operation.Extensions["x-jsonrpc"].(bool); !ok || !v {
		return false
	}
	var re *openapi3filter.RequestError
	if !errors.As(err, &re) {
		var me openapi3.MultiError
		if errors.As(err, &me) {
			for _, e := range me {
				if !answeredInProtocol(route, e) {
					return false
				}
			}
			return len(me) > 0
		}
		return false
	}
	return re.RequestBody != nil && re.Parameter == nil
}

// checkSecurity accepts any non-empty key or Bearer token: the gateway judges them, the
// document only says where they go.
func checkSecurity(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	s := in.SecurityScheme
	if s != nil && s.Type == "apiKey" && s.In == "cookie" {
		// The account dashboard's session: __Host-sg_session, or sg_session on a plain-http
		// development gateway (docs/accounts.md).
		req := in.RequestValidationInput.Request
		for _, name := range []string{s.Name, strings.TrimPrefix(s.Name, "__Host-")} {
			if _, err := req.Cookie(name); err == nil {
				return nil
			}
		}
		return fmt.Errorf("cookie %s is missing", s.Name)
	}
	if s != nil && s.Type == "oauth2" {
		// An access token of the gateway's own authorization server (docs/mcp.md).
		if !strings.HasPrefix(in.RequestValidationInput.Request.Header.Get("Authorization"), "Bearer ") {
			return errors.New("header Authorization: Bearer is missing")
		}
		return nil
	}
	if s == nil || s.Type != "apiKey" || s.In != "header" {
		return fmt.Errorf("unsupported security scheme")
	}
	if in.RequestValidationInput.Request.Header.Get(s.Name) == "" {
		return fmt.Errorf("header %s is missing", s.Name)
	}
	return nil
}

// schemaMessage keeps failures short: where, and why, without dumping the schema.
func schemaMessage(e *openapi3.SchemaError) string {
	msg := e.Reason
	if msg == "" {
		msg = fmt.Sprintf("does not match %q", e.SchemaField)
	}
	if e.Origin != nil {
		msg += " (" + e.Origin.Error() + ")"
	}
	return fmt.Sprintf("at %q: %s", "/"+strings.Join(e.JSONPointer(), "/"), msg)
}

// Seen lists the operations and statuses checked so far, "METHOD /path STATUS", sorted.
func (v *Validator) Seen() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make([]string, 0, len(v.seen))
	for k := range v.seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Unexercised lists the documented operations no checked exchange reached.
func (v *Validator) Unexercised() []string {
	v.mu.Lock()
	hit := map[string]bool{}
	for k := range v.seen {
		i := strings.LastIndexByte(k, ' ')
		hit[k[:i]] = true
	}
	v.mu.Unlock()
	var out []string
	for p, item := range v.doc.Paths.Map() {
		for m := range item.Operations() {
			if !hit[m+" "+p] {
				out = append(out, m+" "+p)
			}
		}
	}
	sort.Strings(out)
	return out
}

// Wrap returns next with every exchange checked; failures go to t.Errorf.
func (v *Validator) Wrap(t TB, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var reqBody []byte
		if r.Body != nil {
			b, err := io.ReadAll(r.Body)
			if err != nil {
				t.Errorf("openapi: read request body of %s %s: %v", r.Method, r.URL, err)
			}
			reqBody = b
			r.Body = io.NopCloser(bytes.NewReader(b))
		}
		orig := r.Clone(r.Context())
		rec := &teeWriter{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		if rec.header == nil {
			rec.snapshot(http.StatusOK)
		}
		err := v.Check(context.WithoutCancel(r.Context()), Exchange{
			Request: orig, RequestBody: reqBody, Status: rec.status, Header: rec.header, Body: rec.body.Bytes(),
		})
		if err != nil {
			t.Helper()
			t.Errorf("openapi: %s %s -> %d departs from the document:\n%v", r.Method, r.URL.RequestURI(), rec.status, err)
		}
	})
}

// teeWriter passes the response through and keeps a copy of it.
type teeWriter struct {
	http.ResponseWriter
	status int
	header http.Header
	body   bytes.Buffer
}

func (w *teeWriter) snapshot(status int) {
	w.status, w.header = status, w.ResponseWriter.Header().Clone()
}

func (w *teeWriter) WriteHeader(code int) {
	if w.header == nil && code >= 200 {
		w.snapshot(code)
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *teeWriter) Write(b []byte) (int, error) {
	if w.header == nil {
		w.snapshot(http.StatusOK)
	}
	w.body.Write(b)
	return w.ResponseWriter.Write(b)
}

func (w *teeWriter) Flush() {
	if w.header == nil {
		w.snapshot(http.StatusOK)
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *teeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Validate wraps next in a new Validator's checks; a document that does not load is a test
// failure. It is the one line a test adds to opt in.
func Validate(t TB, next http.Handler) http.Handler {
	t.Helper()
	v, err := NewValidator()
	if err != nil {
		t.Errorf("openapi: %v", err)
		return next
	}
	return v.Wrap(t, next)
}

// Transport returns a RoundTripper that checks every exchange through base (nil:
// http.DefaultTransport) against the document; failures go to t.Errorf.
func (v *Validator) Transport(t TB, base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &checkingTransport{v: v, t: t, base: base}
}

// ValidateTransport is Validate for a client of a gateway running as its own process.
func ValidateTransport(t TB, base http.RoundTripper) http.RoundTripper {
	t.Helper()
	v, err := NewValidator()
	if err != nil {
		t.Errorf("openapi: %v", err)
		if base == nil {
			return http.DefaultTransport
		}
		return base
	}
	return v.Transport(t, base)
}

type checkingTransport struct {
	v    *Validator
	t    TB
	base http.RoundTripper
}

func (c *checkingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var reqBody []byte
	out := req
	if req.Body != nil && req.Body != http.NoBody {
		b, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("openapi: read request body: %w", err)
		}
		reqBody = b
		out = req.Clone(req.Context())
		out.Body = io.NopCloser(bytes.NewReader(b))
		out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	}
	resp, err := c.base.RoundTrip(out)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return resp, nil // the caller sees the same short body through its own read
	}
	if err := c.v.Check(context.WithoutCancel(req.Context()), Exchange{
		Request: req, RequestBody: reqBody, Status: resp.StatusCode, Header: resp.Header, Body: body,
	}); err != nil {
		c.t.Errorf("openapi: %s %s -> %d departs from the document:\n%v", req.Method, req.URL.RequestURI(), resp.StatusCode, err)
	}
	return resp, nil
}

// The answer formats of docs/api-decisions.md "Wave 2" that kin-openapi does not decode by
// itself: GeoJSON is JSON, and NDJSON is checked as the array of its lines; the OAuth
// server's pages (consent, errors) are HTML, checked as a string.
func init() {
	openapi3filter.RegisterBodyDecoder("text/html", func(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
		b, err := io.ReadAll(body)
		return string(b), err
	})
	openapi3filter.RegisterBodyDecoder("application/geo+json", openapi3filter.JSONBodyDecoder)
	openapi3filter.RegisterBodyDecoder("application/x-ndjson", func(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
		var out []any
		dec := json.NewDecoder(body)
		dec.UseNumber()
		for {
			var v any
			if err := dec.Decode(&v); err == io.EOF {
				return out, nil
			} else if err != nil {
				return nil, fmt.Errorf("ndjson line %d: %w", len(out)+1, err)
			}
			out = append(out, v)
		}
	})
}
