#!/usr/bin/env bash
# Creates .venv-bumble/ (gitignored): a project-local Python virtual environment with Google's
# Bumble BLE host at a pinned version, for the tests that decode captures made by an independent
# BLE stack (Tests/Bumble/, BumbleCaptureTests), and Home Assistant's Improv client
# (py-improv-ble-client, its protocol module only: installed without bleak, which the tests do not
# need) whose RPC packets the Improv tests decode. Quick when it is already there: a stamp file
# holds the versions it was made with.
#   Scripts/bumble-env.sh            create or check; exit 1 (one line) when PyPI cannot be reached
#   Scripts/bumble-env.sh --python   print the venv's python (after creating it)
set -uo pipefail
cd "$(dirname "$0")/.."
BUMBLE_VERSION=0.0.236
IMPROV_CLIENT_VERSION=2.0.1
venv=.venv-bumble
stamp="$venv/.bumble-$BUMBLE_VERSION-improv-$IMPROV_CLIENT_VERSION"
python=${PYTHON:-python3}

if [ ! -f "$stamp" ]; then
  rm -rf "$venv"
  if ! "$python" -m venv "$venv" >/dev/null 2>&1; then
    echo "bumble-env: error: '$python -m venv' failed (install python3-venv); the Bumble tests will skip" >&2
    rm -rf "$venv"; exit 1
  fi
  if ! "$venv/bin/python" -m pip install -q --disable-pip-version-check "bumble==$BUMBLE_VERSION" >"$venv.log" 2>&1; then
    echo "bumble-env: error: could not install bumble==$BUMBLE_VERSION from PyPI (log: $venv.log); the Bumble tests will skip" >&2
    rm -rf "$venv"; exit 1
  fi
  if ! "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps "py-improv-ble-client==$IMPROV_CLIENT_VERSION" >>"$venv.log" 2>&1; then
    echo "bumble-env: error: could not install py-improv-ble-client==$IMPROV_CLIENT_VERSION from PyPI (log: $venv.log); the Bumble tests will skip" >&2
    rm -rf "$venv"; exit 1
  fi
  "$venv/bin/python" -c 'import bumble.controller, bumble.link, bumble.snoop, cryptography' >/dev/null 2>&1 \
    || { echo "bumble-env: error: bumble $BUMBLE_VERSION installed but does not import (log: $venv.log)" >&2; rm -rf "$venv"; exit 1; }
  rm -f "$venv.log"
  touch "$stamp"
fi
[ "${1:-}" = --python ] && echo "$PWD/$venv/bin/python"
exit 0
