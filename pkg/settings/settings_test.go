package settings_test

import (
	"bytes"
	"errors"
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/settings"
)

// conf is a small configuration with a row of each kind: ranged, dependent, secret,
// env-only (omitted flag), flag-only, and a variable another package reads.
type conf struct {
	Addr    string
	Mode    string
	Dir     string
	Workers int
	Timeout time.Duration
	Token   string
	Verbose bool
}

func table() []settings.Setting[conf] {
	return append([]settings.Setting[conf]{
		{Env: "T_ADDR", Flag: "addr", Default: "127.0.0.1:1", Usage: "listen address", Set: func(c *conf, v string) error {
			c.Addr = v
			return nil
		}},
		{Env: "T_MODE", Flag: "mode", Default: "fast", Usage: "fast or slow", Set: func(c *conf, v string) (err error) {
			c.Mode, err = settings.OneOf(v, "fast", "slow")
			return err
		}},
		{Env: "T_DIR", Flag: "dir", Usage: "folder, needed in slow mode", Set: func(c *conf, v string) error {
			if c.Mode == "slow" && v == "" {
				return errors.New("slow mode needs a folder")
			}
			c.Dir = v
			return nil
		}},
		{Env: "T_WORKERS", Flag: "workers", Default: "4", Usage: "workers", Set: func(c *conf, v string) (err error) {
			c.Workers, err = settings.Int(v, 1, 64)
			return err
		}},
		{Env: "T_TIMEOUT", Flag: "timeout", Default: "5s", Usage: "timeout", Set: func(c *conf, v string) (err error) {
			c.Timeout, err = settings.Duration(v, time.Second, time.Minute)
			return err
		}},
		{Env: "T_TOKEN", Flag: "token", Default: "public-default-token", Usage: "secret token", Secret: true, Set: func(c *conf, v string) error {
			if len(v) < 8 {
				return errors.New("want at least 8 characters, got " + v) // a careless parser
			}
			c.Token = v
			return nil
		}},
		{Flag: "verbose", Default: "false", Switch: true, Usage: "a tool's flag without a variable", Set: func(c *conf, v string) (err error) {
			c.Verbose, err = settings.Bool(v)
			return err
		}},
	}, settings.Externals[conf](settings.External{Env: "T_OTHER", Usage: "read by another package"})...)
}

func load(t *testing.T, env map[string]string, args []string, omit ...string) (conf, error) {
	t.Helper()
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(&bytes.Buffer{})
	l := settings.Register(fs, table(), func(k string) string { return env[k] }, omit...)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %v: %v", args, err)
	}
	var c conf
	err := l.Load(&c)
	return c, err
}

