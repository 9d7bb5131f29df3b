// Package pinimages sets the image transformer of a kustomization (its images: list) to
// a version tag or a digest per sensorgate image, keeping the file's comments: the prod
// overlay runs pinned images only (`make k8s-pin-images`, deploy/checks TestProductionOverlay).
package pinimages

import (
	"fmt"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// Pin sets, in the kustomization at path, the image named repo/<name> of every name to tag,
// or to digests[name] (sha256:...) where given, which then drops the tag.
func Pin(path, repo string, names []string, tag string, digests map[string]string) error {
	rn, err := yaml.ReadFile(path)
	if err != nil {
		return fmt.Errorf("pinimages: %w", err)
	}
	imgs, err := rn.Pipe(yaml.LookupCreate(yaml.SequenceNode, "images"))
	if err != nil {
		return fmt.Errorf("pinimages: images: %w", err)
	}
	for _, name := range names {
		image := repo + "/" + name
		elem, err := imgs.Pipe(yaml.MatchElement("name", image))
		if err != nil {
			return fmt.Errorf("pinimages: %s: %w", image, err)
		}
		if elem == nil {
			elem = yaml.NewMapRNode(&map[string]string{"name": image})
			if err := imgs.PipeE(yaml.Append(elem.YNode())); err != nil {
				return fmt.Errorf("pinimages: add %s: %w", image, err)
			}
		}
		field, value := "newTag", tag
		if d := digests[name]; d != "" {
			if !strings.HasPrefix(d, "sha256:") {
				return fmt.Errorf("pinimages: digest of %s must be sha256:..., got %q", name, d)
			}
			field, value = "digest", d
			if err := elem.PipeE(yaml.Clear("newTag")); err != nil {
				return err
			}
		} else if value == "" || value == "latest" {
			return fmt.Errorf("pinimages: %s: want a version tag or a digest, got %q", image, value)
		} else if err := elem.PipeE(yaml.Clear("digest")); err != nil {
			return err
		}
		if err := elem.PipeE(yaml.SetField(field, yaml.NewStringRNode(value))); err != nil {
			return fmt.Errorf("pinimages: %s: %w", image, err)
		}
	}
	return yaml.WriteFile(rn, path)
}
