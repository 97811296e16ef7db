"""docs/errors.md read for its tests (test_error_catalogue*.py): the tables, the catalogue
of bad inputs, and ``expect(case_id)``, which checks that a block raises the class the doc
names for the case, with a message matching the doc's (``…``: any text)."""

from __future__ import annotations

import builtins
import contextlib
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import shardwright as sw
from shardwright import _cli

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "errors.md"
RUST = ROOT / "crates" / "shardwright" / "src"
ENUMS = {  # the Rust error types the doc lists, and where they are defined
    "Error": "error.rs",
    "DomainError": "domain/mod.rs",
    "LayoutError": "layout/mod.rs",
    "FormatError": "format/mod.rs",
    "StoreError": "store/mod.rs",
    "PyramidError": "pyramid/mod.rs",
    "DownsampleError": "pyramid/downsample/mod.rs",
    "TiffError": "../../shardwright-tiff/src/error.rs",
}

# --------------------------------------------------------------------------------------
# reading the doc
# --------------------------------------------------------------------------------------


def _cell(text: str) -> str:
    """A table cell's text without its code-span backticks (`` `x` `` or ``` ``x`` ```)."""
    text = text.strip()
    m = re.fullmatch(r"(`+) ?(.*?) ?\1", text)
    return m.group(2) if m else text


def _tables(text: str) -> dict[str, list[dict[str, str]]]:
    """Each markdown table of ``text``, keyed by the title of the section above it (the
    last ``#`` heading), as a list of rows (header -> cell); code spans unwrapped."""
    tables: dict[str, list[dict[str, str]]] = {}
    heading, header = "", None
    for line in text.splitlines():
        if line.startswith("#"):
            heading, header = _cell(line.lstrip("#")), None
        elif line.startswith("|"):
            cells = [c for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
            if header is None:
                header = [c.strip() for c in cells]
                tables[heading] = []
            elif not set(line) <= set("|- "):
                assert len(cells) == len(header), f"row of {len(cells)} cells: {line}"
                tables[heading].append({h: _cell(c) for h, c in zip(header, cells)})
        else:
            header = None
    return tables


TABLES = _tables(DOC.read_text(encoding="utf-8"))
CASES = {row["id"]: row for row in TABLES["Catalogue of bad inputs"]}


def _pattern(message: str) -> re.Pattern[str]:
    """The doc's message as a regex: literal, with ``…`` matching any text."""
    return re.compile(".*?".join(re.escape(p) for p in message.split("…")), re.DOTALL)


def _exception_class(name: str) -> type[BaseException]:
    found = getattr(sw, name, None) or getattr(builtins, name, None)
    assert isinstance(found, type) and issubclass(found, BaseException), name
    return found


def _check_message(case_id: str, message: str) -> None:
    expected = CASES[case_id]["message"]
    assert _pattern(expected).search(message), (
        f"{case_id}: the message\n  {message}\ndoes not match docs/errors.md's\n  {expected}"
    )


@contextlib.contextmanager
def expect(case_id: str) -> Iterator[None]:
    """The block must raise exactly the class the doc names for ``case_id``, with a
    message that matches the doc's."""
    case = CASES[case_id]
    cls = _exception_class(case["raises"])
    with pytest.raises(BaseException) as info:
        yield
    assert type(info.value) is cls, (
        f"{case_id}: raised {type(info.value).__name__}: {info.value}; the doc says {cls.__name__}"
    )
    _check_message(case_id, str(info.value))


def expect_none(case_id: str) -> None:
    """A catalogued input that raises nothing (the doc says what happens instead)."""
    assert CASES[case_id]["raises"] == "none", case_id


def expect_cli(case_id: str, capfd: pytest.CaptureFixture[str], *args: str) -> None:
    """``shardwright ARGS`` (run in this process, as the console script runs it) must exit
    with the doc's status and print its message on stderr."""
    status = int(CASES[case_id]["raises"].removeprefix("exit "))
    capfd.readouterr()
    code = _cli.main([str(a) for a in args])
    err = capfd.readouterr().err
    assert code == status, (case_id, code, err)
    _check_message(case_id, err)


def variants(enum: str, path: Path) -> dict[str, str | None]:
    """The variants of ``pub enum {enum}`` in ``path`` and the format string of each
    one's ``#[error(...)]`` (None for ``transparent``)."""
    text = path.read_text(encoding="utf-8")
    body = re.search(rf"pub enum {enum} \{{\n(.*?)\n\}}", text, re.DOTALL)
    assert body, (enum, path)
    out: dict[str, str | None] = {}
    attribute = ""
    for line in body.group(1).splitlines():
        stripped = line.strip()
        if stripped.startswith("#[error") or (attribute and not attribute.endswith(")]")):
            attribute = (attribute + " " + stripped).strip()
            continue
        m = re.match(r"^    ([A-Z]\w*)\b", line)
        if m:
            fmt = re.search(r'"((?:[^"\\]|\\.)*)"', attribute)
            out[m.group(1)] = None if "transparent" in attribute or not fmt else fmt.group(1)
            attribute = ""
    return out


def template(fmt: str) -> re.Pattern[str]:
    """A thiserror format string as a regex: every ``{…}`` argument matches any text."""
    parts = re.split(r"\{[^{}]*\}", fmt.replace("\\'", "'").replace('\\"', '"'))
    return re.compile(".+?".join(re.escape(p) for p in parts), re.DOTALL)


def array(folder: Path) -> sw.Array:
    """The catalogue's ``a``: (10, 7) uint16, chunks (4, 4), shards (8, 8) (2 x 1 shards)."""
    return sw.create(folder / "a.zarr", shape=(10, 7), dtype="uint16", chunks=(4, 4), shards=(8, 8))