func TestDefaultsEnvAndFlags(t *testing.T) {
	t.Parallel()
	c, err := load(t, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if (c != conf{Addr: "127.0.0.1:1", Mode: "fast", Workers: 4, Timeout: 5 * time.Second, Token: "public-default-token"}) {
		t.Errorf("defaults: %+v", c)
	}
	env := map[string]string{"T_ADDR": "0.0.0.0:2", "T_MODE": "slow", "T_DIR": "/d", "T_WORKERS": " 8 ", "T_TIMEOUT": "", "T_TOKEN": "env-token-1"}
	c, err = load(t, env, []string{"-workers", "16", "--timeout=9s", "-verbose"})
	if err != nil {
		t.Fatal(err)
	}
	// Flags win over the environment; the environment wins over defaults; an empty variable
	// is unset; values are trimmed.
	if (c != conf{Addr: "0.0.0.0:2", Mode: "slow", Dir: "/d", Workers: 16, Timeout: 9 * time.Second, Token: "env-token-1", Verbose: true}) {
		t.Errorf("env and flags: %+v", c)
	}
}

func TestEveryMistakeNamesVariableAndFlag(t *testing.T) {
	t.Parallel()
	env := map[string]string{"T_MODE": "slow", "T_WORKERS": "0", "T_TIMEOUT": "2h", "T_TOKEN": "s3cr"}
	_, err := load(t, env, []string{"-verbose=maybe"})
	var se *settings.Error
	if !errors.As(err, &se) {
		t.Fatalf("want *settings.Error, got %v", err)
	}
	want := []string{
		"T_DIR (flag -dir): slow mode needs a folder",
		`T_WORKERS (flag -workers): want an integer from 1 to 64, got "0"`,
		"T_TIMEOUT (flag -timeout): want a duration from 1s to 1m0s, got 2h",
		"T_TOKEN (flag -token): want at least 8 characters, got (hidden)",
		`flag -verbose: want true or false, got "maybe"`,
	}
	if len(se.Problems) != len(want) {
		t.Errorf("%d problems, want %d:\n%v", len(se.Problems), len(want), err)
	}
	for i, w := range want {
		if i < len(se.Problems) && se.Problems[i].Error() != w {
			t.Errorf("problem %d = %q, want %q", i, se.Problems[i], w)
		}
	}
	if strings.Contains(err.Error(), "s3cr") {
		t.Errorf("the error shows the secret: %v", err)
	}
}

func TestOmittedFlagReadsEnvironmentOnly(t *testing.T) {
	t.Parallel()
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	l := settings.Register(fs, table(), func(k string) string { return map[string]string{"T_MODE": "nope"}[k] }, "mode")
	own := fs.String("mode", "", "the command's own -mode")
	if err := fs.Parse([]string{"-mode", "other"}); err != nil {
		t.Fatal(err)
	}
	var c conf
	err := l.Load(&c)
	if *own != "other" || err == nil || !strings.Contains(err.Error(), "T_MODE: want fast or slow") || strings.Contains(err.Error(), "flag -mode") {
		t.Errorf("own %q, err %v", *own, err)
	}
}

func TestHelpListsEverySettingAndHidesSecrets(t *testing.T) {
	t.Parallel()
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	var out bytes.Buffer
	fs.SetOutput(&out)
	l := settings.Register(fs, table(), func(k string) string {
		return map[string]string{"T_TOKEN": "env-secret-123", "T_ADDR": "0.0.0.0:9"}[k]
	})
	l.SetHeader("usage: t [flags]")
	fs.String("owner", "", "the command's own flag")
	if err := fs.Parse([]string{"--help"}); !settings.IsHelp(err) {
		t.Fatalf("--help: %v", err)
	}
	help := out.String()
	for _, v := range settings.Vars(table()) {
		line := v.Env
		if v.Flag != "" && v.Env != "" {
			line = "-" + v.Flag + ", " + v.Env
		} else if v.Flag != "" {
			line = "-" + v.Flag
		}
		if !strings.Contains(help, line) || !strings.Contains(help, v.Usage) {
			t.Errorf("help lacks %q or its usage", line)
		}
	}
	for _, s := range []string{"usage: t [flags]", "-owner", "-print-env", `-workers, T_WORKERS (default "4")`, "-dir, T_DIR (default empty)",
		"-token, T_TOKEN (secret; default not shown)", "Read from the environment only:\n  T_OTHER"} {
		if !strings.Contains(help, s) {
			t.Errorf("help lacks %q:\n%s", s, help)
		}
	}
	for _, s := range []string{"env-secret-123", "public-default-token"} {
		if strings.Contains(help, s) {
			t.Errorf("help shows the secret %q:\n%s", s, help)
		}
	}
}

func TestPrintEnv(t *testing.T) {
	t.Parallel()
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	l := settings.Register(fs, table(), func(string) string { return "" })
	if err := fs.Parse([]string{"-print-env"}); err != nil || !l.PrintEnvRequested() {
		t.Fatalf("-print-env: %v %v", err, l.PrintEnvRequested())
	}
	var out bytes.Buffer
	if err := l.PrintEnv(&out); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "T_ADDR\nT_MODE\nT_DIR\nT_WORKERS\nT_TIMEOUT\nT_TOKEN\nT_OTHER\n"; got != want {
		t.Errorf("print-env = %q, want %q", got, want)
	}
}

func TestDuplicateRowPanics(t *testing.T) {
	t.Parallel()
	for _, dup := range []settings.Setting[conf]{{Env: "T_ADDR", Flag: "other"}, {Env: "T_NEW", Flag: "addr"}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%+v declared twice: no panic", dup)
				}
			}()
			settings.Register(flag.NewFlagSet("t", flag.ContinueOnError), append(table(), dup), func(string) string { return "" })
		}()
	}
}

func TestParsers(t *testing.T) {
	t.Parallel()
	if _, err := settings.Duration("-1s", 0, settings.Unbounded); err == nil || err.Error() != "want a duration of at least 0s, got -1s" {
		t.Errorf("unbounded: %v", err)
	}
	if _, err := settings.URL("mysql://u:pw@h/db", "postgres://host/db", "postgres", "postgresql"); err == nil ||
		strings.Contains(err.Error(), "pw") || !strings.Contains(err.Error(), "postgres or postgresql") {
		t.Errorf("URL: %v", err)
	}
	if u, err := settings.URL("redis://r:6379/0", "redis://host:6379/0", "redis"); err != nil || u.Host != "r:6379" {
		t.Errorf("URL: %v %v", u, err)
	}
}

func TestDefault(t *testing.T) {
	for _, tc := range []struct{ in, want time.Duration }{{0, time.Second}, {-5, time.Second}, {3 * time.Millisecond, 3 * time.Millisecond}} {
		d := tc.in
		settings.Default(&d, time.Second)
		if d != tc.want {
			t.Errorf("Default(%v, 1s) = %v, want %v", tc.in, d, tc.want)
		}
	}
	n := 7
	settings.Default(&n, 256)
	if n != 7 {
		t.Errorf("Default(7, 256) = %d", n)
	}
}
