#!/usr/bin/env bash
# The Python package end to end: a fresh venv, the abi3 wheel built with maturin, installed from
# the wheel (not the source tree), then pytest over crates/rlx-py/tests on the repository's
# tiny fixtures, with `rlx embed` built for the embedding comparison.
#
# RLX_PY_PROFILE picks the cargo profile: release (default, the wheel one ships) or dev (quicker
# to build, much slower to run). Not `test`: `cargo rustc --profile test`, which maturin runs,
# builds the library as a test harness, without the module's init symbol. RLX_PY_VENV puts the
# venv somewhere kept (default: a temp folder, removed at the end).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

profile=${RLX_PY_PROFILE:-release}
case "$profile" in
  release) outdir=release ;;
  dev) outdir=debug ;;
  *) echo "python_package_test: RLX_PY_PROFILE must be release or dev, not '$profile'" >&2; exit 2 ;;
esac
start=$(date +%s)
target=${CARGO_TARGET_DIR:-$repo/target}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
venv=${RLX_PY_VENV:-$work/venv}
python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q --upgrade pip
"$venv/bin/python" -m pip install -q "maturin>=1.9.4,<2" numpy pytest

"$venv/bin/maturin" build -m crates/rlx-py/Cargo.toml --profile "$profile" --out "$work/wheels"
wheel=$(ls "$work"/wheels/rlx-*-cp39-abi3-*.whl)
echo "python_package_test: built $(basename "$wheel")"
"$venv/bin/python" -m pip install -q --force-reinstall "$wheel"

# `rlx embed`, for the test that the binding's embeddings equal the CLI's: RLX_BIN when given
# (CI passes the binary `cargo test` built), else built here.
if [ -z "${RLX_BIN:-}" ]; then
  cargo build -q --profile "$profile" -p rlx-cli --bin rlx
  export RLX_BIN="$target/$outdir/rlx"
fi

# From the tests folder, so that `import rlx` is the installed wheel, not crates/rlx-py/python.
cd crates/rlx-py/tests
"$venv/bin/python" -c 'import rlx, sys; print("python_package_test: rlx", rlx.__version__, "from", rlx.__file__, "on Python", sys.version.split()[0])'
"$venv/bin/python" -m pytest -q -p no:cacheprovider --rootdir=. .
echo "python_package_test: done in $(( $(date +%s) - start )) s"
