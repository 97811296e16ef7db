"""What an :class:`Array`'s ``zarr.json`` says, in zarr-python's terms: its user
attributes (read and written), its ``info`` summary, and compressors given as zarr-python
codec objects."""

from __future__ import annotations

import json
import math
import operator
from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence
from typing import Any

import numpy as np

from ._errors import BoundsError, ShapeError, UnsupportedError


def _json_value(value: Any) -> Any:
    """numpy scalars and arrays as the JSON values they hold (for ``json.dumps``)."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(
        f"attribute values must be JSON-serializable (dict, list, str, int, float, bool, "
        f"None, or numpy scalars and arrays); got {type(value).__name__}"
    )


def attributes_json(attributes: Mapping[str, Any]) -> str:
    """``attributes`` as the text of a JSON object, or a ``TypeError`` naming what is not
    JSON (NaN and infinities are not: JSON has no such numbers).

    >>> attributes_json({"scale": np.float32(0.5), "axes": ["y", "x"]})
    '{"scale": 0.5, "axes": ["y", "x"]}'
    """
    if not isinstance(attributes, Mapping):
        raise TypeError(f"attributes must be a dict, got {type(attributes).__name__}")
    for key in attributes:
        if not isinstance(key, str):
            raise TypeError(f"attribute names must be strings, got {key!r}")
    try:
        return json.dumps(dict(attributes), default=_json_value, allow_nan=False)
    except ValueError as err:
        raise TypeError(
            f"attribute values must be JSON: NaN and infinities are not ({err}); store None "
            "or a string such as 'NaN'"
        ) from err


class Attributes(MutableMapping[str, Any]):
    """An array's user attributes (``zarr.json``'s ``attributes``), as zarr-python's
    ``Array.attrs``: read like a dict; each change (``attrs[k] = v``, ``del attrs[k]``,
    ``update``, ``put``, ``clear``) rewrites ``zarr.json`` at once (``update`` and
    ``put`` with one write), applied to the attributes stored then, so changes made
    meanwhile through another handle are kept (``put`` and ``clear`` replace them all).
    Values must be JSON (numpy scalars and arrays are turned into numbers and lists).

    >>> import tempfile, shardwright as sw
    >>> a = sw.create(tempfile.mkdtemp() + "/a.zarr", shape=(4,), dtype="uint8", chunks=(2,))
    >>> a.attrs["units"] = "nm"
    >>> a.attrs.update(scale=0.5, axes=["x"])
    >>> del a.attrs["axes"]
    >>> sw.open(a.path).attrs.asdict()
    {'units': 'nm', 'scale': 0.5}
    >>> a.attrs.put({"only": 1}); a.attrs.asdict()
    {'only': 1}
    >>> a.attrs.clear(); len(a.attrs)
    0
    """

    def __init__(
        self,
        read: Callable[[], dict[str, Any]],
        write: Callable[[str | None, str, list[str]], None],
    ) -> None:
        self._read = read
        self._write = write

    def asdict(self) -> dict[str, Any]:
        """A copy of the attributes as a plain dict."""
        return dict(self._read())

    def put(self, attributes: Mapping[str, Any]) -> None:
        """Replace all attributes with ``attributes`` (one write)."""
        self._write(attributes_json(attributes), "{}", [])

    def update(self, *args: Any, **kwargs: Any) -> None:  # type: ignore[override]
        """Set several attributes with one write (as ``dict.update``)."""
        self._write(None, attributes_json(dict(*args, **kwargs)), [])

    def clear(self) -> None:
        """Remove every attribute (one write)."""
        self.put({})

    def __getitem__(self, key: str) -> Any:
        return self._read()[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.update({key: value})

    def __delitem__(self, key: str) -> None:
        if key not in self._read():
            raise KeyError(key)
        self._write(None, "{}", [key])

    def __iter__(self) -> Iterator[str]:
        return iter(self.asdict())

    def __len__(self) -> int:
        return len(self._read())

    def __repr__(self) -> str:
        return f"Attributes({self.asdict()!r})"


def _codec_text(codec: Mapping[str, Any]) -> str:
    configuration = codec.get("configuration") or {}
    inside = ", ".join(f"{k}={v!r}" for k, v in configuration.items())
    return f"{codec['name']}({inside})"


def info_text(array: Any) -> str:
    """The summary ``Array.info`` prints, in zarr-python's layout.

    >>> import tempfile, shardwright as sw
    >>> a = sw.create(tempfile.mkdtemp() + "/a.zarr", shape=(10, 12), dtype="uint16",
    ...               chunks=(2, 3), shards=(4, 6))
    >>> print(a.info)  # doctest: +ELLIPSIS
    Type               : Array
    Zarr format        : 3
    Data type          : uint16
    Fill value         : 0
    Shape              : (10, 12)
    Shard shape        : (4, 6)
    Chunk shape        : (2, 3)
    Order              : C
    Read-only          : False
    Location           : file:///.../a.zarr
    Dimension names    : None
    Compressors        : zstd(level=0, checksum=False)
    No. bytes          : 240 (240 B)
    No. shards         : 6
    No. chunks         : 20
    Attributes         : 0
    """
    rows: list[tuple[str, Any]] = [
        ("Type", "Array"),
        ("Zarr format", 3),
        ("Data type", array.dtype),
        ("Fill value", array.fill_value.item()),
        ("Shape", array.shape),
    ]
    sharded = array._shards is not None
    if sharded:
        rows.append(("Shard shape", array.shards if array._regular else "<variable>"))
    rows += [
        ("Chunk shape", array.chunks if array._regular or sharded else "<variable>"),
        ("Order", "C"),
        ("Read-only", array.read_only),
        ("Location", array.url),
        ("Dimension names", array.dimension_names),
        ("Compressors", ", ".join(_codec_text(c) for c in array.compressors) or "none"),
        ("No. bytes", f"{array.nbytes} ({_size_text(array.nbytes)})"),
        ("No. shards", array.nshards),
        ("No. chunks", array.nchunks),
        ("Attributes", len(array.attrs)),
    ]
    return "\n".join(f"{name:<19}: {value}" for name, value in rows)


def _size_text(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    exponent = min(int(math.log(n, 1024)), 5)
    return f"{n / 1024**exponent:.1f} {'BKMGTP'[exponent]}iB".replace(" BiB", " B")


class ArrayInfo:
    """What :attr:`Array.info` returns: printed (or ``repr``-ed), the summary table.

    >>> print(ArrayInfo("Type               : Array"))
    Type               : Array
    """

    def __init__(self, text: str) -> None:
        self._text = text

    def __repr__(self) -> str:
        return self._text

    __str__ = __repr__


def compressors_of(metadata: Mapping[str, Any]) -> tuple[dict[str, Any], ...]:
    """The bytes-to-bytes codecs of an array's ``zarr.json`` (inside ``sharding_indexed``
    for a sharded array), as their metadata dicts.

    >>> zstd = {"name": "zstd", "configuration": {"level": 3}}
    >>> compressors_of({"codecs": [{"name": "bytes"}, zstd]})
    ({'name': 'zstd', 'configuration': {'level': 3}},)
    """

    def entries(codecs: Any) -> list[dict[str, Any]]:  # a codec may be written as its name
        return [{"name": c} if isinstance(c, str) else dict(c) for c in codecs or []]

    codecs = entries(metadata.get("codecs"))
    if codecs and codecs[0]["name"] == "sharding_indexed":
        codecs = entries(codecs[0].get("configuration", {}).get("codecs"))
    return tuple(c for c in codecs if c["name"] not in ("bytes", "transpose", "crc32c"))


_LEVEL_NAMES = {"zstd": "level", "gzip": "level", "blosc": "clevel"}


def compressor_setting(compressors: Any, itemsize: int = 2) -> tuple[str, int | None]:
    """The ``(name, level)`` of ``compressors`` as zarr-python's ``create_array`` takes it:
    ``None`` or ``()`` (no compression), a name (``"zstd"``, ``"blosc"``, ``"gzip"``), a
    zarr-python codec object (``ZstdCodec(level=3)``, ``BloscCodec(cname="zstd")``,
    ``GzipCodec``), a codec's metadata dict, or a one-item list or tuple of those.
    ``itemsize``: the data type's, which sets the blosc shuffle shardwright writes.

    >>> compressor_setting("gzip"), compressor_setting(None)
    (('gzip', None), ('none', None))
    >>> compressor_setting([{"name": "zstd", "configuration": {"level": 7}}])
    ('zstd', 7)
    """
    if compressors is None:
        return "none", None
    if isinstance(compressors, str):
        return compressors, None
    if isinstance(compressors, list | tuple):
        if len(compressors) == 0:
            return "none", None
        if len(compressors) > 1:
            raise UnsupportedError(
                f"one compressor at most (shardwright writes bytes + one compressor); got "
                f"{len(compressors)}: {compressors!r}"
            )
        return compressor_setting(compressors[0], itemsize)
    codec = compressors.to_dict() if hasattr(compressors, "to_dict") else compressors
    if not isinstance(codec, Mapping) or "name" not in codec:
        raise TypeError(
            "compressors must be None, a name ('zstd', 'blosc', 'gzip'), a zarr-python codec "
            f"(zarr.codecs.ZstdCodec(level=3)) or a list of one; got {compressors!r}"
        )
    name = str(codec["name"])
    configuration = dict(codec.get("configuration") or {})
    for auto in ("shuffle", "typesize"):  # unset on a codec object: set from the data type
        if getattr(compressors, auto, "") is None:
            configuration.pop(auto, None)
    if name not in _LEVEL_NAMES:
        raise UnsupportedError(f"compressor {name!r} (supported: zstd, blosc, gzip)")
    level = configuration.pop(_LEVEL_NAMES[name], None)
    _refuse_other_settings(name, configuration, itemsize)
    return name, None if level is None else int(level)


def _refuse_other_settings(name: str, configuration: dict[str, Any], itemsize: int) -> None:
    """Refuse codec settings shardwright would not write as given (blosc's ``typesize``
    is the data type's, as zarr-python sets it)."""
    written: dict[str, Any] = {
        "zstd": {"checksum": False},
        "gzip": {},
        "blosc": {"cname": "zstd", "blocksize": 0},
    }[name]
    if name == "blosc":
        written["shuffle"] = "bitshuffle" if itemsize == 1 else "shuffle"
    for key, value in configuration.items():
        if name == "blosc" and key == "typesize":
            continue
        if key in written and _setting_value(value) == written[key]:
            continue
        raise UnsupportedError(
            f"{name} with {key}={_setting_value(value)!r}: shardwright writes {name} with "
            f"{', '.join(f'{k}={v!r}' for k, v in written.items()) or 'its level only'}"
        )


def _setting_value(value: Any) -> Any:
    return getattr(value, "value", value)  # zarr-python's enums (BloscCname.zstd)


def new_shape(given: tuple[Any, ...], shape: tuple[int, ...]) -> list[int]:
    """The shape ``resize(*given)`` asks for (``resize(3, 4)`` or ``resize((3, 4))``),
    checked against the array's ``shape``.

    >>> new_shape(((3, 4),), (5, 5)), new_shape((3, 4), (5, 5))
    ([3, 4], [3, 4])
    """
    if len(given) == 1 and isinstance(given[0], Sequence | np.ndarray):
        given = tuple(given[0])
    try:
        dims = [operator.index(n) for n in given]
    except TypeError as err:
        raise ShapeError(f"a shape is integers, got {given!r}") from err
    if len(dims) != len(shape):
        raise ShapeError(
            f"the new shape {tuple(dims)} has {len(dims)} dimensions; the array {shape} has "
            f"{len(shape)}"
        )
    if any(n < 0 for n in dims):
        raise ShapeError(f"a shape holds no negative extents, got {tuple(dims)}")
    return dims


def appended_shape(data: Any, axis: int, shape: tuple[int, ...]) -> tuple[int, int, list[int]]:
    """For ``append(data, axis)`` to an array of ``shape``: the axis (made non-negative),
    its old extent, and the grown shape.

    >>> appended_shape(np.zeros((2, 3)), -2, (5, 3))
    (0, 5, [7, 3])
    """
    extent = np.shape(data)
    ndim = len(shape)
    if len(extent) != ndim:
        raise ShapeError(f"data to append has {len(extent)} dimensions, the array {ndim}")
    if not -ndim <= axis < ndim:
        raise BoundsError(f"axis {axis} is out of range for {ndim} dimensions")
    axis %= ndim
    expected = shape[:axis] + shape[axis + 1 :]
    if extent[:axis] + extent[axis + 1 :] != expected:
        raise ShapeError(
            f"data of shape {extent} does not fit the array {shape} along axis {axis}: the "
            f"other axes must be {expected}"
        )
    grown = list(shape)
    grown[axis] += extent[axis]
    return axis, shape[axis], grown
