package httpserver

import (
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/sensorgate/sensorgate/pkg/apierr"
)

// LocalOnly guards a server that listens on a loopback address against DNS rebinding. A
// web page whose host name its author points at 127.0.0.1 reaches such a server from the
// visitor's browser as a page of the same origin: it could call the API (with the
// development key, which the README prints) and read the answers. The server therefore
// answers only requests addressed to a loopback name (Host localhost, *.localhost,
// 127.0.0.1, [::1]) and, when the browser names the page they come from (Origin), coming
// from one; any other request is 403 forbidden. Serve applies it when its listener is on
// a loopback address; a server reachable from elsewhere is addressed by other names and
// relies on its keys and CORS instead.
func LocalOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopbackName(r.Host) {
			apierr.Write(w, apierr.New(apierr.Forbidden, "this server listens on a loopback address and answers only requests for localhost, 127.0.0.1 or [::1], not for Host %q (DNS rebinding protection)", apierr.Clip(r.Host, 100)))
			return
		}
		if o := r.Header.Get("Origin"); o != "" && o != "null" {
			if u, err := url.Parse(o); err != nil || !loopbackName(u.Host) {
				apierr.Write(w, apierr.New(apierr.Forbidden, "this server listens on a loopback address and answers only pages of localhost, not Origin %q (DNS rebinding protection)", apierr.Clip(o, 100)))
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// loopbackName reports whether hostport names this machine: localhost, a name under
// .localhost (RFC 6761), or a loopback address, with or without a port.
func loopbackName(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// onLoopback reports whether the listener's address is a loopback one.
func onLoopback(a net.Addr) bool {
	tcp, ok := a.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}
