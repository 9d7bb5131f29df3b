// Package outbound is the gateway's one HTTP client for parties outside the deployment:
// an organisation's OpenID provider and the receivers of alert webhooks. Backing services
// are never reached this way (pkg/contract's clients are the one road to them).
package outbound

import (
	"net"
	"net/http"
	"syscall"
	"time"
)

// Client returns a client for outside parties: never through an environment proxy, no
// redirects followed (a redirect could lead past a target check to an internal address;
// the party must answer itself), each call bounded by timeout. control, when set, vets
// every address before it is dialled (the webhooks' SSRF guard).
func Client(timeout time.Duration, control func(network, address string, c syscall.RawConn) error) (client *http.Client) {
	d := &net.Dialer{Timeout: min(10*time.Second, timeout), Control: control}
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			DialContext:           d.DialContext,
			Proxy:                 nil,
			MaxIdleConnsPerHost:   4,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: timeout,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
