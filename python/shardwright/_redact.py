"""Keeping credentials out of messages: a URL can carry them (a SAS token's ``sig=`` in
its query, ``user:password@`` before its host). Python's messages that name a URL pass it
through :func:`redact`, as the engine's do (``shardwright_object_store::redact``, which
also hides the values of secret storage options)."""

from __future__ import annotations

import re

# A URL in a message: a scheme, "://", and everything up to white space or a quote.
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'`<>]*")
# What ends the authority of a URL (WHATWG's reading), and its path.
_AUTHORITY_END = re.compile(r"[/\\?#]")
# Punctuation that ends a message after a URL's query: kept.
_TRAILING = re.compile(r"[)\]}.,;:!]*$")


def redact(text: str) -> str:
    """``text`` with the userinfo (``user:password@``), the query (``?…``) and the
    fragment (``#…``) removed from every URL (``scheme://…``) in it.

    >>> redact("'az://container/a.zarr?sv=2022-11-02&sig=c2VjcmV0'")
    "'az://container/a.zarr'"
    >>> redact("(see http://me:pw@host:9/b/k#top).")
    '(see http://host:9/b/k).'
    >>> redact("no URL here: a?b=c")
    'no URL here: a?b=c'
    """
    return _URL.sub(_clean, text)


def _clean(match: re.Match[str]) -> str:
    scheme, rest = match.group(0).split("://", 1)
    end = _AUTHORITY_END.search(rest)
    cut = end.start() if end else len(rest)
    host = rest[:cut].rpartition("@")[2]
    path = rest[cut:]
    query = min((i for i in (path.find("?"), path.find("#")) if i >= 0), default=len(path))
    kept = _TRAILING.search(path[query:])
    return f"{scheme}://{host}{path[:query]}{kept.group(0) if kept else ''}"
