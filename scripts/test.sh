#!/usr/bin/env bash
# Build everything and run every test: lints, Rust (nextest + doctests), the abi3 wheel
# (built once with maturin) installed into three Python environments and tested in each:
#   .venv        CPython 3.12, zarr-python 3.4  (primary: the whole suite, the benchmarks)
#   .venv-py311  CPython 3.11, zarr-python 3.1.6 (all but the heavy tests, interop included)
#   .venv-py313  CPython 3.13, zarr-python 3.4  (all but the heavy tests)
# Installs the pinned Python dependencies itself (requirements-dev.txt, requirements-py311.txt).
# Interpreters are found on PATH or in pyenv; PYTHON312 / PYTHON311 / PYTHON313 override.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/pythons.sh

venv() { # venv DIR PYTHON REQUIREMENTS
    local dir=$1 python=$2 reqs=$3 want
    want=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    if [ ! -x "$dir/bin/python" ] || [ "$("$dir/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')" != "$want" ]; then
        rm -rf "$dir"
        "$python" -m venv "$dir"
    fi
    "$dir/bin/python" -m pip install --quiet --disable-pip-version-check -r "$reqs"
}

PY312=$(find_python 3.12)
PY311=$(find_python 3.11)
PY313=$(find_python 3.13)
# Temporary folders of this script (benchmark outputs, fuzz work folders) go here and are
# removed at exit.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
disk() { echo "== disk: $(df -h --output=avail,size . | tail -1 | awk '{print $1 " free of " $2}') here, $(df -h --output=avail /tmp | tail -1 | tr -d ' ') in /tmp ($1)"; }
disk "at the start"

echo "== Python environments: $PY312, $PY311, $PY313"
venv .venv "$PY312" requirements-dev.txt
venv .venv-py311 "$PY311" requirements-py311.txt
venv .venv-py313 "$PY313" requirements-dev.txt
export PATH="$PWD/.venv/bin:$PATH"
export VIRTUAL_ENV="$PWD/.venv"

echo "== format and lints"
cargo fmt --all --check
cargo clippy --workspace --all-targets --quiet -- -D warnings
ruff check python tests benchmarks
ruff format --check python tests benchmarks

echo "== Rust tests"
# The Rust tests that need moto's S3 server run it with this Python, and fail (rather than
# skip, as they do on a machine without one) if it cannot.
export SHARDWRIGHT_TEST_PYTHON="$PWD/.venv/bin/python" SHARDWRIGHT_REQUIRE_S3=1
cargo nextest run --no-fail-fast
cargo test --doc --quiet

echo "== the abi3 wheel"
rm -rf target/wheels-test
maturin build --release --quiet --out target/wheels-test
wheel=$(ls target/wheels-test/shardwright-*-abi3-*.whl)
echo "built $wheel ($(du -h "$wheel" | cut -f1))"
# CI (SHARDWRIGHT_FREE_DISK=1, set by .ci/run) drops the debug build once the Rust tests
# are done: the Python tests and the rest use the release build and the wheel.
if [ "${SHARDWRIGHT_FREE_DISK:-0}" = 1 ]; then
    rm -rf target/debug
fi
disk "before the Python tests"

for env in .venv .venv-py311 .venv-py313; do
    echo "== Python tests in $env ($("$env/bin/python" --version), zarr $("$env/bin/python" -c 'import zarr; print(zarr.__version__)'))"
    "$env/bin/python" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps "$wheel"
    "$env/bin/shardwright" --version
    # The heavy tests (memory, streaming, kill, long randomized ones: ~2 min) exercise the
    # engine, not the interpreter: the primary environment runs them, the others skip them.
    select=()
    [ "$env" = .venv ] || select=(-m "not heavy")
    "$env/bin/python" -m pytest tests/python --doctest-modules --pyargs shardwright -q -p no:cacheprovider "${select[@]}"
done

echo "== the README's first command, and the benchmarks once at a tiny size (they still run)"
cargo run --release --quiet -p shardwright-cli -- demo
cargo run --release --quiet -p shardwright-cli -- bench --size 64 --shards 32 --chunks 8 --repeat 1
python benchmarks/bench.py --size tiny --repeat 1 --json "$scratch/bench.json" >/dev/null
python benchmarks/bench_partial.py --size tiny >/dev/null
python benchmarks/bench_pyramid.py --size tiny --cases shardwright,ts_loop,ts_whole,compress --repeat 1 --quiet-wait 0 --retries 0 --nice 0 --workdir "$scratch/pyramid" >/dev/null
python benchmarks/bench_image.py --size tiny --cases ts_txn_downsample,sw_loop_then_pyramid,sw_level0_only,sw_create_image,sw_add_levels --repeat 1 --quiet-wait 0 --retries 0 --nice 0 --workdir "$scratch/image" >/dev/null
python benchmarks/bench_convert.py --size tiny --cases sw_convert,tifffile_zarr,compress_only --repeat 1 --quiet-wait 0 --retries 0 --nice 0 --workdir "$scratch/convert" >/dev/null
python benchmarks/bench_append.py --size tiny --cases sw_appender,sw_image_appender,tensorstore_txn,zarr_append --repeat 1 --quiet-wait 0 --retries 0 --nice 0 --tmpdir "$scratch" >/dev/null
python benchmarks/bench_s3.py --size tiny --repeat 1 >/dev/null
python benchmarks/per_chunk.py >/dev/null
python benchmarks/bench_async_loop.py --chunks 1 >/dev/null
python benchmarks/bench_dask.py --size tiny --workdir "$scratch/dask" >/dev/null
echo "== fuzzing: every target briefly from its committed corpus (scripts/fuzz.sh 600 locally)"
FUZZ_SANITIZER=none bash scripts/fuzz.sh "${FUZZ_SECONDS:-10}"
disk "at the end"
echo "== all tests passed"
