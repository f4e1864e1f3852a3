#!/usr/bin/env bash
# Installs Odoo's Python requirements into a cached virtual environment OUTSIDE the clone
# (like the Temporal CLI cache): ~/.cache/plana/odoo-venv. Odoo itself is never part of the project:
# point ODOO_SRC at a folder holding odoo-bin (a public copy of Odoo 18.0 Community).
#   ODOO_SRC=/work/odoo-src bash scripts/odoo-setup.sh
# Prints the venv's python path on success. Idempotent: a venv built for the same requirements is reused.
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
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sum" ]; then echo "$VENV/bin/python"; exit 0; fi
mkdir -p "$(dirname "$VENV")"
"$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade 'pip<25' 'setuptools<70' wheel >&2
# some sdists (e.g. vobject) still import pkg_resources at build time: build them with the venv's own setuptools
"$VENV/bin/python" -m pip install --quiet --no-build-isolation -r "$req" >&2
echo "$sum" > "$stamp"
echo "$VENV/bin/python"
