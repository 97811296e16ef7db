"""Awaitable writes: the blocking calls of a writer or a transaction (``w[key] = data``,
which may wait for the encoders, and the commit) run off the event loop, one at a time, in
the order of the calls.

Each writer gets a :class:`SerialRunner` at its first awaitable call. ``write_async`` and
``commit_async`` queue their work when they are *called* (as obstore's ``*_async`` methods
start theirs) and return a coroutine that waits for its outcome. Queueing at the call, not
at the first step of a coroutine, is what makes the order the order of the calls:
``create_task(w.write_async(...))`` followed by ``await w.commit_async()`` commits after
the write, although the task has not started yet. (An ``async def`` body would run only
when its task first runs, after the commit was queued.)
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import threading
from collections import deque
from collections.abc import Callable, Coroutine
from concurrent.futures import Future
from types import TracebackType
from typing import Any, TypeVar

from ._errors import ShardwrightError

_R = TypeVar("_R")
_F = TypeVar("_F", bound=Callable[..., Any])

Pending = Coroutine[Any, Any, _R]
"""The coroutine an awaitable call returns: its work is already queued; awaiting it gives
the outcome (the result, or the work's exception)."""

# One queued call: the future of its outcome, the caller's context, the call, and what to
# run instead if the future was cancelled before the call started (or None).
_Job = tuple["Future[Any]", contextvars.Context, Callable[[], Any], Callable[[], Any] | None]


class SerialRunner:
    """Runs blocking calls one at a time, in the order they were queued, on a thread that
    drains the queue and ends when it is empty (an idle writer holds no thread): a thread
    of the running event loop's default executor (where ``asyncio.to_thread`` runs), or
    a thread of its own when queued outside a running loop. A call cancelled before it
    started does not run; one that started runs to its end (a thread cannot be
    interrupted), and the next waits for it."""

    __slots__ = ("_draining", "_jobs", "_lock", "failure")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: deque[_Job] = deque()
        self._draining = False
        # The first awaitable write that failed: the commit aborts instead.
        self.failure: BaseException | None = None

    def submit(
        self, fn: Callable[[], _R], *, if_cancelled: Callable[[], Any] | None = None
    ) -> Future[_R]:
        """Queue ``fn()`` after every call queued before it (it runs in a copy of the
        caller's context variables); returns the future of its outcome. If that future is
        cancelled before ``fn`` starts, ``if_cancelled()`` (when given) runs in its turn
        instead."""
        future: Future[_R] = Future()
        with self._lock:
            self._jobs.append((future, contextvars.copy_context(), fn, if_cancelled))
            start = not self._draining
            self._draining = True
        if start:
            self._start()
        return future

    def _start(self) -> None:
        try:
            asyncio.get_running_loop().run_in_executor(None, self._drain)
        except RuntimeError:  # no running loop, or its default executor is shut down
            threading.Thread(target=self._drain, name="shardwright-write-async").start()

    def _drain(self) -> None:
        while True:
            with self._lock:
                if not self._jobs:
                    self._draining = False
                    return
                future, context, fn, if_cancelled = self._jobs.popleft()
            if not future.set_running_or_notify_cancel():
                if if_cancelled is not None:
                    _call(context, if_cancelled)  # nobody awaits its outcome any more
                continue
            result, error = _call(context, fn)
            del fn  # drop the call's data now, not at the next job
            if error is None:
                future.set_result(result)
            else:
                future.set_exception(error)
            del result, error


def _call(context: contextvars.Context, fn: Callable[[], Any]) -> tuple[Any, BaseException | None]:
    """``fn()``'s result or exception (caught here, so that its traceback holds this frame
    only, not the queue's)."""
    try:
        return context.run(fn), None
    except BaseException as err:
        return None, err


async def _outcome(future: Future[_R], queue: SerialRunner | None) -> _R:
    try:
        return await asyncio.wrap_future(future)
    except BaseException as err:
        if queue is not None and queue.failure is err:
            queue.failure = None  # the caller has it now, as after a failed assignment
        raise


def _pending(future: Future[_R], name: str, queue: SerialRunner | None = None) -> Pending[_R]:
    """A coroutine awaiting ``future``, named for the warning Python gives when it is
    never awaited (the work ran all the same). With ``queue``, a failure it hands to its
    awaiter no longer stops the queue's commit."""
    coro = _outcome(future, queue)
    coro.__name__ = name.rpartition(".")[2]
    coro.__qualname__ = name
    return coro


def coroutine_function(fn: _F) -> _F:
    """Mark ``fn`` (which returns a coroutine) as a coroutine function for
    ``inspect.iscoroutinefunction`` (Python 3.12+)."""
    mark = getattr(inspect, "markcoroutinefunction", None)
    return fn if mark is None else mark(fn)


def runner(owner: Any) -> SerialRunner:
    """The runner of ``owner`` (a writer or a transaction), made at its first use."""
    found = owner.__dict__.get("_async_runner")
    if found is None:
        found = owner.__dict__.setdefault("_async_runner", SerialRunner())
    return found


def write(owner: Any, key: Any, data: Any) -> Pending[None]:
    """Queue ``owner[key] = data`` (see :class:`SerialRunner`); the coroutine awaiting it.

    ``hold(data)`` runs here, on the caller's thread, as the assignment runs it: the array
    stays alive until the caller's next assignment. The worker thread keeps nothing (its
    thread-local would otherwise pin up to 16 MiB per executor thread for the life of the
    loop)."""
    from ._values import hold

    hold(data)
    queue = runner(owner)

    def assign() -> None:
        try:
            owner[key] = data
        except BaseException as err:
            queue.failure = queue.failure or err  # unless awaited, the commit aborts
            raise
        finally:
            hold(None)

    return _pending(queue.submit(assign), f"{type(owner).__name__}.write_async", queue)


def _refuse_after_failure(owner: Any, queue: SerialRunner) -> None:
    """If an awaitable write failed and nobody awaited it (so nobody saw the error), abort
    ``owner`` and raise: a commit must not store the writes around an unseen failure. (A
    failure raised into an ``await`` is the caller's to handle, as a failed assignment
    is: the writer stays usable.)"""
    if queue.failure is not None and not owner.closed:
        owner.abort()
        raise ShardwrightError(
            f"a write_async call to this {type(owner).__name__} failed ({queue.failure}); "
            "nothing was stored"
        ) from queue.failure


def commit(owner: Any) -> Pending[Any]:
    """Queue ``owner.commit()`` after the pending awaitable writes; the coroutine awaiting
    it. If one of them failed, the owner is aborted instead and the error raised."""
    queue = runner(owner)

    def finish() -> Any:
        _refuse_after_failure(owner, queue)
        return owner.commit()

    return _pending(queue.submit(finish), f"{type(owner).__name__}.commit_async")


async def leave(
    owner: Any,
    exc_type: type[BaseException] | None,
    exc: BaseException | None,
    tb: TracebackType | None,
) -> None:
    """``async with`` exit: once the pending awaitable writes are done, what the ``with``
    exit does (commit, or abort if the block raised), off the event loop. If this await is
    cancelled before that starts, the writer is aborted instead (nothing is stored)."""
    queue = runner(owner)

    def finish() -> None:
        if exc_type is None:
            _refuse_after_failure(owner, queue)
        owner.__exit__(exc_type, exc, tb)

    future = queue.submit(
        finish,
        if_cancelled=lambda: owner.__exit__(asyncio.CancelledError, None, None),
    )
    await asyncio.wrap_future(future)
