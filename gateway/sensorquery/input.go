package sensorquery

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/sensorgate/sensorgate/pkg/apierr"
)

// Input bounds of every /api/v1 request, checked before any handler runs.
const (
	// MaxQueryParams bounds the parameters of one query; no route takes more than about
	// twenty.
	MaxQueryParams = 64
	// MaxPathParam bounds a path segment that names something (an id, a slug).
	MaxPathParam = 256
)

// CheckRawQuery checks a raw query string strictly (docs/gateway.md "Input rules"):
//
//   - only & separates parameters; a raw ; is refused (Go's own parser drops such a pair
//     silently, which turned sensor_type=buoy;x into no filter at all);
//   - every name and value must be valid percent-encoding of valid UTF-8 without control
//     characters (a NUL byte reaching PostgreSQL is an error 22021, not a 400);
//   - every parameter is given at most once: lists are comma-separated, and a second value
//     would otherwise be ignored without a word.
//
// Every error is an *apierr.Error naming the parameter. Empty pieces (a&&b) are skipped.
// It is what checkInput runs on every /api/v1 request, without building the values: no
// map and, for a query without percent-escapes, no allocation at all. Names already seen are kept in a fixed array
// (MaxQueryParams bounds them) and compared in turn.
func CheckRawQuery(raw string) error {
	var seen [MaxQueryParams]string
	n := 0
	return scanRawQuery(raw, func(key, _ string) bool {
		for _, k := range seen[:n] {
			if k == key {
				return false
			}
		}
		seen[n] = key
		n++
		return true
	})
}

// scanRawQuery checks raw piece by piece and gives each decoded name and value to add,
// which returns false for a repeated name.
func scanRawQuery(raw string, add func(key, val string) bool) error {
	if raw == "" {
		return nil
	}
	n := 0
	for piece := range strings.SplitSeq(raw, "&") {
		if piece == "" {
			continue
		}
		if n++; n > MaxQueryParams {
			return apierr.Invalid("query", "more than %d parameters", MaxQueryParams)
		}
		rawKey, rawVal, _ := strings.Cut(piece, "=")
		key, kerr := url.QueryUnescape(rawKey)
		name := key
		if kerr != nil {
			name = rawKey
		}
		if err := CheckText("parameter name", name); err != nil {
			return err
		}
		if kerr != nil {
			return apierr.Invalid(Clip(name), "the name is not valid percent-encoding")
		}
		if strings.Contains(rawKey, ";") {
			return apierr.Invalid(Clip(name), "a raw ';' is not allowed in a parameter name; encode it as %%3B")
		}
		if strings.Contains(rawVal, ";") {
			return apierr.Invalid(Clip(name), "a raw ';' is not allowed in a value (it is not a separator); encode it as %%3B")
		}
		val, err := url.QueryUnescape(rawVal)
		if err != nil {
			return apierr.Invalid(Clip(name), "the value is not valid percent-encoding")
		}
		if err := CheckText(name, val); err != nil {
			return err
		}
		if !add(key, val) {
			return repeated(key, 2)
		}
	}
	return nil
}

// CheckText refuses a text value that must not reach the store or an upstream: invalid
// UTF-8, or a control character (NUL included). name is the parameter the error names.
func CheckText(name, s string) error {
	if !utf8.ValidString(s) {
		return apierr.Invalid(Clip(strings.ToValidUTF8(name, "?")), "the value is not valid UTF-8")
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return apierr.Invalid(Clip(strings.ToValidUTF8(name, "?")), "the value contains a control character (%U)", r)
		}
	}
	return nil
}

// CheckValues applies CheckRawQuery's rules to already parsed values: one value per
// parameter, each valid text. Names are checked in sorted order, so the error names the
// same parameter every time.
func CheckValues(v url.Values) error {
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := CheckText("parameter name", k); err != nil {
			return err
		}
		if n := len(v[k]); n > 1 {
			return repeated(k, n)
		}
		for _, s := range v[k] {
			if err := CheckText(k, s); err != nil {
				return err
			}
		}
	}
	return nil
}

func repeated(name string, n int) error {
	times := fmt.Sprintf("%d times", n)
	if n == 2 {
		times = "more than once"
	}
	return apierr.Invalid(Clip(name), "given %s; give each parameter once (lists are comma-separated, e.g. data_types=a,b)", times)
}
