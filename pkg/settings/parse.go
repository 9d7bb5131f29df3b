package settings

import (
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The parsers below give the messages every binary uses, so that one kind of mistake reads
// the same whichever binary reports it; a row's Set wraps them with its own range.

// Unbounded is the upper bound of a duration that has none of its own.
const Unbounded = time.Duration(math.MaxInt64)

// Duration parses a Go duration from lo to hi inclusive.
func Duration(v string, lo, hi time.Duration) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("want a Go duration such as 5s, 500ms or 1m, got %q", v)
	}
	if hi == Unbounded && d < lo {
		return 0, fmt.Errorf("want a duration of at least %s, got %s", lo, v)
	}
	if d < lo || d > hi {
		return 0, fmt.Errorf("want a duration from %s to %s, got %s", lo, hi, v)
	}
	return d, nil
}

// Int parses a decimal integer from lo to hi inclusive.
func Int(v string, lo, hi int) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("want an integer from %d to %d, got %q", lo, hi, v)
	}
	return n, nil
}

// Bool parses true or false (and the other spellings of strconv.ParseBool).
func Bool(v string) (bool, error) {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("want true or false, got %q", v)
	}
	return b, nil
}

// OneOf accepts exactly one of the choices.
func OneOf(v string, choices ...string) (string, error) {
	if slices.Contains(choices, v) {
		return v, nil
	}
	return "", fmt.Errorf("want %s, got %q", orList(choices), v)
}

// URL parses an absolute URL with one of the schemes and a host. The message does not
// quote the value: URLs of databases carry passwords.
func URL(v string, example string, schemes ...string) (*url.URL, error) {
	u, err := url.Parse(v)
	if err != nil || !slices.Contains(schemes, u.Scheme) || u.Host == "" {
		return nil, fmt.Errorf("want a %s URL such as %s", orList(schemes), example)
	}
	return u, nil
}

func orList(choices []string) string {
	switch len(choices) {
	case 0:
		return "nothing"
	case 1:
		return choices[0]
	}
	return strings.Join(choices[:len(choices)-1], ", ") + " or " + choices[len(choices)-1]
}

// Default sets *v to def when *v is zero or negative: the zero value of a component's
// option means its default, and a negative one is no more meaningful (a ticker panics on
// it).
func Default[T ~int | ~int64 | ~float64](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}
