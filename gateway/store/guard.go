package store

import (
	"unicode/utf8"

	"github.com/sensorgate/sensorgate/pkg/apierr"
)

// checkText refuses text arguments that PostgreSQL cannot hold (a NUL byte is SQLSTATE
// 22021, invalid UTF-8 22021 too) and that no catalog value contains (control
// characters), before any query: a 400 invalid_parameter naming the argument instead of a
// 500. The HTTP layer checks its parameters first; this guard covers every other caller
// (the MCP tools, admin commands). pairs are name, value, name, value...
func checkText(pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		name, s := pairs[i], pairs[i+1]
		if !utf8.ValidString(s) {
			return apierr.Invalid(name, "the value is not valid UTF-8")
		}
		for _, r := range s {
			if r < 0x20 || r == 0x7f {
				return apierr.Invalid(name, "the value contains a control character (%U)", r)
			}
		}
	}
	return nil
}

// checkList is checkText over the items of a list argument.
func checkList(name string, items []string) error {
	for _, s := range items {
		if err := checkText(name, s); err != nil {
			return err
		}
	}
	return nil
}
