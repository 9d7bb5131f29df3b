// Command pinimages pins the sensorgate images of a kustomization (the prod overlay):
//
//	go run ./deploy/pinimages/cmd -tag 0.2.0 [-digests gateway=sha256:...,ocean=sha256:...] deploy/k8s/overlays/prod/kustomization.yaml
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/sensorgate/sensorgate/deploy/pinimages"
	"github.com/sensorgate/sensorgate/pkg/settings"
)

// options are the tool's flags, declared as a table of pkg/settings (the configuration
// mechanism of every binary); a tool's flags have no environment variable.
type options struct {
	Tag, Repo string
	Digests   map[string]string
}

func table() []settings.Setting[options] {
	return []settings.Setting[options]{
		{Flag: "tag", Usage: "version tag of every image (not latest)", Set: func(o *options, v string) error {
			o.Tag = v
			return nil
		}},
		{Flag: "repo", Default: "sensorgate", Usage: "image repository prefix", Set: func(o *options, v string) error {
			o.Repo = v
			return nil
		}},
		{Flag: "digests", Usage: "name=sha256:... pairs, comma-separated; a digest wins over the tag", Set: func(o *options, v string) error {
			o.Digests = map[string]string{}
			for _, kv := range strings.Split(v, ",") {
				if k, d, ok := strings.Cut(strings.TrimSpace(kv), "="); ok {
					o.Digests[k] = d
				}
			}
			return nil
		}},
	}
}

const usage = "usage: pinimages -tag VERSION [-digests name=sha256:...,...] KUSTOMIZATION"

func main() {
	fs := flag.NewFlagSet("pinimages", flag.ContinueOnError)
	l := settings.Register(fs, table(), func(string) string { return "" })
	l.SetHeader(usage)
	err := fs.Parse(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil || fs.NArg() != 1 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	var o options
	if err := l.Load(&o); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err := pinimages.Pin(fs.Arg(0), o.Repo, []string{"gateway", "ocean", "weather", "airquality"}, o.Tag, o.Digests); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
