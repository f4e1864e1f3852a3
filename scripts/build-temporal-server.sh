#!/usr/bin/env bash
# The Temporal server 1.32.1 and its SQL schema tool (MIT), the production-shaped Temporal on PostgreSQL
# (scripts/local-temporal-cluster.ts: `npm run dev -- --temporal=cluster`, its integration test and
# bench:provision). Built once, on first use, with Go at low priority from the go.temporal.io/server
# module (no replace directives) downloaded in place, into the cache folder given as $1.
set -euo pipefail
TEMPORAL_SERVER_VERSION=1.32.1
dir=$1
say() { printf '\033[36m[temporal-server]\033[0m %s\n' "$*"; }
die() { printf '\033[31m[temporal-server] %s\033[0m\n' "$*" >&2; exit 1; }
command -v go >/dev/null || die "Go >= 1.26.8 is needed to build the Temporal server ${TEMPORAL_SERVER_VERSION}"
mkdir -p "$dir"
say "building the Temporal server ${TEMPORAL_SERVER_VERSION} and temporal-sql-tool with Go into $dir (nice 19, once)"
say "this takes 10-20 minutes on two shared cores; the packages being compiled are listed below"
source_dir() { go mod download -json "go.temporal.io/server@v${TEMPORAL_SERVER_VERSION}" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p'; }
src=$(source_dir) || src=""
if [ -z "$src" ]; then
  say "retrying without the Go checksum database (the server's go.sum still pins every dependency)"
  src=$(GOSUMDB=off source_dir) || die "could not download go.temporal.io/server@v${TEMPORAL_SERVER_VERSION}"
fi
for target in server:cmd/server sql-tool:cmd/tools/sql; do
  out="$dir/temporal-${target%%:*}"
  ( cd "$src" && nice -n 19 go build -v -o "$out.part" "./${target#*:}" 2>&1 | sed -u 's/^/  go: /' ) \
    || ( cd "$src" && GOSUMDB=off nice -n 19 go build -v -o "$out.part" "./${target#*:}" 2>&1 | sed -u 's/^/  go: /' )
  [ -x "$out.part" ] || die "could not build $out"
  mv "$out.part" "$out"
done
say "Temporal server ready: $dir"
