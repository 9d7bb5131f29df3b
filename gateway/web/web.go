// Package web serves the explorer (GET /explorer): a page that draws every sensor on a world
// map, its history and its live values, built from the TypeScript sources beside this file
// into dist/ by `make web` (esbuild) and embedded here, so the gateway needs no Node.js at
// run time. It also serves the landing page at / that links the explorer and the API
// reference.
//
// The page asks for an API key and sends it in the x-api-key header; the page and its
// assets need none. Every answer carries a Content-Security-Policy that allows scripts,
// styles and connections from this origin only (no inline script), nosniff and a
// no-referrer policy.
package web

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"

	"github.com/sensorgate/sensorgate/gateway/etag"
)

// Paths served by Handler.
const (
	PathRoot     = "/"
	PathExplorer = "/explorer"
	PathAssets   = "/explorer/assets/"
	// PathAccount is the account dashboard's page (its API is package account's).
	PathAccount = "/account"
)

// CSP of the explorer: everything from this origin, nothing inline (no 'unsafe-inline', no
// eval), blob: images only for the CSV download link, no framing.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; " +
	"connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// dist holds the built bundle; the two pages are served as written, not copied into it.
//
//go:embed dist index.html account.html
var dist embed.FS

// pages are the HTML pages the bundle's scripts and styles belong to.
var pages = []string{"index.html", "account.html"}

// notices are the licenses of the third-party code the gateway ships (the bundle's
// libraries and map data, Redoc), served beside the bundle as NoticesFile; the repository's
// THIRD_PARTY_NOTICES links to the same file.
//
//go:embed THIRD_PARTY_NOTICES.txt
var notices []byte

// NoticesFile is the name of the notices under PathAssets.
const NoticesFile = "THIRD_PARTY_NOTICES.txt"

// file is one embedded asset, with its gzip form made once at start.
type file struct {
	body, gz []byte
	ctype    string
	etag     string
}

// Handler serves the landing page, the explorer page and its assets.
type Handler struct {
	files map[string]*file // by name under dist/ (and the pages)
	root  *file
}

// New loads the embedded bundle. It fails only if the bundle was not built (dist/ lacks
// index.html), which the package's tests catch.
func New() (*Handler, error) {
	h := &Handler{files: map[string]*file{}}
	entries, err := fs.ReadDir(dist, "dist")
	if err != nil {
		return nil, fmt.Errorf("web: read bundle: %w", err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := fs.ReadFile(dist, "dist/"+e.Name())
		if err != nil {
			return nil, fmt.Errorf("web: read %s: %w", e.Name(), err)
		}
		h.files[e.Name()] = newFile(e.Name(), b)
	}
	for _, name := range pages {
		b, err := fs.ReadFile(dist, name)
		if err != nil {
			return nil, fmt.Errorf("web: read %s: %w", name, err)
		}
		h.files[name] = newFile(name, b)
	}
	if h.files["index.html"] == nil || h.files["app.js"] == nil {
		return nil, fmt.Errorf("web: the bundle in dist/ is incomplete; rebuild it with: make web")
	}
	h.files[NoticesFile] = newFile(NoticesFile, notices)
	h.root = newFile("index.html", []byte(rootPage))
	return h, nil
}

func newFile(name string, b []byte) *file {
	ctype := mime.TypeByExtension(path.Ext(name))
	switch path.Ext(name) {
	case ".js":
		ctype = "text/javascript; charset=utf-8"
	case ".svg":
		ctype = "image/svg+xml"
	case ".sha256", ".txt":
		ctype = "text/plain; charset=utf-8"
	case "":
		ctype = "application/octet-stream"
	}
	sum := sha256.Sum256(b)
	f := &file{body: b, ctype: ctype, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	_, _ = zw.Write(b)
	_ = zw.Close()
	if buf.Len() < len(b) {
		f.gz = buf.Bytes()
	}
	return f
}

// Size is the bytes a browser downloads for the page with gzip: the page, its script, its
// style and the world map (reported in the README).
func (h *Handler) Size() (raw, gzipped int) {
	for _, name := range []string{"index.html", "app.js", "app.css", "countries-110m.json"} {
		f := h.files[name]
		if f == nil {
			continue
		}
		raw += len(f.body)
		if f.gz != nil {
			gzipped += len(f.gz)
		} else {
			gzipped += len(f.body)
		}
	}
	return raw, gzipped
}

// ServeHTTP serves GET and HEAD of PathRoot, PathExplorer and PathAssets+name.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr.Set("Content-Security-Policy", CSP)
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Referrer-Policy", "no-referrer")
	hdr.Set("X-Frame-Options", "DENY")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hdr.Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", fmt.Sprintf("method %s not allowed on %s", r.Method, r.URL.Path))
		return
	}
	switch p := r.URL.Path; {
	case p == PathRoot:
		h.serve(w, r, h.root)
	case p == PathExplorer:
		h.serve(w, r, h.files["index.html"])
	case p == PathAccount && h.files["account.html"] != nil:
		h.serve(w, r, h.files["account.html"])
	case strings.HasPrefix(p, PathAssets):
		name := strings.TrimPrefix(p, PathAssets)
		f := h.files[name]
		if name == "index.html" || name == "account.html" || strings.Contains(name, "/") || f == nil {
			writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no explorer asset %q", name))
			return
		}
		h.serve(w, r, f)
	default:
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no page at %s", p))
	}
}

func (h *Handler) serve(w http.ResponseWriter, r *http.Request, f *file) {
	hdr := w.Header()
	hdr.Set("Content-Type", f.ctype)
	// Revalidated on every use (cheap: a 304), so a new gateway's page is seen at once.
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("ETag", f.etag)
	hdr.Add("Vary", "Accept-Encoding")
	if inm := r.Header.Get("If-None-Match"); inm != "" && etag.Match(inm, f.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := f.body
	if f.gz != nil && acceptsGzip(r.Header.Get("Accept-Encoding")) {
		body = f.gz
		hdr.Set("Content-Encoding", "gzip")
	}
	hdr.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// acceptsGzip reads Accept-Encoding, honouring an explicit q=0.
func acceptsGzip(header string) bool {
	for _, part := range strings.Split(header, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(name), "gzip") && strings.TrimSpace(name) != "*" {
			continue
		}
		q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
		return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
	}
	return false
}

// writeError answers in the API's error envelope {"error","code"} (docs/api-decisions.md).
func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg, "code": code})
}

// rootPage is the landing page at /: where a person who opens the gateway's address goes next.
const rootPage = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>sensorgate</title>
<link rel="icon" href="/explorer/assets/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/explorer/assets/app.css">
</head>
<body>
<main class="landing">
<h1>sensorgate</h1>
<p>Environmental sensor data (ocean, weather, air quality) behind one API.</p>
<ul>
<li><a href="/explorer">Explorer</a>: every sensor on a map, its history and live values.</li>
<li><a href="/docs">API reference</a> (<a href="/api/v1/openapi.json">OpenAPI document</a>).</li>
<li>GIS and science tools (QGIS, GDAL, OWSLib): <a href="/docs#tag/OGC">OGC API - Features and EDR</a> at <code>/api/v1/ogc</code>, with your key.</li>
</ul>
</main>
</body>
</html>
`
