package config_test

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/services/runtime/config"
)

func TestLoad(t *testing.T) {
	t.Parallel()
	slugs := []string{"noaa-ndbc"}
	cases := []struct {
		name    string
		env     map[string]string
		args    []string
		wantErr []string // every mistake is named
		check   func(c config.Config) string
	}{
		{name: "defaults", check: func(c config.Config) string {
			if c.Addr != "127.0.0.1:8081" || c.PublicPort != 8081 || c.SourceMode != "simulate" || c.SimStations != 24 ||
				c.SimDays != 7 || c.SQLitePath != "./data/ocean.db" || c.ReadingsDatabaseURL != "" || c.ShutdownTimeout != 30*time.Second ||
				c.RetentionDays != 0 {
				return "unexpected defaults"
			}
			return ""
		}},
		{name: "env and flags, flags win", env: map[string]string{"SERVICE_ADDR": "0.0.0.0:9000", "SOURCE_MODE": "files", "SOURCE_DIR": "/x",
			"NOAA_NDBC_STATIONS": "41002, tplm2", "NOAA_NDBC_POLL_INTERVAL": "5m", "SERVICE_PORT_PUBLIC": "80", "RETENTION_DAYS": "30"},
			args: []string{"-source-mode", "live", "-sim-days", "2", "-retention-days", "90"},
			check: func(c config.Config) string {
				p := c.Providers["noaa-ndbc"]
				if c.Addr != "0.0.0.0:9000" || c.PublicPort != 80 || c.SourceMode != "live" || c.SimDays != 2 ||
					len(p.Stations) != 2 || p.Stations[1] != "tplm2" || p.Interval != 5*time.Minute || c.RetentionDays != 90 {
					return "env or flags not applied"
				}
				// Each source mode has its own embedded store: live data never sits beside
				// the simulated stations of ./data/ocean.db.
				if c.SQLitePath != "./data/ocean-live.db" {
					return "live mode's default SQLite path is " + c.SQLitePath
				}
				return ""
			}},
		{name: "every mistake reported", env: map[string]string{"SERVICE_ADDR": "nonsense", "SOURCE_MODE": "psychic", "SIM_STATIONS": "0",
			"LOG_LEVEL": "loud", "READINGS_DATABASE_URL": "mysql://x", "NOAA_NDBC_POLL_INTERVAL": "1ms", "NOAA_NDBC_BASE_URL": "ftp://x",
			"RETENTION_DAYS": "-1"},
			wantErr: []string{"SERVICE_ADDR", "SOURCE_MODE", "SIM_STATIONS", "LOG_LEVEL", "READINGS_DATABASE_URL", "NOAA_NDBC_POLL_INTERVAL", "NOAA_NDBC_BASE_URL",
				"RETENTION_DAYS"}},
		{name: "retention days not a number", env: map[string]string{"RETENTION_DAYS": "30d"}, wantErr: []string{"RETENTION_DAYS"}},
		{name: "files mode needs a folder", env: map[string]string{"SOURCE_MODE": "files"}, wantErr: []string{"SOURCE_DIR"}},
		{name: "files mode store apart", env: map[string]string{"SOURCE_MODE": "files", "SOURCE_DIR": "/x"}, check: func(c config.Config) string {
			if c.SQLitePath != "./data/ocean-files.db" {
				return "files mode's default SQLite path is " + c.SQLitePath
			}
			return ""
		}},
		{name: "explicit SQLite path wins", env: map[string]string{"SOURCE_MODE": "files", "SOURCE_DIR": "/x", "READINGS_SQLITE_PATH": "/tmp/o.db"}, check: func(c config.Config) string {
			if c.SQLitePath != "/tmp/o.db" {
				return "READINGS_SQLITE_PATH not applied: " + c.SQLitePath
			}
			return ""
		}},
		{name: "unknown flag", args: []string{"-nope"}, wantErr: []string{"nope"}},
		{name: "provider flags win", env: map[string]string{"NOAA_NDBC_STATIONS": "41002", "NOAA_NDBC_POLL_INTERVAL": "nonsense", "NOAA_NDBC_API_KEY": "k1"},
			args: []string{"-noaa-ndbc-stations", "tplm2,44013", "-noaa-ndbc-poll-interval", "2m"},
			check: func(c config.Config) string {
				if p := c.Providers["noaa-ndbc"]; len(p.Stations) != 2 || p.Stations[0] != "tplm2" || p.Interval != 2*time.Minute || p.APIKey != "k1" {
					return "provider flags not applied"
				}
				return ""
			}},
		{name: "provider mistakes name the flag", env: map[string]string{"NOAA_NDBC_BASE_URL": "ftp://x"}, args: []string{"-noaa-ndbc-poll-interval", "1ms"},
			wantErr: []string{"NOAA_NDBC_BASE_URL (flag -noaa-ndbc-base-url)", "NOAA_NDBC_POLL_INTERVAL (flag -noaa-ndbc-poll-interval)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := config.Load("ocean", 8081, slugs, c.args, func(k string) string { return c.env[k] }, io.Discard)
			if len(c.wantErr) > 0 {
				if err == nil {
					t.Fatal("no error")
				}
				for _, w := range c.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error does not name %s: %v", w, err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if msg := c.check(cfg); msg != "" {
				t.Fatalf("%s: %+v", msg, cfg)
			}
		})
	}
}

func TestEnvNames(t *testing.T) {
	t.Parallel()
	names := strings.Join(config.EnvNames([]string{"noaa-ndbc", "openaq"}), " ")
	for _, want := range []string{"SERVICE_ADDR", "READINGS_DATABASE_URL", "INTERNAL_TOKEN", "NOAA_NDBC_BASE_URL", "OPENAQ_API_KEY", "OTEL_TRACES_EXPORTER", "RETENTION_DAYS"} {
		if !strings.Contains(names, want) {
			t.Errorf("EnvNames lacks %s: %s", want, names)
		}
	}
}
