#!/usr/bin/env bash
# cyclonus 0.5.6 (Apache-2.0), the NetworkPolicy analyzer the network-policy test reads the release's
# policies with (its `analyze --mode probe`: the truth table of every pod to every port). Built once,
# on first use, with `go install` at low priority into the cache folder given as $1.
set -euo pipefail
CYCLONUS_VERSION=0.5.6
dir=$1
say() { printf '\033[36m[cyclonus]\033[0m %s\n' "$*"; }
die() { printf '\033[31m[cyclonus] %s\033[0m\n' "$*" >&2; exit 1; }
command -v go >/dev/null || die "Go >= 1.22 is needed to build cyclonus ${CYCLONUS_VERSION}"
mkdir -p "$dir"
say "building cyclonus ${CYCLONUS_VERSION} with Go into $dir (nice 19, once; 1-5 minutes on two cores)"
say "the packages being compiled are listed below"
build() { GOBIN="$dir" nice -n 19 go install -v "github.com/mattfenwick/cyclonus/cmd/cyclonus@v${CYCLONUS_VERSION}" 2>&1 | sed -u 's/^/  go: /'; }
build || { say "retrying without the Go checksum database (cyclonus's go.sum still pins every dependency)"; GOSUMDB=off build; }
[ -x "$dir/cyclonus" ] || die "could not build cyclonus ${CYCLONUS_VERSION}"
say "cyclonus ready: $dir/cyclonus"
