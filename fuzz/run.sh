#!/usr/bin/env bash
# Runs every cargo-fuzz target for SECONDS (default 60) each, one after another, and exits
# non-zero on the first crash, hang (-timeout) or out-of-memory (-rss_limit_mb). Installs nothing:
# it needs `cargo fuzz` (cargo install cargo-fuzz) and a nightly toolchain; without them it says
# so and exits 2, and the corpora still run on stable through `cargo test -p rlx-fuzz`.
#
#   fuzz/run.sh [SECONDS]        # from anywhere; RLX_FUZZ_TARGETS="gguf schedule" picks targets
#
# New inputs go to a scratch corpus (fuzz/target-corpus/<target>, ignored by git); the seeds in
# fuzz/corpus/<target> are read, never written. Crashes land in fuzz/artifacts/<target>/.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-60}"
targets="${RLX_FUZZ_TARGETS:-graph_build optimize_plan model_dir gguf schedule}"

if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "fuzz/run.sh: cargo-fuzz or the nightly toolchain is missing (cargo install cargo-fuzz;" \
        "rustup toolchain install nightly); the corpora run on stable in cargo test -p rlx-fuzz" >&2
    exit 2
fi

# -s none: no sanitizer (the code is safe Rust but for the file mappings; ASan would halve the
# speed on a 2-core machine). -a: debug assertions and overflow checks, so an arithmetic
# overflow on a decoded size is a crash, as it is in tests.
build=(-O -a -s none)
# A CARGO_TARGET_DIR set outside is honoured (under fuzz/ in it), else fuzz/target.
if [ -n "${CARGO_TARGET_DIR:-}" ]; then build+=(--target-dir "$CARGO_TARGET_DIR/fuzz"); fi
export CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-1}"
cargo +nightly fuzz build "${build[@]}"

for t in $targets; do
    work="fuzz/target-corpus/$t"
    mkdir -p "$work" "fuzz/artifacts/$t"
    echo "== $t: ${secs}s"
    # -timeout: one input over 10 s is a hang; -rss_limit_mb: over 2 GiB is an OOM;
    # -max_len: inputs up to 64 KiB (the seeds are a few KB).
    set +e
    cargo +nightly fuzz run "${build[@]}" "$t" "$work" "fuzz/corpus/$t" -- \
        -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        -print_final_stats=1 >"fuzz/target-corpus/$t.log" 2>&1
    status=$?
    set -e
    grep -E '^stat::|^Done|ERROR|panicked|SUMMARY' "fuzz/target-corpus/$t.log" || true
    if [ "$status" -ne 0 ]; then
        echo "fuzz/run.sh: $t failed (exit $status); the input is under fuzz/artifacts/$t/" >&2
        exit 1
    fi
done
