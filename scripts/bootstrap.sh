#!/usr/bin/env bash
# Idempotent set-up used by `npm run dev`, `npm test` and .ci/run: npm packages, the Temporal CLI,
# and PostgreSQL / Redis server binaries. Fast when everything is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

TEMPORAL_VERSION=1.5.1
CACHE_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/plana/temporal-${TEMPORAL_VERSION}"
say() { printf '\033[36m[bootstrap]\033[0m %s\n' "$*"; }
die() { printf '\033[31m[bootstrap] %s\033[0m\n' "$*" >&2; exit 1; }

# 1. npm packages: `npm ci` when node_modules is missing or older than package-lock.json.
lock_hash=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ ! -f node_modules/.plana-lock-hash ] || [ "$(cat node_modules/.plana-lock-hash)" != "$lock_hash" ]; then
  say "installing npm packages (npm ci)"
  npm ci --no-audit --no-fund --loglevel=error
  echo "$lock_hash" > node_modules/.plana-lock-hash
fi

# 2. The Temporal CLI v1.5.1 (dev server + Web UI).
temporal_ok() { "$1" --version 2>/dev/null | grep -qE "(version ${TEMPORAL_VERSION}|Server 1\.29\.1)"; }
if [ -n "${TEMPORAL_CLI:-}" ] && temporal_ok "$TEMPORAL_CLI"; then
  : # given explicitly
elif command -v temporal >/dev/null && "$(command -v temporal)" --version 2>/dev/null | grep -q "version ${TEMPORAL_VERSION}"; then
  : # the right version is on PATH
elif [ -x "$CACHE_DIR/temporal" ] && temporal_ok "$CACHE_DIR/temporal"; then
  : # cached build
else
  mkdir -p "$CACHE_DIR"
  if command -v go >/dev/null; then
    say "building the Temporal CLI v${TEMPORAL_VERSION} with Go into $CACHE_DIR"
    say "this takes a few minutes the first time; the packages being compiled are listed below"
    if ! GOBIN="$CACHE_DIR" go install -v "github.com/temporalio/cli/cmd/temporal@v${TEMPORAL_VERSION}" 2>&1 | sed -u 's/^/  go: /'; then
      say "retrying without the Go checksum database (the CLI's go.sum still pins every dependency)"
      GOSUMDB=off GOBIN="$CACHE_DIR" go install -v "github.com/temporalio/cli/cmd/temporal@v${TEMPORAL_VERSION}" 2>&1 | sed -u 's/^/  go: /'
    fi
  fi
  if [ ! -x "$CACHE_DIR/temporal" ]; then
    say "downloading the official Temporal CLI v${TEMPORAL_VERSION} release"
    arch=$(uname -m); case "$arch" in x86_64) arch=amd64 ;; aarch64) arch=arm64 ;; esac
    url="https://github.com/temporalio/cli/releases/download/v${TEMPORAL_VERSION}/temporal_cli_${TEMPORAL_VERSION}_linux_${arch}.tar.gz"
    curl -fsSL --progress-bar "$url" | tar -xz -C "$CACHE_DIR" temporal \
      || die "could not get the Temporal CLI: install Go >= 1.25 or put temporal v${TEMPORAL_VERSION} on PATH"
  fi
  temporal_ok "$CACHE_DIR/temporal" || die "$CACHE_DIR/temporal is not Temporal CLI v${TEMPORAL_VERSION}"
  say "Temporal CLI ready: $CACHE_DIR/temporal"
fi

# 3. PostgreSQL and Redis server binaries (the project starts private instances of its own).
have_postgres() { ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null; }
have_redis() { command -v redis-server >/dev/null; }
if ! have_postgres || ! have_redis; then
  pkgs=()
  have_postgres || pkgs+=(postgresql)
  have_redis || pkgs+=(redis-server)
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    say "installing Debian packages: ${pkgs[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
    # the packages start system-wide servers; the project runs its own private ones instead
    for svc in postgresql redis-server; do service "$svc" stop >/dev/null 2>&1 || true; done
  else
    die "missing server binaries: install ${pkgs[*]} (e.g. sudo apt-get install ${pkgs[*]}), then run again"
  fi
fi
if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then
  # PostgreSQL refuses to run as root; the private cluster runs as this system user.
  useradd --system --home-dir /var/lib/postgresql --shell /usr/sbin/nologin postgres
fi

# 3b. Chromium (Debian's package) for the portal's browser tests (test/e2e/portal.test.ts, driven by
#     playwright-core: Playwright's own browser download cannot work here).
if ! command -v chromium >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    say "installing Debian package chromium"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends chromium >/dev/null
  else
    die "chromium is needed for the portal's browser tests: install it (e.g. sudo apt-get install chromium), then run again"
  fi
fi

# 4. schemathesis (PyPI) for the API contract test (test/integration/api/schemathesis.test.ts), in a
#    virtual environment of its own under the cache folder, reused when it holds the pinned version.
SCHEMATHESIS_VERSION=4.32.5
ST_VENV="${XDG_CACHE_HOME:-$HOME/.cache}/plana/schemathesis-${SCHEMATHESIS_VERSION}"
if ! "$ST_VENV/bin/schemathesis" --version 2>/dev/null | grep -q "${SCHEMATHESIS_VERSION}"; then
  if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      say "installing Debian package python3-venv"
      export DEBIAN_FRONTEND=noninteractive
      apt-get update -qq
      apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
    else
      die "python3 with venv is needed for schemathesis: install python3-venv, then run again"
    fi
  fi
  say "installing schemathesis ${SCHEMATHESIS_VERSION} from PyPI into $ST_VENV"
  rm -rf "$ST_VENV"
  python3 -m venv "$ST_VENV"
  "$ST_VENV/bin/pip" install --quiet --disable-pip-version-check "schemathesis==${SCHEMATHESIS_VERSION}" \
    || die "could not install schemathesis ${SCHEMATHESIS_VERSION} from PyPI"
  say "schemathesis ready: $ST_VENV/bin/schemathesis"
fi
