package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/jsonrpc"
	"github.com/sensorgate/sensorgate/pkg/obs"
)

// The faults below (a 500, a stall, an HTML error page, a refused port) cannot be caused
// on the real service on demand, so a stand-in plays them; the real service is exercised
// by the tests in package mcp_test.

func TestForwardFaults(t *testing.T) {
	t.Parallel()
	const call = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"ocean.x"}}`
	tests := []struct {
		name    string
		handler http.HandlerFunc
		want    string // the body returned, or "" when an error is expected
		apiCode string // the *apierr.Error code expected
		rpcCode int    // the *jsonrpc.Error code expected
		rpcHas  string // what the *jsonrpc.Error message must say, if anything
		rpcNot  string // what it must never say
	}{
		{
			name: "json answer passes through, headers sent",
			handler: func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Accept") != "application/json, text/event-stream" || r.Header.Get(contract.HeaderInternalToken) != "tok" ||
					r.Header.Get(HeaderProtocolVersion) != "2025-06-18" || r.Header.Get(contract.HeaderRequestID) != "rid" || r.URL.Path != contract.PathMCP {
					http.Error(w, "bad headers", http.StatusTeapot)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":7,"result":{"ok":true}}`))
			},
			want: `{"jsonrpc":"2.0","id":7,"result":{"ok":true}}`,
		},
		{
			name: "event stream answer is unwrapped",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = w.Write([]byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n\n"))
			},
			want: `{"jsonrpc":"2.0","id":7,"result":{}}`,
		},
		{
			name: "json-rpc error with status 404 passes through",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusNotFound)
				_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"nope"}}`))
			},
			want: `{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"nope"}}`,
		},
		{
			name:    "500 is upstream_unavailable",
			handler: func(w http.ResponseWriter, r *http.Request) { http.Error(w, "<html>boom</html>", 500) },
			apiCode: apierr.UpstreamUnavailable,
		},
		{
			name:    "refused token is upstream_unavailable",
			handler: func(w http.ResponseWriter, r *http.Request) { http.Error(w, "forbidden", 403) },
			apiCode: apierr.UpstreamUnavailable,
		},
		{
			name: "plain-text 400 is the client's invalid request",
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "method invalid during initialization", 400)
			},
			rpcCode: jsonrpc.CodeInvalidRequest,
		},
		{
			name: "a 404 page is not echoed to the client",
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "<html>db=postgres://admin:hunter2@10.0.0.5</html>", 404)
			},
			rpcCode: jsonrpc.CodeInvalidRequest, rpcHas: "HTTP 404", rpcNot: "hunter2",
		},
		{
			name: "an error in the API's shape passes its message on",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				_, _ = w.Write([]byte(`{"error":"unknown tool \"ocean.x\"","code":"invalid_parameter"}`))
			},
			rpcCode: jsonrpc.CodeInvalidRequest, rpcHas: `unknown tool "ocean.x"`,
		},
		{
			name: "stall is upstream_timeout",
			handler: func(w http.ResponseWriter, r *http.Request) {
				select {
				case <-r.Context().Done():
				case <-time.After(5 * time.Second):
				}
			},
			apiCode: apierr.UpstreamTimeout,
		},
		{
			name: "200 without a response is upstream_unavailable",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"hello":"world"}`))
			},
			apiCode: apierr.UpstreamUnavailable,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(tt.handler)
			defer srv.Close()
			c, err := contract.NewClient("ocean", srv.URL+"/", contract.Options{Token: "tok", Timeouts: contract.Timeouts{Readings: 300 * time.Millisecond}})
			if err != nil {
				t.Fatal(err)
			}
			got, err := forwardTo(obs.WithRequestID(context.Background(), "rid"), c, []byte(call), "2025-06-18")
			switch {
			case tt.want != "":
				if err != nil || string(got) != tt.want {
					t.Errorf("got %s, %v; want %s", got, err, tt.want)
				}
			case tt.apiCode != "":
				var ae *apierr.Error
				if !errors.As(err, &ae) || ae.Code != tt.apiCode || !strings.Contains(ae.Message, "ocean") {
					t.Errorf("err = %v, want %s naming the service", err, tt.apiCode)
				}
			default:
				var je *jsonrpc.Error
				if !errors.As(err, &je) || je.Code != tt.rpcCode {
					t.Fatalf("err = %v, want JSON-RPC %d", err, tt.rpcCode)
				}
				if !strings.Contains(je.Message, tt.rpcHas) || (tt.rpcNot != "" && strings.Contains(je.Message, tt.rpcNot)) {
					t.Errorf("message %q: want it to say %q and never %q", je.Message, tt.rpcHas, tt.rpcNot)
				}
			}
		})
	}
}

func TestForwardRefused(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens: every dial is refused
	c, err := contract.NewClient("weather", "http://"+addr, contract.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = forwardTo(context.Background(), c, []byte(`{}`), "")
	var ae *apierr.Error
	if !errors.As(err, &ae) || ae.Code != apierr.UpstreamUnavailable || !strings.Contains(ae.Message, "weather") {
		t.Fatalf("err = %v, want upstream_unavailable naming the service", err)
	}
}

// FuzzForwardParams checks that no tools/call params make the rewrite panic, and that an
// accepted rewrite is an object naming the tool with the injected context.
func FuzzForwardParams(f *testing.F) {
	for _, s := range []string{`{"name":"a"}`, `{"name":"ocean__x","_meta":{"k":1}}`, `{"_meta":null}`, `{"_meta":[]}`, `[]`, `{"arguments":{"a":[1,{"b":null}]}}`} {
		f.Add([]byte(s))
	}
	meta := map[string]any{"sensor_id": "u", "feed_slug": "f"}
	f.Fuzz(func(t *testing.T, params []byte) {
		out, err := forwardParams(params, dotName("ocean", "ocean__x"), meta)
		if err != nil {
			return
		}
		var got struct {
			Name string         `json:"name"`
			Meta map[string]any `json:"_meta"`
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("rewrite %s is not an object: %v", out, err)
		}
		if got.Name != "ocean.x" || got.Meta["sensor_id"] != "u" || got.Meta["feed_slug"] != "f" {
			t.Fatalf("rewrite lost the name or context: %s", out)
		}
	})
}
