package obs

import (
	"runtime/debug"
	"sync"
)

// Build says what a binary was built from, read from the build information the Go
// toolchain embeds (runtime/debug.ReadBuildInfo): the main module's version, and the
// commit when the binary was built inside a git checkout. Nothing is set by -ldflags, so a
// plain `go build` and a release build report alike.
type Build struct {
	// Version of the main module: a tag for `go install module@version`, "(devel)" or a
	// pseudo-version for a checkout ("dev" when unknown).
	Version string `json:"version"`
	// Commit is vcs.revision ("unknown" outside a git checkout, e.g. a Docker build
	// without .git); Dirty says the tree had uncommitted changes.
	Commit     string `json:"commit"`
	CommitTime string `json:"commit_time,omitempty"`
	Dirty      bool   `json:"dirty"`
	GoVersion  string `json:"go_version"`
}

// BuildInfo returns the binary's Build, read once.
var BuildInfo = sync.OnceValue(func() Build {
	b := Build{Version: "dev", Commit: "unknown"}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	b.GoVersion = bi.GoVersion
	if v := bi.Main.Version; v != "" {
		b.Version = v
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Commit = s.Value
		case "vcs.time":
			b.CommitTime = s.Value
		case "vcs.modified":
			b.Dirty = s.Value == "true"
		}
	}
	return b
})

// String is the one-line form of `<binary> version`.
func (b Build) String() string {
	s := b.Version + " commit " + b.Commit
	if b.Dirty {
		s += " (modified)"
	}
	if b.CommitTime != "" {
		s += " " + b.CommitTime
	}
	return s + " " + b.GoVersion
}
