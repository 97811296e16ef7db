#!/usr/bin/env bash
# Build everything and run every test: Rust (nextest + doctests), lints, the Python
# package (built with maturin into .venv) with pytest, and the benchmark harness once on
# a tiny size. Installs the pinned Python dependencies itself (requirements-dev.txt).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
export PATH="$PWD/.venv/bin:$PATH"
export VIRTUAL_ENV="$PWD/.venv"

echo "== format and lints"
cargo fmt --all --check
cargo clippy --workspace --all-targets --quiet -- -D warnings
ruff check python tests benchmarks
ruff format --check python tests benchmarks

echo "== Rust tests"
cargo nextest run --no-fail-fast
cargo test --doc --quiet

echo "== Python package"
maturin develop --release --quiet
python -m pytest tests/python python/shardwright --doctest-modules -q

echo "== the README's first command, and the benchmarks once at a tiny size (they still run)"
cargo run --release --quiet -p shardwright-cli -- demo
cargo run --release --quiet -p shardwright-cli -- bench --size 64 --shards 32 --chunks 8 --repeat 1
python benchmarks/bench.py --size tiny --repeat 1 --json "$(mktemp -d)/bench.json" >/dev/null
python benchmarks/bench_partial.py --size tiny >/dev/null
python benchmarks/per_chunk.py >/dev/null
echo "== all tests passed"
