"""``python -m shardwright``: the command line (see ``shardwright._cli``)."""

if __name__ == "__main__":
    from ._cli import console

    console()
