// Package settings is the one configuration mechanism of sensorgate's binaries (the gateway,
// the backing services and the tools under */cmd).
//
// A binary declares its configuration once, as a table of Setting rows: the environment
// variable, the flag, the documented default, the usage text, whether the value is a secret,
// and the parser that stores the value. Register turns the table into flags whose defaults
// come from the environment, so a flag given on the command line wins over its variable, and
// an empty variable counts as unset (an empty entry in a compose file or a manifest means
// "not configured"). Load runs every parser in table order and reports every mistake at
// once, each naming its variable and its flag. The same table prints --help (every setting
// with its variable, flag and default; secrets never shown) and --print-env (the names of
// every variable the binary reads), and feeds the deployment checks and the documentation
// tests, so a setting cannot be added to one of them and forgotten in another.
//
// It is written on the standard flag package rather than a framework: the binaries' existing
// names must stay exactly as deployed (GATEWAY_ADDR beside -addr, READINGS_SQLITE_PATH beside
// -sqlite-path, generated <PROVIDER>_BASE_URL rows, single-dash flags), which
// peterbourgon/ff derives from flag names, kong parses only as --flags and caarlos0/env does
// not parse flags at all; see docs/operability.md, "Configuration".
package settings

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Setting is one row of a binary's configuration table; C is the binary's configuration
// struct.
type Setting[C any] struct {
	// Env is the environment variable; empty for a flag-only setting (a tool's flag that no
	// deployment sets).
	Env string
	// Flag is the flag name without dashes; empty for a variable read only from the
	// environment.
	Flag string
	// Default is the documented default as text; "" when it is empty or depends on other
	// settings (then Usage says how).
	Default string
	Usage   string
	// Secret values are never shown by --help or in an error.
	Secret bool
	// Switch makes the flag a boolean one: given alone (-skip-load) it means true, and a
	// value must be attached (-skip-load=false), as with the flag package's Bool.
	Switch bool
	// Set parses the value (the flag, else the variable, else Default; spaces trimmed) into
	// c. It is called in table order, so a setting may depend on one declared before it.
	// Nil for a variable another package reads itself through the same getenv (External).
	Set func(c *C, v string) error
}

// External documents a variable that another package reads itself through the binary's
// getenv (the OpenTelemetry setup in pkg/obs, the GC defaults in pkg/gctune): the table lists
// it so that --help, --print-env and the deployment checks are complete, without a flag.
type External struct {
	Env, Default, Usage string
}

// Externals turns documented variables into table rows without a flag or parser.
func Externals[C any](ext ...External) []Setting[C] {
	out := make([]Setting[C], len(ext))
	for i, e := range ext {
		out[i] = Setting[C]{Env: e.Env, Default: e.Default, Usage: e.Usage}
	}
	return out
}

// Var describes one row of a table, for documentation tests and deployment checks.
type Var struct {
	Env, Flag, Default, Usage string
	Secret                    bool
	// External is true when another package reads the variable (no parser in the table).
	External bool
}

// Vars lists the rows of table in order.
func Vars[C any](table []Setting[C]) []Var {
	out := make([]Var, len(table))
	for i, s := range table {
		out[i] = Var{Env: s.Env, Flag: s.Flag, Default: s.Default, Usage: s.Usage, Secret: s.Secret, External: s.Set == nil}
	}
	return out
}

// EnvNames lists every environment variable of table, in order.
func EnvNames[C any](table []Setting[C]) []string {
	var out []string
	for _, s := range table {
		if s.Env != "" {
			out = append(out, s.Env)
		}
	}
	return out
}

// PrintEnvFlag is the flag that asks a binary to print the variables it reads and exit.
const PrintEnvFlag = "print-env"

// Loader holds one command's flags and environment until Load parses them.
type Loader[C any] struct {
	fs       *flag.FlagSet
	table    []Setting[C]
	values   []*value
	flagged  []bool // whether the row's flag is registered on fs (not omitted)
	printEnv *bool
	header   string
}

// Register declares every row of table that has a flag on fs, with the environment variable
// (or the documented default) as the flag's default, registers -print-env (when the table
// has a variable), and makes -h /
// --help print Help. Rows whose flag name is in omit are read from the environment only,
// leaving the flag name free for the command's own use (the gateway's keys create has its
// own -env). The table must not repeat a variable or a flag: that is a programming mistake
// and panics at start, like flag's own redefinition.
func Register[C any](fs *flag.FlagSet, table []Setting[C], getenv func(string) string, omit ...string) *Loader[C] {
	l := &Loader[C]{fs: fs, table: table}
	seen := map[string]bool{}
	for _, s := range table {
		for _, k := range []string{"env " + s.Env, "flag " + s.Flag} {
			if k != "env " && k != "flag " && seen[k] {
				panic("settings: " + k + " declared twice")
			}
			seen[k] = true
		}
		v := &value{s: s.Default, secret: s.Secret, public: s.Default, isBool: s.Switch}
		if s.Env != "" {
			if e := getenv(s.Env); e != "" {
				v.s = e
			}
		}
		l.values = append(l.values, v)
		flagged := s.Flag != "" && !slices.Contains(omit, s.Flag)
		l.flagged = append(l.flagged, flagged)
		if flagged {
			fs.Var(v, s.Flag, s.Usage)
		}
	}
	if len(EnvNames(table)) > 0 && fs.Lookup(PrintEnvFlag) == nil {
		l.printEnv = fs.Bool(PrintEnvFlag, false, "print the environment variables this binary reads, one a line, and exit")
	}
	fs.Usage = func() { l.Help(fs.Output()) }
	return l
}

