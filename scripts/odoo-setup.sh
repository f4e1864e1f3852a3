#!/usr/bin/env bash
# Installs Odoo's Python requirements into a cached virtual environment OUTSIDE the clone
# (like the Temporal CLI cache): ~/.cache/plana/odoo-venv. Odoo itself is never part of the project:
# point ODOO_SRC at a folder holding odoo-bin (a public copy of Odoo 18.0 Community).
#   ODOO_SRC=/work/odoo-src bash scripts/odoo-setup.sh
# Prints the venv's python path on success. Idempotent: a venv built for the same requirements is reused,
# and the Odoo addons the platform needs (ADDONS below) are installed once.
set -euo pipefail
: "${ODOO_SRC:?set ODOO_SRC to a folder holding odoo-bin (a copy of Odoo 18.0 Community)}"
[ -x "$ODOO_SRC/odoo-bin" ] || [ -f "$ODOO_SRC/odoo-bin" ] || { echo "no odoo-bin in ODOO_SRC=$ODOO_SRC" >&2; exit 1; }
VENV="${ODOO_VENV:-$HOME/.cache/plana/odoo-venv}"
# Odoo 18 supports Python 3.10-3.12; its 3.12 pins (Ubuntu Noble) all have wheels
# (a pyenv shim may exist for a version that is not active: take the first interpreter that really runs)
PY="${PYTHON:-}"
if [ -z "$PY" ]; then
  # Odoo 18's pinned requirements have wheels for 3.12 (Ubuntu Noble): prefer it, also from pyenv
  for candidate in python3.12 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.12*/bin/python3.12 python3.11 python3.10 python3; do
    if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import sys' 2>/dev/null; then PY="$(command -v "$candidate")"; break; fi
  done
fi
: "${PY:?no working python3 (3.10-3.12) found}"
stamp="$VENV/.requirements.sha256"
# psycopg2 -> psycopg2-binary (no compiler or libpq headers needed); python-ldap (auth_ldap only) left out.
req="$(mktemp)"
trap 'rm -f "$req"' EXIT
sed -e 's/^psycopg2==\([0-9.]*\)/psycopg2-binary==\1/' -e '/^python-ldap/d' "$ODOO_SRC/requirements.txt" > "$req"
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
ADDONS=(odoo-addon-auth-oidc==18.0.1.1.0.2)
ADDON_DEPS=(python-jose==3.5.0)
addons_stamp="$VENV/.addons"
if [ "$(cat "$addons_stamp" 2>/dev/null)" != "${ADDONS[*]} ${ADDON_DEPS[*]}" ]; then
  "$VENV/bin/python" -m pip install --quiet --no-deps "${ADDONS[@]}" >&2
  "$VENV/bin/python" -m pip install --quiet "${ADDON_DEPS[@]}" >&2
  echo "${ADDONS[*]} ${ADDON_DEPS[*]}" > "$addons_stamp"
fi
echo "$VENV/bin/python"
