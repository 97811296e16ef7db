#!/usr/bin/env bash
# Build shardwright's fuzz targets (fuzz/, cargo-fuzz + libFuzzer) and run each for
# SECONDS (default 20) from its committed corpus; fail on any crash, leak, timeout or
# out-of-memory finding (libFuzzer exits non-zero; the input is kept in fuzz/artifacts/).
#
#   scripts/fuzz.sh            # 20 s per target
#   scripts/fuzz.sh 600        # the long local run
#
# Needs a nightly toolchain or, on stable, RUSTC_BOOTSTRAP=1 (set here when no nightly is
# installed). FUZZ_TARGET_DIR overrides the build folder (default fuzz/target);
# FUZZ_SANITIZER the sanitizer (default address, as the long local runs use; CI's short
# run uses none, which builds faster: it still finds panics, overflows, hangs and
# allocations past the limits).
set -euo pipefail

seconds=${1:-20}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root/fuzz"

if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install --locked cargo-fuzz
fi

toolchain=()
if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
    toolchain=(+nightly)
else
    export RUSTC_BOOTSTRAP=1
fi
target_dir=(--target-dir "${FUZZ_TARGET_DIR:-$root/fuzz/target}" -s "${FUZZ_SANITIZER:-address}")

# The most one allocation may take, per target: every input is a few KiB, and a decoded
# chunk at most 256 bytes, so more is a decoder believing a size some bytes claim.
malloc_limit() {
    case $1 in
        chunk) echo 64 ;;
        layout) echo 256 ;;
        *) echo 128 ;;
    esac
}

targets=$(cargo "${toolchain[@]}" fuzz list)
cargo "${toolchain[@]}" fuzz build -O "${target_dir[@]}"
for target in $targets; do
    work=$(mktemp -d)
    mkdir -p "corpus/$target" "artifacts/$target"
    echo "== fuzz $target for ${seconds}s"
    # new inputs go to $work; the committed corpus is only read
    set +e
    cargo "${toolchain[@]}" fuzz run -O "${target_dir[@]}" "$target" "$work" "corpus/$target" -- \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -malloc_limit_mb="$(malloc_limit "$target")" -print_final_stats=1 \
        -artifact_prefix="artifacts/$target/" 2>&1 |
        grep -E '^#[0-9]+[[:space:]]+DONE|^stat::number_of_executed_units|ERROR|panicked|SUMMARY|Test unit written'
    status=${PIPESTATUS[0]}
    set -e
    rm -rf "$work"
    if [ "$status" -ne 0 ]; then
        echo "fuzz target $target failed (exit $status); see fuzz/artifacts/$target/" >&2
        exit 1
    fi
done
echo "all fuzz targets ran ${seconds}s without a finding"
