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


def main(argv: list[str] | None = None) -> int:
    """Run ``shardwright ARGS...``; returns the exit code (0 ok, 1 failed, 2 bad usage;
    ``check``: 3 damage found, 4 all damage repaired)."""
    args = sys.argv[1:] if argv is None else argv
    return _core.run_cli(["shardwright", *args])


def console() -> None:
    """The console script's entry point: exit with :func:`main`'s code. Ctrl-C ends the
    process at once, as it does the cargo-built binary (the command runs without the GIL,
    where Python's own handler would only set a flag nobody looks at)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    sys.exit(main())
