"""``sw.check`` and ``shardwright check`` on a Zarr group or an OME-Zarr image: every array
in it is checked (an image's levels, nested groups), reported one by one, the status
combining them; and ``info``/``check``/``copy`` on a file that is not a Zarr array say so."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import shardwright as sw


def cli(*args) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "shardwright", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True)


@pytest.fixture
def image(tmp_path) -> Path:
    """A group holding an OME-Zarr image (levels 0, 1, 2) in a nested group and an array."""
    data = np.arange(64 * 64, dtype="uint16").reshape(64, 64)
    root = tmp_path / "plate.zarr"
    root.mkdir()
    (root / "zarr.json").write_text('{"zarr_format": 3, "node_type": "group"}')
    sw.pyramid(data, root / "img", factors=(2, 2), levels=3, chunks=(8, 8), shards=(16, 16))
    extra = sw.create(root / "extra", shape=(8,), dtype="uint8", chunks=(2,), shards=(4,))
    extra[:] = 7
    return root


def damage(path: Path) -> None:
    path.write_bytes(b"torn")


def test_sw_check_reports_every_array_of_a_group(image):
    report = sw.check(image / "img")
    assert isinstance(report, sw.GroupCheckReport)
    assert list(report.arrays) == ["0", "1", "2"] and report.ok and report.complete
    assert all(isinstance(r, sw.CheckReport) and r.ok for r in report.arrays.values())
    assert list(sw.check(image).arrays) == ["extra", "img/0", "img/1", "img/2"]

    damage(image / "img" / "1" / "c" / "0" / "1")
    report = sw.check(image)
    assert not report.ok and [(p, d.key) for p, d in report.damaged] == [("img/1", "c/0/1")]
    assert report.arrays["img/0"].ok and not report.arrays["img/1"].ok
    assert "array 'img/1':" in str(report) and "1 with damage" in str(report)

    repaired = sw.check(image, repair=True)
    assert [p for p, _ in repaired.repaired] == ["img/1"] and repaired.lost_chunks
    assert sw.check(image).ok


def test_cli_check_covers_every_array_of_an_image_and_combines_statuses(image):
    img = image / "img"
    out = cli("check", "-q", img)
    assert out.returncode == 0, out.stderr
    assert [line for line in out.stdout.splitlines() if line.startswith("array")] == [
        "array '0':",
        "array '1':",
        "array '2':",
    ]
    damage(img / "2" / "c" / "0" / "0")
    out = cli("check", "-q", image)
    assert out.returncode == 3, out.stderr
    assert "damaged shard 2/c/0/0" in out.stdout or "damaged shard img/2/c/0/0" in out.stdout
    assert "4 arrays in" in out.stdout and "1 with damage" in out.stdout
    report = json.loads(cli("check", "-q", "--json", image).stdout)
    assert not report["ok"]
    assert [(a["path"], a["ok"]) for a in report["arrays"]] == [
        ("extra", True),
        ("img/0", True),
        ("img/1", True),
        ("img/2", False),
    ]
    assert cli("check", "-q", "--repair", image).returncode == 4
    assert cli("check", "-q", image).returncode == 0


def test_a_file_is_not_a_zarr_array(tmp_path):
    tif = tmp_path / "stack.tif"
    tif.write_bytes(b"II*\x00")
    for args in (["info", tif], ["check", tif], ["copy", tif, tmp_path / "o.zarr"]):
        out = cli(*args)
        assert out.returncode == 1
        assert f"'{tif}' is a file, not a Zarr array" in out.stderr, out.stderr
        assert "tifffile" in out.stderr and "Not a directory" not in out.stderr
    out = cli("info", tmp_path / "missing.zarr")
    assert out.returncode == 1
    assert out.stderr.strip() == (
        f"shardwright: error: no Zarr array at '{tmp_path / 'missing.zarr'}' "
        "(no zarr.json or .zarray there)"
    )
    with pytest.raises(sw.NotAnArrayError, match="is a file, not a Zarr array"):
        sw.copy(tif, tmp_path / "o.zarr")
