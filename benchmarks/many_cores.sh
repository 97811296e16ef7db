#!/usr/bin/env bash
# Workload (a) at 1 / 4 / all threads: shardwright write_shard and map_chunks, TensorStore
# (transaction per shard and whole shard) and zstd alone; prints MiB/s like the many-cores
# table of shared/notes/peers.md.
#
#   benchmarks/many_cores.sh                  # full size (512³ uint16), data precomputed
#   SIZE=small REPEAT=1 benchmarks/many_cores.sh
#   THREADS="1 2 8 16" PRECOMPUTED=0 JSON=many.json benchmarks/many_cores.sh
#
# Threads are limited per library: RAYON_NUM_THREADS=N for shardwright, the TensorStore
# context {"data_copy_concurrency": {"limit": N}, "file_io_concurrency": {"limit": N}},
# an N-thread pool for zstd alone. PRECOMPUTED=1 (the default, as in peers.md) computes
# the whole array before the clock starts, so the Python data function is not the limit.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
python="${PYTHON:-python3}"
size="${SIZE:-full}"
repeat="${REPEAT:-1}"
threads="${THREADS:-$(printf '%s\n' 1 4 "$(nproc)" | sort -n -u | tr '\n' ' ')}"
cases="zstd,ts_shard,ts_txn,sw_write_shard,sw_map_chunks"
extra=()
if [ "${PRECOMPUTED:-1}" = 1 ]; then extra+=(--precomputed); fi

out="$(mktemp -d "${TMPDIR:-/tmp}/shardwright-many-cores-XXXXXX")"
trap 'rm -rf "$out"' EXIT

echo "load before: $(cat /proc/loadavg 2>/dev/null || uptime)" >&2
for n in $threads; do
    echo "== $n thread(s)" >&2
    "$python" "$here/bench.py" --size "$size" --workloads a --cases "$cases" \
        --threads "$n" --repeat "$repeat" ${extra[@]+"${extra[@]}"} --json "$out/t$n.json" >/dev/null
done
echo "load after: $(cat /proc/loadavg 2>/dev/null || uptime)" >&2

"$python" - "${JSON:-}" "$out"/t*.json <<'EOF'
import json
import sys

target, paths = sys.argv[1], sys.argv[2:]
reports = sorted((json.load(open(p)) for p in paths), key=lambda r: r["meta"]["threads"])
rows = [
    ("zstd", "zstd alone on the same chunks"),
    ("ts_shard", "TensorStore, whole-shard numpy buffer"),
    ("ts_txn", "TensorStore, transaction per shard, chunk by chunk"),
    ("sw_write_shard", "shardwright write_shard"),
    ("sw_map_chunks", "shardwright map_chunks"),
]
counts = [r["meta"]["threads"] for r in reports]
meta = reports[0]["meta"]
spec = reports[0]["workloads"]["a"]["spec"]
print(
    f"workload (a) {spec['shape'][0]}³ {spec['dtype']}, shards {spec['shards'][0]}³, "
    f"chunks {spec['chunks'][0]}³, size {meta['size']}, "
    f"{'data precomputed' if meta['precomputed'] else 'data computed per chunk'}, "
    f"{meta['machine_cores']} cores, median of {meta['repeat']}; MiB/s"
)
print("| | " + " | ".join(str(n) for n in counts) + " |")
print("|---|" + "---:|" * len(counts))
for key, label in rows:
    cells = []
    for r in reports:
        case = r["workloads"]["a"]["cases"].get(key, {})
        cells.append(f"{case['mib_s']:.0f}" if case.get("mib_s") else "FAILED")
    print(f"| {label} | " + " | ".join(cells) + " |")
if target:
    with open(target, "w") as fh:
        json.dump(reports, fh, indent=1)
EOF
