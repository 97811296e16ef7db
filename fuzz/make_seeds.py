"""Write seed inputs for the fuzz targets from shards that real writers made.

Each writer (shardwright, zarr-python, TensorStore) writes a small 2-d sharded array per
geometry and codec chain that ``fuzz/src/checks.rs`` knows; the seeds are the bytes the
targets read: the layout-picking header bytes, then a stored shard (``shard``), its index
(``index``), one stored inner chunk (``chunk``) or the ``zarr.json`` (``layout``).

Run from the repository root with the project's virtualenv, then minimize:

    .venv/bin/python fuzz/make_seeds.py /tmp/seeds
    cd fuzz && cargo fuzz cmin <target> /tmp/seeds/<target>   # into corpus/<target>
"""

import json
import random
import struct
import sys
import tempfile
from pathlib import Path

import numpy as np

# The chains of fuzz/src/checks.rs CHAINS, in order: (codecs, numpy dtype).
LITTLE = {"name": "bytes", "configuration": {"endian": "little"}}
CHAINS = [
    ([LITTLE, {"name": "zstd", "configuration": {"level": 1, "checksum": False}}], "uint16"),
    (
        [
            LITTLE,
            {"name": "zstd", "configuration": {"level": 1, "checksum": True}},
            {"name": "crc32c"},
        ],
        "uint16",
    ),
    (
        [
            LITTLE,
            {
                "name": "blosc",
                "configuration": {
                    "cname": "lz4",
                    "clevel": 5,
                    "shuffle": "shuffle",
                    "typesize": 2,
                    "blocksize": 0,
                },
            },
        ],
        "uint16",
    ),
    (
        [
            {"name": "bytes"},
            {
                "name": "blosc",
                "configuration": {
                    "cname": "zstd",
                    "clevel": 3,
                    "shuffle": "noshuffle",
                    "typesize": 1,
                    "blocksize": 0,
                },
            },
        ],
        "uint8",
    ),
    ([LITTLE, {"name": "gzip", "configuration": {"level": 1}}], "uint16"),
    (
        [
            {"name": "transpose", "configuration": {"order": [1, 0]}},
            {"name": "bytes", "configuration": {"endian": "big"}},
            {"name": "zstd", "configuration": {"level": 1, "checksum": False}},
        ],
        "float32",
    ),
    ([LITTLE], "uint16"),
    (
        [
            {"name": "bytes"},
            {"name": "zstd", "configuration": {"level": 1, "checksum": False}},
            {"name": "gzip", "configuration": {"level": 1}},
        ],
        "uint8",
    ),
]


def geometry(g: int, c: int):
    """What checks.rs pick_layout makes of the header bytes g, c."""
    per_shard = [(g & 7) + 1, ((g >> 3) & 3) + 1]
    chunk = [((c >> 5) & 7) + 1, (g >> 5) + 1]
    return per_shard, chunk, c & 7, c & 8 == 0, c & 16 != 0


def metadata(g: int, c: int) -> dict:
    per_shard, chunk, chain, crc, end = geometry(g, c)
    shard = [per_shard[0] * chunk[0], per_shard[1] * chunk[1]]
    index_codecs = [LITTLE] + ([{"name": "crc32c"}] if crc else [])
    codecs, dtype = CHAINS[chain]
    return {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [shard[0] * 2 - 1, shard[1]],
        "data_type": dtype,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": shard}},
        "chunk_key_encoding": {"name": "default"},
        "fill_value": 0,
        "codecs": [
            {
                "name": "sharding_indexed",
                "configuration": {
                    "chunk_shape": chunk,
                    "codecs": codecs,
                    "index_codecs": index_codecs,
                    "index_location": "end" if end else "start",
                },
            }
        ],
        "attributes": {},
    }


def data(meta: dict, rng: random.Random) -> np.ndarray:
    shape = meta["shape"]
    dtype = meta["data_type"]
    values = np.arange(shape[0] * shape[1]).reshape(shape) % 97
    values[rng.randrange(shape[0]), :] = 0  # a fill-value row: some chunks stay empty
    return values.astype(dtype)


def write_zarr(path: Path, meta: dict, values: np.ndarray) -> None:
    import zarr

    arr = zarr.open_array(str(path), mode="r+")
    arr[...] = values


def write_tensorstore(path: Path, meta: dict, values: np.ndarray) -> None:
    import tensorstore as ts

    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path)}}
    arr = ts.open(spec, open=True).result()
    arr[...] = values


def write_shardwright(path: Path, meta: dict, values: np.ndarray) -> None:
    import shardwright as sw

    arr = sw.open(str(path))
    with arr.transaction() as tx:
        tx[...] = values


WRITERS = {"zarr": write_zarr, "tensorstore": write_tensorstore, "shardwright": write_shardwright}


def index_of(meta: dict, shard: bytes) -> bytes:
    config = meta["codecs"][0]["configuration"]
    per_shard = [
        s // c
        for s, c in zip(meta["chunk_grid"]["configuration"]["chunk_shape"], config["chunk_shape"])
    ]
    size = per_shard[0] * per_shard[1] * 16 + 4 * (len(config["index_codecs"]) - 1)
    return shard[:size] if config["index_location"] == "start" else shard[-size:]


def first_chunk(meta: dict, shard: bytes) -> bytes | None:
    index = index_of(meta, shard)
    for i in range(0, len(index) - 15, 16):
        offset, nbytes = struct.unpack("<QQ", index[i : i + 16])
        if offset != 2**64 - 1:
            return shard[offset : offset + nbytes]
    return None


def main(out: Path) -> None:
    rng = random.Random(14)
    for target in ("index", "shard", "chunk", "layout", "grid"):
        (out / target).mkdir(parents=True, exist_ok=True)
    headers = [
        (rng.randrange(256), chain | (rng.randrange(32) << 3))
        for chain in range(8)
        for _ in range(3)
    ]
    for g, c in headers:
        meta = metadata(g, c)
        for writer, write in WRITERS.items():
            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / "a.zarr"
                path.mkdir()
                (path / "zarr.json").write_text(json.dumps(meta))
                try:
                    write(path, meta, data(meta, rng))
                except Exception as e:  # a writer without this codec: no seed from it
                    print(f"{writer} {g} {c}: {type(e).__name__}: {e}", file=sys.stderr)
                    continue
                shard_file = path / "c" / "0" / "0"
                if not shard_file.exists():
                    continue
                shard = shard_file.read_bytes()
                layout = (path / "zarr.json").read_bytes()
            name = f"{writer}-{g:02x}{c:02x}"
            (out / "shard" / name).write_bytes(bytes([g, c, 0]) + shard)
            (out / "shard" / f"{name}-read").write_bytes(bytes([g, c, 2 | 4]) + shard)
            # mode 1: the shard length as an `extent` of mode 5 (a plain u64)
            length = bytes([g, c, 1, 5, 0]) + struct.pack("<Q", len(shard))
            (out / "index" / name).write_bytes(length + index_of(meta, shard))
            chunk = first_chunk(meta, shard)
            if chunk is not None:
                (out / "chunk" / name).write_bytes(bytes([g, c]) + chunk)
            (out / "layout" / name).write_bytes(layout)
    for i in range(32):
        raw = bytes(rng.randrange(256) for _ in range(48))
        (out / "grid" / f"random-{i:02d}").write_bytes(raw)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
