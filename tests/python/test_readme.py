"""The README's Python examples run as written, in order, in a fresh folder."""

import os
import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_python_blocks_run(tmp_path, capsys):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert len(blocks) >= 2
    namespace: dict = {}
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        for block in blocks:
            exec(compile(block, str(README), "exec"), namespace)
    finally:
        os.chdir(cwd)
    out = capsys.readouterr().out
    assert "'puts': 1" in out
    assert (tmp_path / "fish.zarr" / "zarr.json").is_file()
    tx = namespace["tx"]
    assert tx.stats["shards_written"] > 0
