package checks

import (
	"flag"
	"io"
)

func newFlagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}
