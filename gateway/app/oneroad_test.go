package app

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestOneRoadToTheServices fails when gateway code (not its tests) builds an HTTP client
// or transport of its own, or calls through net/http's defaults, or opens a second Redis
// client: every call to a service
// goes through its contract.Client, built once in newClients, so that every call has the
// service's pool, its route's deadline, the retry policy for idempotent calls only, the
// request id and a span.
func TestOneRoadToTheServices(t *testing.T) {
	t.Parallel()
	forbidden := map[string]bool{
		"http.Client": true, "http.Transport": true, "http.DefaultClient": true, "http.DefaultTransport": true,
		"http.Get": true, "http.Post": true, "http.PostForm": true, "http.Head": true,
		"retryablehttp.NewClient": true, "retryablehttp.Client": true,
	}
	// Files that may: test support, which never calls a service, and the webhook sender.
	allowed := map[string]bool{
		// Checks a test client's exchanges against the OpenAPI document.
		filepath.Join("..", "openapi", "validator.go"): true,
		// The one client of outside parties (OpenID providers, webhook receivers), never
		// of a service.
		filepath.Join("..", "outbound", "outbound.go"): true,
	}
	root := filepath.Join("..")
	fset := token.NewFileSet()
	var found, redisClients []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "node_modules" || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || allowed[path] {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			// A client or transport is made (a composite literal), or net/http's defaults are
			// used; naming the types (a field, a parameter) is fine.
			var sel *ast.SelectorExpr
			switch n := n.(type) {
			case *ast.CompositeLit:
				sel, _ = n.Type.(*ast.SelectorExpr)
				if sel == nil || (sel.Sel.Name != "Client" && sel.Sel.Name != "Transport") {
					return true
				}
			case *ast.SelectorExpr:
				if n.Sel.Name == "Client" || n.Sel.Name == "Transport" {
					return true
				}
				sel = n
			default:
				return true
			}
			pkg, ok := sel.X.(*ast.Ident)
			if !ok {
				return true
			}
			switch name := pkg.Name + "." + sel.Sel.Name; {
			case forbidden[name]:
				found = append(found, fset.Position(sel.Pos()).String()+": "+name)
			case name == "redis.NewClient" || name == "redis.NewClusterClient" || name == "redis.NewUniversalClient":
				redisClients = append(redisClients, fset.Position(sel.Pos()).String()+": "+name)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) > 0 {
		t.Errorf("gateway code reaches the network past the services' contract.Client:\n%s", strings.Join(found, "\n"))
	}
	if len(redisClients) != 1 {
		t.Errorf("gateway code builds %d Redis clients, want one (app/redis.go) that every feature shares:\n%s", len(redisClients), strings.Join(redisClients, "\n"))
	}
}
