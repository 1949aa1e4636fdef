#!/usr/bin/env bash
# One-command set-up and entry points.  Usage:
#   bash scripts/dev.sh demo    # create .venv with pinned dependencies, then run `evroute demo`
#   bash scripts/dev.sh test    # create .venv with pinned dependencies, then run the whole test suite (as CI does)
#   bash scripts/dev.sh test-fast  # the inner loop: every test not marked slow (pytest -m "not slow"), ~2 minutes
#   bash scripts/dev.sh lint    # create .venv, then ruff check, ruff format --check and mypy (pyproject settings)
#   bash scripts/dev.sh docs    # create .venv with pinned dependencies, then build the documentation site (strict) into site/
#   bash scripts/dev.sh setup   # only create/refresh .venv
# Needs only Python 3.11 (python3.11 or python3 on PATH), git and a C compiler.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-$(command -v python3.11 || command -v python3)}
VENV=.venv
stamp="$VENV/.evroute-installed"
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
# Re-install when the lock file or pyproject changed since the last install.
want=$(cat requirements.lock pyproject.toml | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  "$VENV/bin/python" -m pip install --quiet --upgrade pip wheel
  # torch first, pinned (an unpinned torch pulls several GB of CUDA packages).  Set
  # EVROUTE_TORCH_INDEX=https://download.pytorch.org/whl/cpu to get the CPU build from PyTorch's index.
  "$VENV/bin/python" -m pip install --quiet "torch==2.13.0" ${EVROUTE_TORCH_INDEX:+--index-url "$EVROUTE_TORCH_INDEX"}
  "$VENV/bin/python" -m pip install --quiet -r requirements.lock
  "$VENV/bin/python" -m pip install --quiet --no-deps -e .
  echo "$want" > "$stamp"
fi
export PATH="$PWD/$VENV/bin:$PATH"
cmd=${1:-demo}; shift || true
case "$cmd" in
  setup) ;;
  demo) exec evroute demo "$@" ;;
  test) exec python -m pytest -q -n 2 "$@" ;;
  test-fast) exec python -m pytest -q -n 2 -m "not slow" "$@" ;;  # slow: @pytest.mark.slow (over ~5 s each)
  lint)
    ruff check .
    ruff format --check .
    exec mypy "$@" ;;  # files, plugins and options from pyproject.toml [tool.mypy]
  docs) NO_MKDOCS_2_WARNING=1 exec python -m mkdocs build --strict "$@" ;;
  *) echo "unknown command: $cmd (use demo, test, test-fast, lint, docs or setup)" >&2; exit 2 ;;
esac
