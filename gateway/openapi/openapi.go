// Package openapi holds the OpenAPI document of the public API (the contract of docs/spec.md and
// docs/api-decisions.md in machine-readable form), serves it with an offline reference page, and gives the
// gateway's tests a validator that fails them when a request or response drifts from it.
package openapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// Public paths served by Handler, none of which needs a key.
const (
	PathJSON   = "/api/v1/openapi.json"
	PathDocs   = "/docs"
	PathAssets = "/docs/assets/"
)

//go:embed openapi.yaml
var documentYAML []byte

//go:embed assets
var assets embed.FS

// Load parses and validates the embedded document. Each call returns a fresh copy, so a
// caller may change its copy (the validator drops the servers) without affecting others.
func Load() (*openapi3.T, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(documentYAML)
	if err != nil {
		return nil, fmt.Errorf("openapi: parse openapi.yaml: %w", err)
	}
	if err := doc.Validate(context.Background(), openapi3.EnableExamplesValidation()); err != nil {
		return nil, fmt.Errorf("openapi: openapi.yaml is not a valid document: %w", err)
	}
	return doc, nil
}

// Handler serves the document as JSON at PathJSON, the reference page at PathDocs and its
// assets under PathAssets. Mount it on those paths (GET and HEAD) outside authentication.
type Handler struct {
	json  []byte
	etag  string
	page  []byte
	files fs.FS
}

// NewHandler loads the document and renders the page once, so serving is a copy of bytes.
func NewHandler() (*Handler, error) {
	doc, err := Load()
	if err != nil {
		return nil, err
	}
	js, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("openapi: encode document as JSON: %w", err)
	}
	page, err := renderPage(doc)
	if err != nil {
		return nil, err
	}
	files, err := fs.Sub(assets, "assets")
	if err != nil {
		return nil, fmt.Errorf("openapi: assets: %w", err)
	}
	sum := sha256.Sum256(js)
	return &Handler{json: js, etag: `"` + hex.EncodeToString(sum[:8]) + `"`, page: page, files: files}, nil
}

// JSON returns the document as served at PathJSON.
func (h *Handler) JSON() []byte { return bytes.Clone(h.json) }

// ServeHTTP dispatches on the path so the same handler can be mounted on all three routes.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", fmt.Sprintf("method %s not allowed on %s", r.Method, r.URL.Path))
		return
	}
	switch p := r.URL.Path; {
	case p == PathJSON:
		h.serveBytes(w, r, "application/json; charset=utf-8", h.json, h.etag)
	case p == PathDocs || p == PathDocs+"/":
		w.Header().Set("Content-Security-Policy", docsCSP)
		h.serveBytes(w, r, "text/html; charset=utf-8", h.page, "")
	case strings.HasPrefix(p, PathAssets):
		h.serveAsset(w, r, strings.TrimPrefix(p, PathAssets))
	default:
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no documentation at %s", p))
	}
}

func (h *Handler) serveBytes(w http.ResponseWriter, r *http.Request, ctype string, b []byte, etag string) {
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Cache-Control", "public, max-age=300")
	if etag != "" {
		w.Header().Set("ETag", etag)
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	w.Header().Set("Content-Length", fmt.Sprint(len(b)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(b)
	}
}

func (h *Handler) serveAsset(w http.ResponseWriter, r *http.Request, name string) {
	if name == "" || strings.Contains(name, "/") || !fs.ValidPath(name) {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no asset %q", name))
		return
	}
	b, err := fs.ReadFile(h.files, name)
	if err != nil {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no asset %q", name))
		return
	}
	ctype := "text/plain; charset=utf-8"
	if path.Ext(name) == ".js" {
		ctype = "text/javascript; charset=utf-8"
	}
	h.serveBytes(w, r, ctype, b, "")
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg, "code": code})
}

// docsCSP keeps the reference page on this origin: the bundled Redoc would otherwise load
// its "powered by" logo from a CDN. Redoc needs inline styles (styled-components), eval
// (its schema compiler) and blob workers (search).
const docsCSP = "default-src 'self'; script-src 'self' 'unsafe-eval'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data:; font-src 'self' data:; worker-src 'self' blob:; connect-src 'self'; " +
	"object-src 'none'; base-uri 'none'; frame-ancestors 'none'"

// pageOperation is one row of the page's no-script index.
type pageOperation struct {
	Method, Path, Summary, Tag string
}

// The page renders the full reference with the embedded Redoc bundle; the static index
// below it keeps the page useful without JavaScript.
var pageTemplate = template.Must(template.New("docs").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}} {{.Version}}: API reference</title>
<style>body{margin:0;font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
noscript table{border-collapse:collapse;margin:1em}noscript td,noscript th{border:1px solid #ccc;padding:.3em .6em;text-align:left}
noscript code{font-family:ui-monospace,monospace}
nav.site{padding:.4em 1em;border-bottom:1px solid #ddd;font-size:.95em}</style>
</head>
<body>
<nav class="site"><a href="/explorer">Explorer: the sensors on a map</a></nav>
<redoc spec-url="{{.SpecURL}}" hide-download-button="false" path-in-middle-panel="true"></redoc>
<noscript>
<h1>{{.Title}} {{.Version}}</h1>
<p>The interactive reference needs JavaScript. The machine-readable document is at <a href="{{.SpecURL}}">{{.SpecURL}}</a>.</p>
<table><tr><th>Method</th><th>Path</th><th>Summary</th><th>Tag</th></tr>
{{range .Operations}}<tr><td>{{.Method}}</td><td><code>{{.Path}}</code></td><td>{{.Summary}}</td><td>{{.Tag}}</td></tr>
{{end}}</table>
</noscript>
<script src="{{.Script}}"></script>
</body>
</html>
`))

func renderPage(doc *openapi3.T) ([]byte, error) {
	var ops []pageOperation
	for p, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			tag := ""
			if len(op.Tags) > 0 {
				tag = op.Tags[0]
			}
			ops = append(ops, pageOperation{Method: method, Path: p, Summary: op.Summary, Tag: tag})
		}
	}
	sort.Slice(ops, func(i, j int) bool {
		if ops[i].Path != ops[j].Path {
			return ops[i].Path < ops[j].Path
		}
		return ops[i].Method < ops[j].Method
	})
	var buf bytes.Buffer
	err := pageTemplate.Execute(&buf, map[string]any{
		"Title":      doc.Info.Title,
		"Version":    doc.Info.Version,
		"SpecURL":    PathJSON,
		"Script":     PathAssets + "redoc.standalone.js",
		"Operations": ops,
	})
	if err != nil {
		return nil, fmt.Errorf("openapi: render reference page: %w", err)
	}
	return buf.Bytes(), nil
}
