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
    ``check``: 3 damage found, 4 all damage repaired; 130 interrupted: a long command
    stops cleanly when Python's signal handlers raise, e.g. ``KeyboardInterrupt``; 141 the
    output's reader went away)."""
    args = sys.argv[1:] if argv is None else argv
    return _core.run_cli(["shardwright", *args])


def _terminate(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def console() -> None:
    """The console script's entry point: exit with :func:`main`'s code. A long command
    (``pyramid``, ``copy``, ``check``, ``demo``) stops cleanly on Ctrl-C or SIGTERM, as in
    the cargo-built binary: no new shard, uploads aborted, temporary files removed, exit
    130. Other commands end at once on Ctrl-C (they run without the GIL, where Python's own
    handler would only set a flag nobody looks at)."""
    args = sys.argv[1:]
    if args and args[0] in _LONG:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, _terminate)
    else:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
    try:
        code = main(args)
    except KeyboardInterrupt:  # a signal after the command's last look
        code = 130
    sys.exit(code)
