"""``python -m shardwright``: the command line (see ``shardwright._cli``)."""

from ._cli import console

console()
