#!/usr/bin/env bash
# Installs one Odoo version's Python requirements into a cached virtual environment OUTSIDE the clone
# (like the Temporal CLI cache): ~/.cache/plana/odoo-venv-<major> (17, 18 or 19). Odoo itself is never
# part of the project: the argument (or ODOO_SRC) is a folder holding odoo-bin, a public copy of Odoo
# Community 17.0, 18.0 or 19.0 (docs/developers.md says which copies and how to check them).
#   bash scripts/odoo-setup.sh "$ODOO_SRC_17"
# Prints the venv's python path on success. Idempotent: a venv built for the same requirements is reused,
# and the Odoo addons the platform needs (ADDONS below) are installed once.
set -euo pipefail
SRC="${1:-${ODOO_SRC:-}}"
: "${SRC:?pass a folder holding odoo-bin (a copy of Odoo Community 17.0, 18.0 or 19.0)}"
[ -f "$SRC/odoo-bin" ] || { echo "no odoo-bin in $SRC" >&2; exit 1; }
# the source's own major version (odoo/release.py: version_info = (18, 0, 0, FINAL, 0, ''))
MAJOR="$(sed -n 's/^version_info = (\([0-9]*\),.*/\1/p' "$SRC/odoo/release.py")"
case "$MAJOR" in
  # each version's pinned requirements have wheels for these interpreters: 17's pins stop at Python 3.11
  # (Ubuntu Jammy / Debian Bookworm), 18's and 19's have 3.12 pins (Ubuntu Noble)
  17) PYTHONS=(python3.11 python3.10) ;;
  18 | 19) PYTHONS=(python3.12 python3.11 python3.10) ;;
  *) echo "$SRC is Odoo '${MAJOR}': the platform runs Odoo 17, 18 or 19" >&2; exit 1 ;;
esac
# OCA's auth_oidc for this version (see below) and its one Python dependency
ADDONS=("odoo-addon-auth-oidc==$(case "$MAJOR" in 17) echo 17.0.1.2.0.2 ;; 18) echo 18.0.1.1.0.2 ;; 19) echo 19.0.1.0.0.3 ;; esac)")
ADDON_DEPS=(python-jose==3.5.0)
VENV="${ODOO_VENV:-$HOME/.cache/plana/odoo-venv-$MAJOR}"
# (a pyenv shim may exist for a version that is not active: take the first interpreter that really runs)
PY="${PYTHON:-}"
if [ -z "$PY" ]; then
  for name in "${PYTHONS[@]}"; do
    for candidate in "$name" "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"${name#python}"*/bin/"$name"; do
      if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import sys' 2>/dev/null; then PY="$(command -v "$candidate")"; break 2; fi
    done
  done
fi
: "${PY:?no working Python for Odoo $MAJOR found (one of ${PYTHONS[*]})}"
stamp="$VENV/.requirements.sha256"
# psycopg2 -> psycopg2-binary (no compiler or libpq headers needed); python-ldap (auth_ldap only) left out.
req="$(mktemp)"
trap 'rm -f "$req"' EXIT
sed -e 's/^psycopg2==/psycopg2-binary==/' -e '/^python-ldap/d' "$SRC/requirements.txt" > "$req"
sum="$(sha256sum "$req" | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$sum" ]; then
  mkdir -p "$(dirname "$VENV")"
  "$PY" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --upgrade 'pip<25' 'setuptools<70' wheel >&2
  # some sdists (e.g. vobject) still import pkg_resources at build time: build them with the venv's own setuptools
  "$VENV/bin/python" -m pip install --quiet --no-build-isolation -r "$req" >&2
  echo "$sum" > "$stamp"
fi
# The tenants' ERPs sign in through the platform's OpenID provider with OCA's auth_oidc (authorization
# code + PKCE; Community's auth_oauth asks for the implicit grant). Its wheel installs the addon under
# site-packages/odoo/addons, which Odoo finds through the odoo.addons namespace; --no-deps because the
# wheel requires the `odoo` distribution, which a source checkout is not. Its one Python dependency
# (the manifest's external_dependencies) comes with its own dependencies.
addons_stamp="$VENV/.addons"
if [ "$(cat "$addons_stamp" 2>/dev/null)" != "${ADDONS[*]} ${ADDON_DEPS[*]}" ]; then
  "$VENV/bin/python" -m pip install --quiet --no-deps "${ADDONS[@]}" >&2
  "$VENV/bin/python" -m pip install --quiet "${ADDON_DEPS[@]}" >&2
  echo "${ADDONS[*]} ${ADDON_DEPS[*]}" > "$addons_stamp"
fi
echo "$VENV/bin/python"
