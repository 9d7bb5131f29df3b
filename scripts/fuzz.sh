#!/usr/bin/env bash
# fuzz.sh runs every native Go fuzz target of the repository (func FuzzXxx in a _test.go
# file) for FUZZTIME each (default 10s): `make test` runs it with a few seconds per target,
# `make fuzz` for longer. The committed corpora (testdata/fuzz/<target>) are replayed by
# every plain `go test` as well. FUZZ_SAVE=1 copies the inputs a run found interesting into
# the committed corpora (at most 40 per target).
# Usage: scripts/fuzz.sh [package dir ...]   (default: every package with a fuzz target)
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME=${FUZZTIME:-10s}
GO=${GO:-go}
dirs=("$@")
if [ ${#dirs[@]} -eq 0 ]; then
  mapfile -t dirs < <(grep -rl --include='*_test.go' '^func Fuzz' pkg gateway services | xargs -n1 dirname | sort -u)
fi
cache=$($GO env GOCACHE)/fuzz
failed=0
for d in "${dirs[@]}"; do
  pkg=$(cd "$d" && $GO list .)
  for target in $(grep -h '^func Fuzz' "$d"/*_test.go | sed -E 's/^func (Fuzz[A-Za-z0-9_]*).*/\1/' | sort -u); do
    echo "fuzz: $pkg $target ($FUZZTIME)"
    ok=0
    for attempt in 1 2; do
      if (cd "$d" && $GO test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" . >/tmp/fuzz.$$.log 2>&1); then
        ok=1; break
      fi
      # Go 1.26's fuzz coordinator can report its own -fuzztime deadline as a failure
      # (golang/go#75804, fixed in Go 1.27): "context deadline exceeded" and no failing
      # input written. That alone is retried once; anything else fails at once.
      if [ "$attempt" = 1 ] && grep -q 'context deadline exceeded' /tmp/fuzz.$$.log &&
        ! grep -q 'Failing input written\|panic:\|_test.go:[0-9]' /tmp/fuzz.$$.log; then
        echo "fuzz: $target: the coordinator's deadline race (golang/go#75804), no failing input; again"
        continue
      fi
      break
    done
    if [ "$ok" = 0 ]; then
      cat /tmp/fuzz.$$.log; failed=1
    fi
    if [ "${FUZZ_SAVE:-}" = 1 ] && [ -d "$cache/$pkg/$target" ]; then
      mkdir -p "$d/testdata/fuzz/$target"
      ls "$cache/$pkg/$target" | head -40 | while read -r f; do cp -n "$cache/$pkg/$target/$f" "$d/testdata/fuzz/$target/"; done
    fi
  done
done
rm -f /tmp/fuzz.$$.log
exit $failed
