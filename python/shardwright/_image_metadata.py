"""The physical metadata arguments of :func:`shardwright.pyramid` and
:func:`shardwright.dask.pyramid` (``scale``, ``translation``, ``units``, ``channels``),
turned into what the engine takes. The engine checks them against the image (lengths,
units, colours, the channel axis) and writes them as OME-Zarr 0.5 metadata."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

ChannelSpec = str | Mapping[str, Any]


def _floats(values: Sequence[float] | None, what: str) -> list[float] | None:
    """``values`` as floats (``None`` stays ``None``).

    >>> _floats((1, 0.406), "scale")
    [1.0, 0.406]
    >>> _floats("1,2", "scale")
    Traceback (most recent call last):
    TypeError: scale must be a sequence of numbers, one per axis; got '1,2'
    """
    if values is None:
        return None
    try:
        if isinstance(values, (str, bytes)):
            raise TypeError
        return [float(v) for v in values]
    except (TypeError, ValueError) as err:
        raise TypeError(
            f"{what} must be a sequence of numbers, one per axis; got {values!r}"
        ) from err


def _channels(channels: Sequence[ChannelSpec] | None) -> list[tuple[str | None, str | None]] | None:
    """``channels`` as ``(label, color)`` pairs: each a label, or a dict with ``"label"``
    and/or ``"color"``.

    >>> _channels(["DAPI", {"label": "GFP", "color": "00FF00"}, {"color": "red"}])
    [('DAPI', None), ('GFP', '00FF00'), (None, 'red')]
    >>> _channels([{"colour": "red"}])
    Traceback (most recent call last):
    TypeError: channel 0: unknown keys ['colour'] (a channel dict has 'label' and 'color')
    """
    if channels is None:
        return None
    if isinstance(channels, (str, Mapping)):
        raise TypeError(
            "channels must be a list with one entry per channel (a label, or a dict with "
            f"'label' and 'color'); got {channels!r}"
        )
    out: list[tuple[str | None, str | None]] = []
    for i, channel in enumerate(channels):
        if isinstance(channel, str):
            out.append((channel, None))
            continue
        if not isinstance(channel, Mapping):
            raise TypeError(
                f"channel {i} must be a label or a dict with 'label' and 'color'; got {channel!r}"
            )
        unknown = sorted(str(k) for k in channel if k not in ("label", "color"))
        if unknown:
            raise TypeError(
                f"channel {i}: unknown keys {unknown} (a channel dict has 'label' and 'color')"
            )
        label, color = channel.get("label"), channel.get("color")
        out.append((None if label is None else str(label), None if color is None else str(color)))
    return out


def physical_settings(
    scale: Sequence[float] | None,
    translation: Sequence[float] | None,
    units: Sequence[str | None] | None,
    channels: Sequence[ChannelSpec] | None,
) -> dict[str, Any]:
    """The engine's settings for the physical metadata.

    >>> physical_settings((1, 0.5), None, ["um", None], ["DAPI"])["units"]
    ['um', None]
    """
    return {
        "scale": _floats(scale, "scale"),
        "translation": _floats(translation, "translation"),
        "units": None if units is None else [None if u is None else str(u) for u in units],
        "channels": _channels(channels),
    }
