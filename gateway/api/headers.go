package api

import "net/http"

// securityHeaders sets the headers every answer of the gateway carries, whatever writes it
// (a handler, the error writer, a proxied service answer, the engine's 404): nosniff, so
// that a browser never runs an answer as anything but its declared type (an upstream's
// HTML could not become a script even if it got through).
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		next.ServeHTTP(w, r)
	})
}
