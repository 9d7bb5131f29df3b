package tools_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/services/runtime/mcpserver"
	"github.com/sensorgate/sensorgate/services/runtime/store"
	"github.com/sensorgate/sensorgate/services/tools"
)

func TestRegisterConfig(t *testing.T) {
	t.Parallel()
	st, err := store.Open(context.Background(), store.Options{SQLitePath: filepath.Join(t.TempDir(), "r.db"), ServiceID: "ocean"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	cases := []struct {
		name    string
		cfg     tools.Config
		wantErr string
		names   []string
	}{
		{name: "default domain tool", cfg: tools.Config{ServiceID: "weather", Store: st},
			names: []string{"weather.latest_observation", "weather.observations", "weather.list_stations", "weather.describe_station", "weather.current_conditions"}},
		{name: "chosen domain tools", cfg: tools.Config{ServiceID: "coast", Store: st, Domain: []string{tools.ToolSeaState, tools.ToolCurrentConditions}},
			names: []string{"coast.latest_observation", "coast.observations", "coast.list_stations", "coast.describe_station", "coast.sea_state", "coast.current_conditions"}},
		{name: "no domain tool", cfg: tools.Config{ServiceID: "other", Store: st, Domain: []string{}},
			names: []string{"other.latest_observation", "other.observations", "other.list_stations", "other.describe_station"}},
		{name: "unknown domain tool", cfg: tools.Config{ServiceID: "ocean", Store: st, Domain: []string{"tides"}}, wantErr: `unknown domain tool "tides"`},
		{name: "no service id", cfg: tools.Config{Store: st}, wantErr: "ServiceID is empty"},
		{name: "no store", cfg: tools.Config{ServiceID: "ocean"}, wantErr: "Store is nil"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
			err := tools.Register(srv, c.cfg)
			if c.wantErr != "" {
				if err == nil || !errors.Is(err, tools.ErrConfig) || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("Register = %v, want ErrConfig containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := tools.Names(c.cfg); strings.Join(got, ",") != strings.Join(c.names, ",") {
				t.Errorf("Names = %v, want %v", got, c.names)
			}
			ctx := t.Context()
			serverT, clientT := mcp.NewInMemoryTransports()
			ss, err := srv.Connect(ctx, serverT, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer ss.Close()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, clientT, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			var listed []string
			for tool, err := range cs.Tools(ctx, nil) {
				if err != nil {
					t.Fatal(err)
				}
				listed = append(listed, tool.Name)
			}
			if len(listed) != len(c.names) {
				t.Errorf("listed %v, want %v", listed, c.names)
			}
		})
	}
}

// slowStore is the real store with reads that stall until the caller gives up: a stuck
// database cannot be caused reliably otherwise.
type slowStore struct{ store.Store }

func (s slowStore) Station(ctx context.Context, id string) (contract.Station, error) {
	<-ctx.Done()
	return contract.Station{}, ctx.Err()
}

// TestCallTimeout: a store that does not answer ends in an isError result naming the
// timeout, not a hung request.
func TestCallTimeout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{SQLitePath: filepath.Join(t.TempDir(), "r.db"), ServiceID: "ocean"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	reg := func(s *mcp.Server, d mcpserver.Deps) error {
		return tools.Register(s, tools.Config{ServiceID: d.ServiceID, Store: slowStore{st}, CallTimeout: 100 * time.Millisecond})
	}
	srv, err := mcpserver.New(ctx, "t", "1", mcpserver.Deps{ServiceID: "ocean", Store: st}, reg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	cs := sdkSession(t, hs.URL)
	res := call(t, cs, "ocean.latest_observation", map[string]any{"station_id": "41002"}, nil, nil)
	if !res.IsError || !strings.Contains(text(res), "ocean.latest_observation timed out after 100ms") {
		t.Fatalf("isError=%v %q, want a timeout result", res.IsError, text(res))
	}
}
