// Package app is the gateway binary's wiring: the commands (serve, migrate, keys, catalog
// import), the configuration they read, and the HTTP server's life cycle. main only calls
// Run, so tests start a whole gateway in-process exactly as the binary does.
package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/sensorgate/sensorgate/gateway/config"
	"github.com/sensorgate/sensorgate/gateway/store"
	"github.com/sensorgate/sensorgate/pkg/obs"
)

const usage = `usage: gateway [command] [flags]

commands:
  serve                     run the HTTP gateway (default)
  migrate                   bring the catalog schema up to date and exit
  keys create --owner NAME [--env development|production] [--plan NAME] [--name LABEL]
                            create an API key and print it (once)
  keys list                 list keys: id, prefix, owner, env, plan, created, revoked
  keys revoke ID|PREFIX     revoke a key (every replica refuses it within KEY_CACHE_TTL)
  accounts create-admin --name NAME [--email ADDR]
                            create an admin account and print its one-time enrolment link
  accounts invite --name NAME [--email ADDR] [--role user|admin]
                            create an account and print its enrolment (invitation) link
  accounts signin-link --email ADDR
                            print a one-time sign-in link of an account (development)
  accounts list             list accounts: id, name, email, role, disabled
  catalog import FILE       load a JSON catalog file into the catalog
  version                   print the module version and commit the binary was built from

Every command takes the configuration flags (run "gateway serve -h" to list them, with
their environment variables and defaults); each flag overrides the environment variable
beside it. "gateway -print-env" prints the name of every variable the gateway reads.
`

// Run runs the gateway command named by args (args[0] is the program name). It returns when
// the command is done or, for serve, when ctx ends and the server has drained.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	rest := args
	if len(rest) > 0 {
		rest = rest[1:]
	}
	cmd := "serve"
	if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		cmd, rest = rest[0], rest[1:]
	}
	switch cmd {
	case "serve":
		return serve(ctx, rest, getenv, stdout)
	case "migrate":
		return migrate(ctx, rest, getenv, stdout)
	case "keys":
		if len(rest) == 0 {
			return fmt.Errorf("keys: want a subcommand: create, list or revoke\n\n%s", usage)
		}
		switch rest[0] {
		case "create":
			return keysCreate(ctx, rest[1:], getenv, stdout)
		case "list":
			return keysList(ctx, rest[1:], getenv, stdout)
		case "revoke":
			return keysRevoke(ctx, rest[1:], getenv, stdout)
		}
		return fmt.Errorf("keys: unknown subcommand %q; want create, list or revoke", rest[0])
	case "accounts":
		return accountsCmd(ctx, rest, getenv, stdout)
	case "catalog":
		if len(rest) == 0 || rest[0] != "import" {
			return fmt.Errorf("catalog: want the subcommand import FILE\n\n%s", usage)
		}
		return catalogImport(ctx, rest[1:], getenv, stdout)
	case "version":
		_, err := fmt.Fprintln(stdout, "gateway", obs.BuildInfo())
		return err
	case "help":
		_, _ = io.WriteString(stdout, usage)
		return nil
	}
	return fmt.Errorf("unknown command %q\n\n%s", cmd, usage)
}

// command is what every command starts from: its flags (the configuration's plus its
// own) parsed, the configuration validated.
type command struct {
	fs     *flag.FlagSet
	loader *config.Loader
	cfg    config.Config
}

func newCommand(name string, getenv func(string) string, stdout io.Writer, omit ...string) *command {
	fs := flag.NewFlagSet("gateway "+name, flag.ContinueOnError)
	fs.SetOutput(stdout)
	l := config.Register(fs, getenv, omit...)
	_, commands, _ := strings.Cut(usage, "\n\n") // the usage without its first line
	l.SetHeader("usage: gateway " + name + " [flags]\n\n" + commands)
	return &command{fs: fs, loader: l}
}

// parse parses the flags and loads the configuration; nargs is the exact number of
// positional arguments the command takes.
func (c *command) parse(args []string, nargs int, argNames string) error {
	if err := c.fs.Parse(args); err != nil {
		return err
	}
	if c.loader.PrintEnvRequested() {
		if err := c.loader.PrintEnv(c.fs.Output()); err != nil {
			return err
		}
		// Like -h: the binary printed what was asked and exits 0 (main checks ErrHelp).
		return fmt.Errorf("%s -print-env: %w", c.fs.Name(), flag.ErrHelp)
	}
	if c.fs.NArg() != nargs {
		if nargs == 0 {
			return fmt.Errorf("%s: unexpected argument %q (flags go before arguments? see -h)", c.fs.Name(), c.fs.Arg(0))
		}
		return fmt.Errorf("%s: want %s, got %d arguments", c.fs.Name(), argNames, c.fs.NArg())
	}
	cfg, err := c.loader.Load()
	if err != nil {
		return err
	}
	c.cfg = cfg
	return nil
}

// newLogger builds the process logger from the configuration: the one logger of pkg/obs,
// which redacts keys, tokens and URL passwords.
func newLogger(cfg config.Config, w io.Writer) *slog.Logger {
	l, err := obs.NewLogger(w, obs.LogConfig{Format: cfg.LogFormat, Level: cfg.LogLevel.String(), Env: cfg.Env})
	if err != nil { // the configuration validated both already
		return slog.New(obs.NewContextHandler(slog.NewTextHandler(w, nil)))
	}
	return l
}

// adminLogger keeps admin commands' output clean: only warnings and errors reach it.
func adminLogger(cfg config.Config, w io.Writer) *slog.Logger {
	cfg.LogLevel = max(cfg.LogLevel, slog.LevelWarn)
	return newLogger(cfg, w)
}

func storeConfig(cfg config.Config, log *slog.Logger) store.Config {
	return store.Config{DatabaseURL: cfg.DatabaseURL, SQLitePath: cfg.SQLitePath, Logger: log}
}

func openStore(ctx context.Context, cfg config.Config, log *slog.Logger) (*store.Store, error) {
	s, err := store.Open(ctx, storeConfig(cfg, log))
	if err != nil {
		return nil, fmt.Errorf("open catalog: %w", err)
	}
	return s, nil
}

func migrate(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	c := newCommand("migrate", getenv, stdout)
	if err := c.parse(args, 0, ""); err != nil {
		return err
	}
	log := newLogger(c.cfg, stdout)
	if err := store.Migrate(ctx, storeConfig(c.cfg, log)); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if err := migrateAlerts(ctx, c.cfg, log); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	_, err := fmt.Fprintln(stdout, "catalog schema is up to date")
	return err
}

// errUsage marks a mistake in the command line (as opposed to a failure while running).
var errUsage = errors.New("usage")