// SetHeader sets the text --help prints before the flags (a usage line, the commands).
func (l *Loader[C]) SetHeader(s string) { l.header = s }

// Load parses every row into dst (after fs.Parse) and returns nil or an *Error listing
// every mistake, each naming the variable and its flag.
func (l *Loader[C]) Load(dst *C) error {
	var errs []error
	for i, s := range l.table {
		if s.Set == nil {
			continue
		}
		v := strings.TrimSpace(l.values[i].s)
		if err := s.Set(dst, v); err != nil {
			if s.Secret && v != "" && strings.Contains(err.Error(), v) {
				// A parser that quotes the value must not leak a secret into a log.
				err = errors.New(strings.ReplaceAll(err.Error(), v, "(hidden)"))
			}
			errs = append(errs, fmt.Errorf("%s: %w", l.name(i), err))
		}
	}
	if len(errs) > 0 {
		return &Error{Problems: errs}
	}
	return nil
}

// name is how a mistake names row i: "VAR (flag -name)", or whichever of the two exists.
func (l *Loader[C]) name(i int) string {
	s := l.table[i]
	switch {
	case s.Env != "" && l.flagged[i]:
		return s.Env + " (flag -" + s.Flag + ")"
	case s.Env != "":
		return s.Env
	default:
		return "flag -" + s.Flag
	}
}

// PrintEnvRequested reports whether -print-env was given.
func (l *Loader[C]) PrintEnvRequested() bool { return l.printEnv != nil && *l.printEnv }

// PrintEnv writes the name of every variable of the table, one a line.
func (l *Loader[C]) PrintEnv(w io.Writer) error {
	for _, n := range EnvNames(l.table) {
		if _, err := fmt.Fprintln(w, n); err != nil {
			return err
		}
	}
	return nil
}

// Help writes the command's help: the header, the command's own flags, then every setting
// with its flag, variable and documented default. Secrets show neither their value nor
// their default.
func (l *Loader[C]) Help(w io.Writer) {
	var b strings.Builder
	if l.header != "" {
		b.WriteString(strings.TrimRight(l.header, "\n"))
		b.WriteString("\n\n")
	} else {
		fmt.Fprintf(&b, "usage of %s:\n\n", l.fs.Name())
	}
	own := false
	l.fs.VisitAll(func(f *flag.Flag) {
		if l.isSetting(f.Name) {
			return
		}
		if !own {
			b.WriteString("Flags of this command:\n")
			own = true
		}
		fmt.Fprintf(&b, "  -%s", f.Name)
		if f.DefValue != "" && f.DefValue != "false" {
			fmt.Fprintf(&b, " (default %q)", f.DefValue)
		}
		fmt.Fprintf(&b, "\n      %s\n", f.Usage)
	})
	if own {
		b.WriteString("\n")
	}
	if len(EnvNames(l.table)) > 0 {
		b.WriteString("Settings (a flag overrides the environment variable beside it; an empty variable counts as unset):\n")
	} else {
		b.WriteString("Settings:\n")
	}
	var external []int
	for i, s := range l.table {
		if !l.flagged[i] {
			if s.Env != "" {
				external = append(external, i)
			}
			continue
		}
		b.WriteString("  -" + s.Flag)
		if s.Env != "" {
			b.WriteString(", " + s.Env)
		}
		b.WriteString(" " + describeDefault(s.Default, s.Secret) + "\n      " + s.Usage + "\n")
	}
	if len(external) > 0 {
		b.WriteString("\nRead from the environment only:\n")
		for _, i := range external {
			s := l.table[i]
			b.WriteString("  " + s.Env + " " + describeDefault(s.Default, s.Secret) + "\n      " + s.Usage + "\n")
		}
	}
	_, _ = io.WriteString(w, b.String())
}

func (l *Loader[C]) isSetting(flagName string) bool {
	for i, s := range l.table {
		if l.flagged[i] && s.Flag == flagName {
			return true
		}
	}
	return false
}

func describeDefault(def string, secret bool) string {
	switch {
	case secret && def != "":
		return "(secret; default not shown)"
	case secret:
		return "(secret; default empty)"
	case def == "":
		return "(default empty)"
	}
	return fmt.Sprintf("(default %q)", def)
}

// Error lists every configuration mistake found at once.
type Error struct{ Problems []error }

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("invalid configuration:")
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.Error())
	}
	return b.String()
}

// Unwrap gives errors.Is/As access to each problem.
func (e *Error) Unwrap() []error { return e.Problems }

// IsHelp reports whether err is the flag package's answer to -h / --help: the help was
// printed and the binary should exit 0.
func IsHelp(err error) bool { return errors.Is(err, flag.ErrHelp) }

// value is a string flag whose default comes from the environment. A secret one prints as
// "(hidden)" wherever the flag package shows it, unless it is the documented default.
type value struct {
	s      string
	secret bool
	public string // the documented default
	isBool bool
}

// IsBoolFlag makes a Switch row's flag boolean for the flag package.
func (v *value) IsBoolFlag() bool { return v.isBool }

func (v *value) String() string {
	if v == nil {
		return ""
	}
	if v.secret && v.s != "" && v.s != v.public {
		return "(hidden)"
	}
	return v.s
}

func (v *value) Set(s string) error { v.s = s; return nil }
