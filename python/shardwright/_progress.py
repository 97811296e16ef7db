"""Progress bars: tqdm when it is installed, otherwise a plain one — a line redrawn in
place on a terminal, one line per update (at most one a second) when not."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, TextIO


class Progress:
    """A progress bar over ``total`` items, as a context manager.

    ``show``: ``True`` for a bar on stderr (tqdm when installed), ``False`` for none, or a
    callable that receives a dict per update (``done``, ``total``, plus what ``update`` was
    given, e.g. ``bytes``).

    >>> import io
    >>> out = io.StringIO()
    >>> with Progress(3, "shards", show=True, stream=out, use_tqdm=False) as bar:
    ...     for _ in range(3):
    ...         bar.update()
    >>> print(out.getvalue().strip().splitlines()[-1])
    shardwright: 3/3 shards (100%)
    """

    def __init__(
        self,
        total: int,
        unit: str,
        *,
        show: bool | Callable[[dict[str, Any]], Any],
        stream: TextIO | None = None,
        use_tqdm: bool = True,
        desc: str = "shardwright",
    ) -> None:
        self.total = total
        self.done = 0
        self._unit = unit
        self._desc = desc
        self._callback = show if callable(show) else None
        self._enabled = bool(show) and self._callback is None
        self._stream = stream if stream is not None else sys.stderr
        self._tqdm: Any = None
        self._last_line = 0.0
        self._started = time.perf_counter()
        if self._enabled and use_tqdm:
            try:
                from tqdm.auto import tqdm
            except ImportError:
                pass
            else:
                self._tqdm = tqdm(total=total, unit=f" {unit}", desc=desc, file=self._stream)
        isatty = getattr(self._stream, "isatty", None)
        self._terminal = bool(isatty and isatty())

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def update(self, n: int = 1, **info: Any) -> None:
        """Count ``n`` more items done; ``info`` goes to a callable ``show``."""
        self.done += n
        if self._callback is not None:
            self._callback({"done": self.done, "total": self.total, **info})
        elif self._tqdm is not None:
            self._tqdm.update(n)
        elif self._enabled:
            now = time.perf_counter()
            last = self.done >= self.total
            if self._terminal:
                self._stream.write(f"\r{self._line()}")
                if last:
                    self._stream.write("\n")
                self._stream.flush()
            elif last or now - self._last_line >= 1.0:
                self._stream.write(self._line() + "\n")
                self._stream.flush()
                self._last_line = now

    def _line(self) -> str:
        percent = 100 * self.done // self.total if self.total else 100
        elapsed = time.perf_counter() - self._started
        rate = f", {self.done / elapsed:.1f} {self._unit}/s" if self._terminal and elapsed else ""
        return f"{self._desc}: {self.done}/{self.total} {self._unit} ({percent}%){rate}"

    def close(self) -> None:
        """End the bar (a terminal line that did not reach the total gets its newline)."""
        if self._tqdm is not None:
            self._tqdm.close()
            self._tqdm = None
        elif self._enabled and self._terminal and self.done < self.total:
            self._stream.write("\n")
            self._stream.flush()
        self._enabled = False
