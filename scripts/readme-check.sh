#!/usr/bin/env bash
# readme-check.sh: the README stays true to the code (`make lint` runs it).
#
# 1. Every direct requirement of every go.mod (the modules of go.work, and those under
#    scripts/ and examples/) is named, as its module path in backticks, in a table row of
#    the README or of docs/dependencies.md (which the README must link).
# 2. The README's layout table names, in its `pkg/`, `gateway/` and `services/` rows, only
#    paths that exist (each backticked name is a path under the row's directory;
#    `cmd/{a,b}` names two), and every directory directly under pkg/, gateway/ and
#    services/ that holds Go code.
#
# Each failure is one line naming what to fix; the exit status is 1 when there is any.
set -euo pipefail
cd "$(dirname "$0")/.."

readme=README.md
deps=docs/dependencies.md
fail=0
problem() { echo "readme-check: $*" >&2; fail=1; }

# --- 1. dependencies -------------------------------------------------------------------
tables=$readme
if grep -q "($deps)\|(\./$deps)" "$readme"; then
  tables="$readme $deps"
elif [ -f "$deps" ]; then
  problem "$readme does not link $deps: link it from the dependencies section"
fi
# Every `...` of every table row of those files, one per line.
named=$(grep -h '^|' $tables | grep -o '`[^`]*`' | tr -d '`' | sort -u)

# go.mod files: the go.work modules, and the separate modules of scripts/ and examples/.
mods=$(go work edit -json | sed -n 's/^[[:space:]]*"DiskPath": "\(.*\)".*/\1/p' | sed 's|^\./||; s|$|/go.mod|')
mods="$mods $(find scripts examples -name go.mod -not -path '*/node_modules/*' -not -path '*/testdata/*' | sort)"
# The repository's own modules require each other: not dependencies.
own=github.com/sensorgate/sensorgate
for mod in $mods; do
  [ -f "$mod" ] || { problem "$mod (a go.work module) does not exist"; continue; }
  # The direct requirements: the Require entries of `go mod edit -json` not marked
  # Indirect (its output has one field a line, each entry's fields between { and }).
  direct=$(go mod edit -json "$mod" | awk '
    /"Require": \[/ { inreq = 1; next }
    inreq && /^\t\]/ { inreq = 0 }
    inreq && /"Path":/ { split($0, f, "\""); path = f[4]; indirect = 0 }
    inreq && /"Indirect": true/ { indirect = 1 }
    inreq && /^\t\t}/ { if (path != "" && !indirect) print path; path = "" }')
  for m in $direct; do
    case "$m" in "$own"/*) continue ;; esac
    if ! grep -qxF "$m" <<<"$named"; then
      problem "$m (a direct requirement of $mod) is not named in the dependency table ($deps): add a row \`$m\` | why"
    fi
  done
done

# --- 2. layout -------------------------------------------------------------------------
# holds_go DIR: DIR or a directory under it has a .go file (test data and node_modules aside).
holds_go() { [ -n "$(find "$1" -name '*.go' -not -path '*/node_modules/*' -not -path '*/testdata/*' -print -quit)" ]; }
for top in pkg gateway services; do
  row=$(grep -m1 "^| \`$top/\` |" "$readme" || true)
  if [ -z "$row" ]; then
    problem "$readme's layout table has no row | \`$top/\` |"
    continue
  fi
  cell=${row#"| \`$top/\` |"}
  listed=""
  for tok in $(grep -o '`[^`]*`' <<<"$cell" | tr -d '`' | tr ' ' '\n'); do
    # cmd/{ocean,weather} names cmd/ocean and cmd/weather.
    if [[ $tok =~ ^(.*)\{([^}]*)\}(.*)$ ]]; then
      paths=$(tr ',' '\n' <<<"${BASH_REMATCH[2]}" | sed "s|^|${BASH_REMATCH[1]}|; s|\$|${BASH_REMATCH[3]}|")
    else
      paths=$tok
    fi
    for p in $paths; do
      p=${p%/}
      [ -e "$top/$p" ] || problem "$readme's layout table names $top/$p, which does not exist"
      listed+="${p%%/*}"$'\n'
    done
  done
  for d in "$top"/*/; do
    d=${d%/}
    name=${d#"$top"/}
    holds_go "$d" || continue
    grep -qxF -- "$name" <<<"$listed" ||
      problem "$readme's layout table does not name $d (a package directory): add \`$name\` to the \`$top/\` row"
  done
done

lines=$(wc -l <"$readme")
[ "$lines" -le 250 ] || problem "$readme has $lines lines; keep it to 250 (move detail to docs/)"

if [ "$fail" -ne 0 ]; then
  echo "readme-check: README.md is not true to the code (see above)" >&2
  exit 1
fi
echo "readme-check: README.md names every direct requirement and package directory"
