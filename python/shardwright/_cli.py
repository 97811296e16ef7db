"""The ``shardwright`` command (a console script installed by ``pip install``): the same
command line as the binary cargo builds, run inside the extension, so Python users never
need cargo.

>>> import subprocess, sys
>>> out = subprocess.run([sys.executable, "-m", "shardwright", "--version"],
...                      capture_output=True, text=True).stdout
>>> out.startswith("shardwright ")
True
"""

from __future__ import annotations

import signal
import sys

from . import _core

#: The commands that stop cleanly on Ctrl-C or SIGTERM (they ask after each shard).
_LONG = {"pyramid", "copy", "check", "demo"}


def main(argv: list[str] | None = None) -> int:
    """Run ``shardwright ARGS...``; returns the exit code (0 ok, 1 failed, 2 bad usage;
    ``check``: 3 damage found, 4 all damage repaired; 141 the output's reader went away).
    A long command stops cleanly when one of Python's signal handlers raises (Ctrl-C's
    ``KeyboardInterrupt``, a SIGALRM handler's ``TimeoutError``): it prints "interrupted:
    ..." and the exception propagates to the caller."""
    args = sys.argv[1:] if argv is None else argv
    return _core.run_cli(["shardwright", *args])


_STOPPING = (signal.SIGINT, signal.SIGTERM)


def _install_stop_handlers() -> dict[int, object]:
    """Make Ctrl-C and SIGTERM raise ``KeyboardInterrupt`` once, then end the process at
    once (their default disposition); a signal ignored at start stays ignored. Returns the
    previous dispositions."""
    previous = {signum: signal.getsignal(signum) for signum in _STOPPING}

    def stop(signum: int, frame: object) -> None:
        for other in _STOPPING:  # a second signal: the default disposition ends us
            if previous[other] is not signal.SIG_IGN:
                signal.signal(other, signal.SIG_DFL)
        raise KeyboardInterrupt

    for signum in _STOPPING:
        if previous[signum] is not signal.SIG_IGN:
            signal.signal(signum, stop)
    return previous


def console() -> None:
    """The console script's entry point: exit with :func:`main`'s code. A long command
    (``pyramid``, ``copy``, ``check``, ``demo``) stops cleanly on Ctrl-C or SIGTERM, as in
    the cargo-built binary: no new shard, uploads aborted, temporary files removed, exit
    130; a second signal ends the process at once, and a signal ignored at start (``cmd &``
    in a script) stays ignored. Other commands end at once on Ctrl-C (they run without the
    GIL, where Python's own handler would only set a flag nobody looks at)."""
    args = sys.argv[1:]
    if args and args[0] in _LONG:
        previous = _install_stop_handlers()
    else:
        previous = {signal.SIGINT: signal.getsignal(signal.SIGINT)}
        if previous[signal.SIGINT] is not signal.SIG_IGN:
            signal.signal(signal.SIGINT, signal.SIG_DFL)
    try:
        code = main(args)
    except KeyboardInterrupt:  # the command stopped (it said so), or ended just before
        code = 130
    finally:
        for signum, handler in previous.items():
            if handler is not None:
                signal.signal(signum, handler)  # type: ignore[arg-type]
    sys.exit(code)
