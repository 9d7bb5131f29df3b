// Command pinimages pins the sensorgate images of a kustomization (the prod overlay):
//
//	go run ./deploy/pinimages/cmd -tag 0.2.0 [-digests gateway=sha256:...,ocean=sha256:...] deploy/k8s/overlays/prod/kustomization.yaml
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/sensorgate/sensorgate/deploy/pinimages"
)

func main() {
	tag := flag.String("tag", "", "version tag of every image (not latest)")
	repo := flag.String("repo", "sensorgate", "image repository prefix")
	digests := flag.String("digests", "", "name=sha256:... pairs, comma-separated; a digest wins over the tag")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: pinimages -tag VERSION [-digests name=sha256:...,...] KUSTOMIZATION")
		os.Exit(2)
	}
	d := map[string]string{}
	for _, kv := range strings.Split(*digests, ",") {
		if k, v, ok := strings.Cut(strings.TrimSpace(kv), "="); ok {
			d[k] = v
		}
	}
	if err := pinimages.Pin(flag.Arg(0), *repo, []string{"gateway", "ocean", "weather", "airquality"}, *tag, d); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
