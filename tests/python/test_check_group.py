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
    notes = tmp_path / "stack.txt"
    notes.write_text("neither a Zarr array nor a TIFF")
    for args in (["info", notes], ["check", notes], ["copy", notes, tmp_path / "o.zarr"]):
        out = cli(*args)
        assert out.returncode == 1
        assert f"'{notes}' is a file, not a Zarr array" in out.stderr, out.stderr
        assert "shardwright convert" in out.stderr and "Not a directory" not in out.stderr
    # a file with a TIFF header is read as a TIFF (convert, info, copy, pyramid): a
    # truncated one says so
    tif = tmp_path / "stack.tif"
    tif.write_bytes(b"II*\x00")
    for args in (["info", tif], ["copy", tif, tmp_path / "o.zarr"]):
        out = cli(*args)
        assert out.returncode == 1 and "not a readable TIFF" in out.stderr, out.stderr
    out = cli("info", tmp_path / "missing.zarr")
    assert out.returncode == 1
    assert out.stderr.strip() == (
        f"shardwright: error: no Zarr array at '{tmp_path / 'missing.zarr'}' "
        "(no zarr.json or .zarray there)"
    )
    with pytest.raises(sw.NotAnArrayError, match="is a file, not a Zarr array"):
        sw.copy(notes, tmp_path / "o.zarr")
    with pytest.raises(sw.ShardwrightError, match="not a readable TIFF"):
        sw.copy(tif, tmp_path / "o.zarr")


@pytest.fixture
def levels(tmp_path) -> Path:
    """An OME-Zarr image with the levels 0, 1, 2."""
    img = tmp_path / "img.zarr"
    sw.pyramid(np.ones((64, 64), "uint8"), img, factors=(2, 2), levels=3)
    return img


def test_a_level_whose_zarr_json_does_not_parse_is_damage(levels):
    text = (levels / "1" / "zarr.json").read_text()
    (levels / "1" / "zarr.json").write_text(text[:20])
    report = sw.check(levels)
    assert not report.ok and list(report.arrays) == ["0", "2"]
    assert list(report.broken) == ["1"] and "does not parse" in report.broken["1"]
    assert "array '1':\n  damaged: its zarr.json does not parse" in str(report)
    assert "1 with damage" in str(report)
    out = cli("check", "-q", levels)
    assert out.returncode == 3, out.stdout + out.stderr
    assert "array '1':\n  damaged: its zarr.json does not parse" in out.stdout
    assert "check cannot repair it" in out.stdout and "damage left" in out.stdout
    out = cli("check", "-q", "--repair", levels)
    assert out.returncode == 3 and "--repair cannot mend it" in out.stdout
    report = json.loads(cli("check", "-q", "--json", levels).stdout)
    assert not report["ok"]
    assert [(a["path"], a["ok"]) for a in report["arrays"]] == [
        ("0", True),
        ("1", False),
        ("2", True),
    ]
    assert "does not parse" in report["arrays"][1]["damage"]


def test_a_level_the_image_lists_but_that_is_missing_is_damage(levels):
    import shutil

    shutil.rmtree(levels / "2")
    report = sw.check(levels)
    assert not report.ok and list(report.arrays) == ["0", "1"]
    assert report.broken == {
        "2": "missing: the image's multiscales metadata lists it, no zarr.json there"
    }
    out = cli("check", "-q", levels)
    assert out.returncode == 3, out.stdout + out.stderr
    assert "array '2':\n  damaged: missing: the image's multiscales metadata lists it" in (
        out.stdout
    )


def test_a_zarr_v2_member_is_not_checked_and_the_rest_is(levels):
    v2 = levels.parent / "plate.zarr"
    v2.mkdir()
    (v2 / "zarr.json").write_text('{"zarr_format": 3, "node_type": "group"}')
    levels.rename(v2 / "img")
    (v2 / "old").mkdir()
    (v2 / "old" / ".zarray").write_text(
        json.dumps(
            {
                "zarr_format": 2,
                "shape": [4],
                "chunks": [2],
                "dtype": "|u1",
                "compressor": None,
                "fill_value": 0,
                "filters": None,
                "order": "C",
            }
        )
    )
    report = sw.check(v2)
    assert list(report.arrays) == ["img/0", "img/1", "img/2"]
    assert list(report.not_checked) == ["old"] and "Zarr v2" in report.not_checked["old"]
    assert not report.ok and not report.complete and not report.damaged
    assert "array 'old':\n  not checked: a Zarr v2 array" in str(report)
    out = cli("check", "-q", v2)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "array 'old':\n  not checked: a Zarr v2 array" in out.stdout
    assert "1 not checked: incomplete" in out.stdout
    out = cli("check", "-q", "--json", v2)
    assert out.returncode == 1
    report = json.loads(out.stdout)
    assert not report["ok"] and not report["complete"]
    assert [a["path"] for a in report["arrays"]] == ["img/0", "img/1", "img/2", "old"]
    assert report["arrays"][3]["checked"] is False
    damage(v2 / "img" / "1" / "c" / "0" / "0")
    assert cli("check", "-q", v2).returncode == 3


def test_an_image_with_labels_checks_its_labels_too(levels):
    labels = levels / "labels"
    labels.mkdir()
    meta = {"zarr_format": 3, "node_type": "group", "attributes": {"ome": {"labels": ["cells"]}}}
    (labels / "zarr.json").write_text(json.dumps(meta))
    sw.pyramid(np.zeros((64, 64), "uint16"), labels / "cells", factors=(2, 2), levels=2)
    report = sw.check(levels)
    assert report.ok
    assert list(report.arrays) == ["0", "1", "2", "labels/cells/0", "labels/cells/1"]
    out = cli("check", "-q", levels)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "array 'labels/cells/1':" in out.stdout and "5 arrays in" in out.stdout
    with pytest.raises(sw.NotAnArrayError, match="'0', '1', '2', 'labels/cells/0'"):
        sw.open(levels)


def test_a_level_with_an_unsupported_codec_is_not_checked_and_the_rest_is(levels):
    meta = json.loads((levels / "1" / "zarr.json").read_text())
    meta["codecs"] = [{"name": "bogus"}]
    (levels / "1" / "zarr.json").write_text(json.dumps(meta))
    report = sw.check(levels)
    assert list(report.arrays) == ["0", "2"] and not report.ok and not report.complete
    assert "array codec 'bogus'" in report.not_checked["1"]
    out = cli("check", "-q", "--json", levels)
    assert out.returncode == 1, out.stdout + out.stderr
    entries = json.loads(out.stdout)["arrays"]
    assert [(a["path"], a.get("checked", True)) for a in entries] == [
        ("0", True),
        ("1", False),
        ("2", True),
    ]
