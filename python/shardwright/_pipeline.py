"""``map_chunks``: fill an array chunk by chunk, shard after shard. With one thread (the
default) ``fn`` runs on the calling thread and each finished shard commits in the
background while the next one fills; with ``threads=N`` N threads each fill and store
shards of their own."""

from __future__ import annotations

import concurrent.futures
import contextlib
import inspect
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

import numpy as np

from ._domain import Domain
from ._errors import DTypeError, NotDurableError, ShapeError
from ._progress import Progress


class _Writable(Protocol):
    def write_shard(self, shard: Domain) -> Any: ...


class BackgroundCommits:
    """Shards committing in the background, oldest first, at most ``in_flight`` at once:
    :meth:`add` a shard's ``wait()`` (from ``ShardWriter._commit_background``), waiting
    for the oldest while full. A failed commit is kept in :attr:`failed` (with a note
    naming the shard, prefixed ``what``), never raised here: the caller starts no more
    shards and reports them. ``on_stored(shard, stats)`` follows each stored shard.

    >>> commits = BackgroundCommits(2, "demo")
    >>> for n in range(3):
    ...     commits.add(Domain((n,), (1,)), lambda: {"puts": 1})
    >>> commits.finish_all(); commits.stored, commits.failed
    (3, [])
    """

    def __init__(
        self,
        in_flight: int,
        what: str,
        on_stored: Callable[[Domain, dict[str, int]], None] | None = None,
    ) -> None:
        self.in_flight = max(1, in_flight)
        self.what = what
        self.on_stored = on_stored
        self.pending: deque[tuple[Domain, Callable[[], dict[str, int]]]] = deque()
        self.failed: list[BaseException] = []
        self.stored = 0

    def add(self, shard: Domain, wait: Callable[[], dict[str, int]]) -> None:
        self.pending.append((shard, wait))
        while len(self.pending) >= self.in_flight:
            self.finish_oldest()

    def finish_oldest(self) -> None:
        shard, wait = self.pending.popleft()
        try:
            stats = wait()
        except NotDurableError as err:
            # Stored and visible; only the flush to disk failed. Counted as stored, and
            # reported (the loop stops, as for any failed commit).
            err.add_note(f"{self.what}: shard {shard} was stored but may not be durable")
            self.failed.append(err)
            self.stored += 1
            return
        except Exception as err:
            err.add_note(f"{self.what}: shard {shard} was not stored")
            self.failed.append(err)
            return
        self.stored += 1
        if self.on_stored is not None:
            self.on_stored(shard, stats)

    def finish_all(self) -> None:
        while self.pending:
            self.finish_oldest()

    def finish_all_after_error(self) -> None:
        """After the caller's own error: every commit already started still finishes (a
        second Ctrl-C while waiting skips only the outcome of the commit being waited
        for, not the waits for the others; an ``on_stored`` that raises again is kept in
        :attr:`failed`, not raised over the first error)."""
        while self.pending:
            try:
                self.finish_oldest()
            except KeyboardInterrupt:
                pass
            except Exception as err:  # on_stored raised: reported with the first error
                self.failed.append(err)


