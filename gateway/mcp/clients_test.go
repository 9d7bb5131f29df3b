package mcp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// examplesDir holds the client configurations docs/mcp.md shows.
const examplesDir = "../../examples/mcp"

// exampleOrigin is the gateway address the configurations name (make run's).
const exampleOrigin = "http://127.0.0.1:8080"

// clientConfig is what one client configuration says: where to connect and with which
// headers.
type clientConfig struct {
	url    string
	header http.Header
}

// fill puts the test gateway and key where a configuration has the default address and
// its key placeholder.
func fill(g *gateway, s string) string {
	s = strings.Replace(s, exampleOrigin, g.URL, 1)
	for _, ph := range []string{"${input:sensorgate-key}", "${env:SENSORGATE_KEY}", "${SENSORGATE_KEY}"} {
		s = strings.ReplaceAll(s, ph, devKey)
	}
	return s
}

// testClientConfigs connects the go-sdk client with exactly what each configuration under
// examples/mcp says (URL, transport, headers; the stdio bridge as the command and
// environment its configuration gives) and calls a tool through it.
func testClientConfigs(t *testing.T, g *gateway) {
	s0 := g.Sensors[0]
	readFile := func(t *testing.T, name string) []byte {
		b, err := os.ReadFile(filepath.Join(examplesDir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	configs := map[string]func(t *testing.T) clientConfig{
		"vscode": func(t *testing.T) clientConfig {
			var f struct {
				Inputs []struct {
					ID       string `json:"id"`
					Password bool   `json:"password"`
				} `json:"inputs"`
				Servers map[string]struct {
					Type    string            `json:"type"`
					URL     string            `json:"url"`
					Headers map[string]string `json:"headers"`
				} `json:"servers"`
			}
			if err := json.Unmarshal(readFile(t, "vscode/.vscode/mcp.json"), &f); err != nil {
				t.Fatal(err)
			}
			s := f.Servers["sensorgate"]
			if s.Type != "http" || len(f.Inputs) != 1 || f.Inputs[0].ID != "sensorgate-key" || !f.Inputs[0].Password {
				t.Fatalf("vscode config: %+v", f)
			}
			return headerConfig(g, s.URL, s.Headers)
		},
		"cursor": func(t *testing.T) clientConfig {
			var f struct {
				MCPServers map[string]struct {
					URL     string            `json:"url"`
					Headers map[string]string `json:"headers"`
				} `json:"mcpServers"`
			}
			if err := json.Unmarshal(readFile(t, "cursor/.cursor/mcp.json"), &f); err != nil {
				t.Fatal(err)
			}
			s := f.MCPServers["sensorgate"]
			return headerConfig(g, s.URL, s.Headers)
		},
		"claude-code": func(t *testing.T) clientConfig {
			var args []string
			for line := range strings.Lines(string(readFile(t, "claude-code.sh"))) {
				if strings.HasPrefix(line, "claude mcp add ") {
					args = shellWords(strings.TrimPrefix(line, "claude mcp add "))
				}
			}
			var positional []string
			headers := map[string]string{}
			for i := 0; i < len(args); i++ {
				switch args[i] {
				case "--transport":
					if args[i+1] != "http" {
						t.Fatalf("transport %q", args[i+1])
					}
					i++
				case "--scope":
					i++
				case "--header":
					k, v, _ := strings.Cut(args[i+1], ":")
					headers[k] = strings.TrimSpace(v)
					i++
				default:
					positional = append(positional, args[i])
				}
			}
			if len(positional) != 2 || positional[0] != "sensorgate" {
				t.Fatalf("claude mcp add arguments %q", args)
			}
			return headerConfig(g, positional[1], headers)
		},
	}
	for name, config := range configs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg := config(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cs := connectSDK(ctx, t, cfg.url, "", cfg.header)
			defer cs.Close()
			useCatalog(ctx, t, cs, s0.ExternalID)
		})
	}

	t.Run("stdio bridge", func(t *testing.T) {
		t.Parallel()
		var f struct {
			MCPServers map[string]struct {
				Command string            `json:"command"`
				Args    []string          `json:"args"`
				Env     map[string]string `json:"env"`
			} `json:"mcpServers"`
		}
		if err := json.Unmarshal(readFile(t, "stdio-bridge/mcp-stdio.json"), &f); err != nil {
			t.Fatal(err)
		}
		s := f.MCPServers["sensorgate"]
		bin := filepath.Join(t.TempDir(), s.Command)
		build := exec.Command("go", "build", "-o", bin, ".")
		build.Dir = filepath.Join(examplesDir, "stdio-bridge")
		build.Env = append(os.Environ(), "GOWORK=off")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("build the bridge: %v\n%s", err, out)
		}
		cmd := exec.Command(bin, s.Args...)
		cmd.Env = os.Environ()
		for k, v := range s.Env {
			cmd.Env = append(cmd.Env, k+"="+fill(g, v))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		client := sdk.NewClient(&sdk.Implementation{Name: "sensorgate-test", Version: "1"}, nil)
		cs, err := client.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatalf("connect through the bridge: %v", err)
		}
		defer cs.Close()
		useCatalog(ctx, t, cs, s0.ExternalID)
	})
}

func headerConfig(g *gateway, url string, headers map[string]string) clientConfig {
	h := http.Header{}
	for k, v := range headers {
		h.Set(k, fill(g, v))
	}
	return clientConfig{url: fill(g, url), header: h}
}

// useCatalog lists the catalog tools and reads two readings of a sensor.
func useCatalog(ctx context.Context, t *testing.T, cs *sdk.ClientSession, externalID string) {
	t.Helper()
	listHas(ctx, t, cs, "get_readings")
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "get_readings", Arguments: map[string]any{"sensor_id": externalID, "limit": 2}})
	if err != nil || res.IsError {
		t.Fatalf("get_readings: %v %+v", err, res)
	}
}

// shellWords splits a command line the way sh does for plain words and double quotes.
func shellWords(s string) []string {
	var out []string
	var cur strings.Builder
	inQuote, have := false, false
	for _, r := range strings.TrimSpace(s) {
		switch {
		case r == '"':
			inQuote, have = !inQuote, true
		case (r == ' ' || r == '\t') && !inQuote:
			if have {
				out = append(out, cur.String())
				cur.Reset()
				have = false
			}
		default:
			cur.WriteRune(r)
			have = true
		}
	}
	if have {
		out = append(out, cur.String())
	}
	return out
}
