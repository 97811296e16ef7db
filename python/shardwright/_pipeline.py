"""``map_chunks``: fill an array chunk by chunk, shard after shard, each finished shard
committing in the background while the next one fills."""

from __future__ import annotations

import contextlib
import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from ._domain import Domain
from ._errors import NotDurableError
from ._progress import Progress


class _Writable(Protocol):
    def write_shard(self, shard: Domain) -> Any: ...


def map_chunks(
    array: _Writable,
    shards: Iterable[Domain],
    fn: Callable[[Domain], Any],
    *,
    workers: int | None,
    progress: bool | Callable[[dict[str, Any]], Any],
) -> dict[str, Any]:
    """The loop of :meth:`Array.map_chunks` over ``shards`` (see its docstring)."""
    shards = list(shards)
    in_flight = max(1, workers or 2)
    totals: dict[str, Any] = {"shards_written": 0}
    pending: deque[tuple[Domain, Callable[[], dict[str, int]]]] = deque()
    failed: list[BaseException] = []
    started = time.perf_counter()

    with Progress(len(shards), "shards", show=progress) as bar:

        def finish_oldest() -> None:
            shard, wait = pending.popleft()
            try:
                stats = wait()
            except NotDurableError as err:
                # Stored and visible; only the flush to disk failed. Counted as stored,
                # and reported (the loop stops, as for any failed commit).
                err.add_note(f"map_chunks: shard {shard!r} was stored but may not be durable")
                failed.append(err)
                totals["shards_written"] += 1
                return
            except Exception as err:
                err.add_note(f"map_chunks: shard {shard!r} was not stored")
                failed.append(err)
                return
            totals["shards_written"] += 1
            for k, v in stats.items():
                totals[k] = totals.get(k, 0) + v
            bar.update(bytes=stats.get("bytes_written", 0), shard=shard)

        # One thread (this one) calls fn chunk after chunk, so fn never contends for the
        # GIL; each finished shard commits on a background thread while the next fills.
        try:
            for shard in shards:
                with array.write_shard(shard) as w:
                    for chunk in w.inner_chunks():
                        w[chunk] = fn(chunk)
                    commit = w._commit_background()
                pending.append((shard, commit))
                while len(pending) >= in_flight:
                    finish_oldest()
                if failed:
                    break  # a shard could not be stored: start no more
            while pending:
                finish_oldest()
        except BaseException as err:
            # fn (or a write) raised: the shard being filled is not stored; the commits
            # already started still finish (a second Ctrl-C while waiting skips only the
            # outcome of the commit being waited for, not the waits for the others), and
            # their failures are reported with it.
            while pending:
                with contextlib.suppress(KeyboardInterrupt):
                    finish_oldest()
            _note_stored(err, totals["shards_written"], len(shards))
            if failed and not isinstance(err, Exception):
                # KeyboardInterrupt, SystemExit: raised as themselves, failures as notes.
                for failure in failed:
                    err.add_note(f"map_chunks: also failed: {failure!r}")
                raise
            if failed:
                raise ExceptionGroup(
                    f"map_chunks: fn raised, and {len(failed)} shard(s) committing in the "
                    "background failed",
                    [err, *failed],
                ) from None
            raise
    if failed:
        if len(failed) == 1:
            _note_stored(failed[0], totals["shards_written"], len(shards))
            raise failed[0]
        raise ExceptionGroup(f"map_chunks: the commits of {len(failed)} shards failed", failed)
    totals["seconds"] = time.perf_counter() - started
    return totals


def _note_stored(err: BaseException, stored: int, total: int) -> None:
    err.add_note(f"map_chunks: {stored} of {total} shards were stored before it stopped")