def map_chunks(
    array: _Writable,
    shards: Iterable[Domain],
    fn: Callable[[Domain], Any],
    *,
    workers: int | None,
    progress: bool | Callable[[dict[str, Any]], Any],
    threads: int = 1,
) -> dict[str, Any]:
    """The loop of :meth:`Array.map_chunks` over ``shards`` (see its docstring)."""
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"map_chunks: threads must be an int >= 1, got {threads!r}")
    shards = list(shards)
    if threads > 1:
        return _map_on_threads(array, shards, fn, threads=threads, progress=progress)
    totals: dict[str, Any] = {"shards_written": 0}
    started = time.perf_counter()

    with Progress(len(shards), "shards", show=progress) as bar:

        def stored(shard: Domain, stats: dict[str, int]) -> None:
            for k, v in stats.items():
                totals[k] = totals.get(k, 0) + v
            bar.update(bytes=stats.get("bytes_written", 0), shard=shard)

        commits = BackgroundCommits(workers or 2, "map_chunks", stored)
        failed = commits.failed
        # One thread (this one) calls fn chunk after chunk, so fn never contends for the
        # GIL; each finished shard commits on a background thread while the next fills.
        try:
            for shard in shards:
                with array.write_shard(shard) as w:
                    for chunk in w.inner_chunks():
                        fill_chunk(w, chunk, fn)
                    commits.add(shard, w._commit_background())
                if failed:
                    break  # a shard could not be stored: start no more
            commits.finish_all()
        except BaseException as err:
            # fn (or a write) raised: the shard being filled is not stored; the commits
            # already started still finish, and their failures are reported with it.
            commits.finish_all_after_error()
            _note_stored(err, commits.stored, len(shards))
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
    totals["shards_written"] = commits.stored
    if failed:
        if len(failed) == 1:
            _note_stored(failed[0], commits.stored, len(shards))
            raise failed[0]
        raise ExceptionGroup(f"map_chunks: the commits of {len(failed)} shards failed", failed)
    totals["seconds"] = time.perf_counter() - started
    return totals


def fill_chunk(w: Any, chunk: Domain, fn: Callable[[Domain], Any]) -> None:
    """``w[chunk] = fn(chunk)``; when ``fn`` returns what cannot be written there
    (``None``, a coroutine or a Future, data of a shape that does not broadcast to the
    chunk's or of a dtype that does not cast), the error names the chunk and says what
    ``fn`` must return.

    >>> import numpy as np, tempfile, shardwright as sw
    >>> a = sw.create(tempfile.mkdtemp() + "/f.zarr", shape=(4, 4), dtype="uint8",
    ...               chunks=(2, 2), shards=(4, 4))
    >>> import textwrap
    >>> try:
    ...     a.map_chunks(lambda c: np.zeros(3, "uint8"))
    ... except sw.ShapeError as err:
    ...     print(textwrap.fill(str(err), 80))
    map_chunks: fn returned data of shape (3,) and dtype uint8 for the chunk [0:2,
    0:2]: fn must return an array of shape (2, 2) and dtype uint8, or a scalar or
    data that numpy broadcasts to that shape (data of shape (3,) does not broadcast
    to the region's shape (2, 2))
    """
    value = fn(chunk)
    if not isinstance(value, np.ndarray):
        _check_returned(value, chunk, w)
    try:
        w[chunk] = value
    except (ShapeError, DTypeError) as err:
        kind = DTypeError if isinstance(err, DTypeError) else ShapeError
        raise kind(
            f"map_chunks: fn returned {_described(value)} for the chunk {chunk}: "
            f"{_expected(w, chunk)} ({err})"
        ) from None


def _expected(w: Any, chunk: Domain) -> str:
    dtype = getattr(w, "_dtype", "of the array")
    return (
        f"fn must return an array of shape {chunk.shape} and dtype {dtype}, or a scalar or "
        "data that numpy broadcasts to that shape"
    )


def _described(value: Any) -> str:
    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    if isinstance(shape, tuple) and dtype is not None:
        return f"data of shape {shape} and dtype {dtype}"
    return f"a value of type {type(value).__name__}"


_VALUES = (list, tuple, bool, int, float, complex, np.generic)


