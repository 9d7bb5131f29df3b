package api

import (
	"io"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/sensorgate/sensorgate/pkg/apierr"
)

// Request body limits. Routes that take a body set theirs in routes.go; every other route
// gets DefaultMaxBody (a GET has no use for a body, but a client may send a small one).
const (
	DefaultMaxBody = 64 << 10
	// MaxMCPBody is the largest JSON-RPC message the MCP endpoints take (1 MiB, as the MCP
	// handlers' own check).
	MaxMCPBody = 1 << 20
)

// bodyLimits maps a route template to its body limit. It is filled while the routes are
// added and only read afterwards.
type bodyLimits map[string]int64

func (l bodyLimits) set(g *gin.RouterGroup, path string, n int64) {
	l[g.BasePath()+path] = n
}

// middleware refuses a request whose announced body is over its route's limit with 413
// payload_too_large, before anything reads the body, and caps a body of unknown length
// (chunked) at the limit as it is read. Nothing is allocated from the client's
// Content-Length: net/http reads a body only as a handler asks for it, so 400 clients each
// announcing 4 MiB cost their connections' small buffers, not 1.6 GB.
func (l bodyLimits) middleware() gin.HandlerFunc {
	return func(c *gin.Context) {
		n, ok := l[c.FullPath()]
		if !ok {
			n = DefaultMaxBody
		}
		if c.Request.ContentLength > n {
			refuseAndLinger(c, apierr.New(apierr.PayloadTooLarge, "request body of %d bytes is over this route's limit of %d bytes", c.Request.ContentLength, n))
			return
		}
		if c.Request.ContentLength < 0 && c.Request.Body != nil && c.Request.Body != http.NoBody {
			c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, n)
		}
		c.Next()
	}
}

// Lingering after a refused body: what is read and thrown away at most, and for how long.
const (
	lingerBytes = 8 << 20
	lingerTime  = 5 * time.Second
)

// refuseAndLinger answers e at once, without reading the body, then reads and discards
// what the client still sends, at most lingerBytes for at most lingerTime, as nginx's
// lingering close does. A client that writes its whole body before it reads (Python's
// urllib, Go's client without Expect: 100-continue) would otherwise meet a connection
// that net/http closed with its body unread, and see "connection reset" instead of the
// answer. io.Discard reads into a pooled buffer: nothing is allocated per request.
func refuseAndLinger(c *gin.Context, e *apierr.Error) {
	rc := http.NewResponseController(c.Writer)
	_ = rc.EnableFullDuplex() // the body may be read after the answer went out
	c.Abort()
	// The connection ends with this answer: what is left of the body is not read.
	c.Header("Connection", "close")
	apierr.Write(c.Writer, e)
	if rc.Flush() != nil {
		return
	}
	_ = rc.SetReadDeadline(time.Now().Add(lingerTime))
	_, _ = io.Copy(io.Discard, io.LimitReader(c.Request.Body, lingerBytes))
}
