package api

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/klauspost/compress/gzhttp"
	"github.com/klauspost/compress/gzip"
)

// Compression of answers (docs/gateway.md, "Compression").
const (
	// MinGzipSize: smaller answers are sent as they are; gzip's header and the CPU would
	// cost more than the bytes saved.
	MinGzipSize = 1024
	// gzipETagSuffix marks the validator of a gzip-encoded answer, which RFC 9110 8.8.3
	// wants distinct from the identity answer's.
	gzipETagSuffix = "-gzip"
)

// compress wraps next with gzip for answers of MinGzipSize bytes or more whose client
// accepts it (klauspost/compress's gzhttp: Vary: Accept-Encoding on every answer, pooled
// writers and compressors, Content-Length dropped, Accept-Ranges removed). Never
// compressed: event streams (a request that accepts text/event-stream is passed by
// untouched, so that its headers and every event are flushed at once), and what gzhttp's
// default filter leaves out (images, archives: already compressed), and Parquet files,
// whose pages are compressed already (zstd).
//
// Validators stay right: a compressed answer's ETag gets the suffix -gzip; a client that
// sends that tag back in If-None-Match has it stripped before the handlers compare (they
// know only the identity tag), and a 304 to it carries the suffixed tag again.
func compress(next http.Handler) http.Handler {
	wrap, err := gzhttp.NewWrapper(
		gzhttp.MinSize(MinGzipSize),
		gzhttp.EnableZstd(false),
		// Level 1, as nginx's default: on a 500-row readings page it costs a third of the
		// default level's CPU for 2% more bytes (docs/gateway.md, "Compression").
		gzhttp.CompressionLevel(gzip.BestSpeed),
		gzhttp.SuffixETag(gzipETagSuffix),
		gzhttp.ContentTypeFilter(func(ct string) bool {
			return !strings.HasPrefix(ct, "text/event-stream") && !strings.HasPrefix(ct, "application/vnd.apache.parquet") &&
				gzhttp.DefaultContentTypeFilter(ct)
		}),
	)
	if err != nil { // only for invalid options, which these are not
		panic(fmt.Sprintf("api: gzip options: %v", err))
	}
	gz := wrap(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
			w.Header().Add("Vary", "Accept-Encoding")
			next.ServeHTTP(w, r)
			return
		}
		if inm := r.Header.Get("If-None-Match"); strings.Contains(inm, gzipETagSuffix+`"`) {
			r.Header.Set("If-None-Match", strings.ReplaceAll(inm, gzipETagSuffix+`"`, `"`))
			w = &gzipValidatorWriter{ResponseWriter: w}
		}
		gz.ServeHTTP(w, r)
	})
}

// gzipValidatorWriter answers a 304 to a request that named the -gzip tag with that tag:
// the validator the client holds for the compressed answer.
type gzipValidatorWriter struct {
	http.ResponseWriter
}

func (w *gzipValidatorWriter) WriteHeader(code int) {
	if code == http.StatusNotModified {
		h := w.Header()
		if tag := h.Get("Etag"); tag != "" && !strings.Contains(tag, gzipETagSuffix) {
			if i := strings.LastIndexByte(tag, '"'); i > 0 {
				h.Set("Etag", tag[:i]+gzipETagSuffix+tag[i:])
			}
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *gzipValidatorWriter) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

func (w *gzipValidatorWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