def _check_returned(value: Any, chunk: Domain, w: Any) -> None:
    """Refuse ``None``, coroutines and Futures, naming the chunk."""
    if value is None:
        raise ShapeError(
            f"map_chunks: fn returned None for the chunk {chunk}: {_expected(w, chunk)} "
            "(is a return statement missing?)"
        )
    if isinstance(value, _VALUES) or hasattr(value, "__array__"):
        return  # dask arrays are awaitable too, and written as arrays
    if inspect.iscoroutine(value):
        value.close()  # never awaited, and never will be: no warning saying so
        raise DTypeError(
            f"map_chunks: fn returned a coroutine for the chunk {chunk}; map_chunks calls fn "
            "synchronously: return the array (an `async def` fn cannot be used; run its "
            f"awaits inside fn, e.g. with asyncio.run): {_expected(w, chunk)}"
        )
    if inspect.isawaitable(value) or isinstance(value, concurrent.futures.Future):
        raise DTypeError(
            f"map_chunks: fn returned a Future ({type(value).__name__}) for the chunk "
            f"{chunk}; map_chunks calls fn synchronously: return the array (e.g. call "
            f".result()): {_expected(w, chunk)}"
        )


def _note_stored(err: BaseException, stored: int, total: int) -> None:
    err.add_note(f"map_chunks: {stored} of {total} shards were stored before it stopped")


class _Stopped(Exception):
    """Raised inside a worker's block when another worker failed: its shard is aborted."""


def _map_on_threads(
    array: _Writable,
    shards: list[Domain],
    fn: Callable[[Domain], Any],
    *,
    threads: int,
    progress: bool | Callable[[dict[str, Any]], Any],
) -> dict[str, Any]:
    """``threads`` workers, each taking the next shard, filling it with ``fn`` and storing
    it when its block ends; after a failure (or Ctrl-C) no worker starts another shard and
    the shards being filled are aborted."""
    totals: dict[str, Any] = {"shards_written": 0}
    failed: list[BaseException] = []
    lock = threading.Lock()  # guards the shard iterator, totals, failed and the bar
    stop = threading.Event()
    queue = iter(shards)
    started = time.perf_counter()

    with Progress(len(shards), "shards", show=progress) as bar:

        def stored(shard: Domain, stats: dict[str, int]) -> None:
            with lock:
                totals["shards_written"] += 1
                for k, v in stats.items():
                    totals[k] = totals.get(k, 0) + v
                bar.update(bytes=stats.get("bytes_written", 0), shard=shard)

        def fill(shard: Domain) -> None:
            try:
                w = array.write_shard(shard)
                with w:
                    for chunk in w.inner_chunks():
                        if stop.is_set():
                            raise _Stopped
                        fill_chunk(w, chunk, fn)
            except _Stopped:
                return
            except NotDurableError as err:
                err.add_note(f"map_chunks: shard {shard} was stored but may not be durable")
                with lock:
                    totals["shards_written"] += 1
                raise
            except BaseException as err:
                err.add_note(f"map_chunks: shard {shard} was not stored")
                raise
            stored(shard, w.stats)

        def work() -> None:
            while not stop.is_set():
                with lock:
                    shard = next(queue, None)
                if shard is None:
                    return
                try:
                    fill(shard)
                except BaseException as err:
                    stop.set()
                    with lock:
                        failed.append(err)
                    return

        pool = ThreadPoolExecutor(threads, thread_name_prefix="shardwright-map")
        futures = [pool.submit(work) for _ in range(threads)]
        try:
            for future in futures:
                future.result()
        except BaseException as err:
            # Ctrl-C (or SystemExit) while waiting: the workers abort the shards they are
            # filling and start no more; the shards already stored stay.
            stop.set()
            for future in futures:
                with contextlib.suppress(BaseException):
                    future.result()
            _note_stored(err, totals["shards_written"], len(shards))
            for failure in failed:
                err.add_note(f"map_chunks: also failed: {failure!r}")
            raise
        finally:
            pool.shutdown(wait=True)
    if failed:
        if len(failed) == 1:
            _note_stored(failed[0], totals["shards_written"], len(shards))
            raise failed[0]
        if all(isinstance(err, Exception) for err in failed):
            raise ExceptionGroup(f"map_chunks: {len(failed)} shards failed", failed)
        raise BaseExceptionGroup(f"map_chunks: {len(failed)} shards failed", failed)
    totals["seconds"] = time.perf_counter() - started
    return totals
