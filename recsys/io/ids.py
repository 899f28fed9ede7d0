"""What a valid item id is, the one definition every way in applies: the items CSV
(`recsys.io`), `PUT /admin/items`, the ids of `/events`, `/explain`, `/compare`,
`/recommend` (exclude, candidates) and of the URLs `/items/{item_id}`, `/admin/items/{item_id}`.

An id that one of them takes must work in all the others: the revision's items CSV must read
back (a NUL byte made every later change fail), a URL must reach it (clients and proxies
resolve "." and ".." segments away), an event must be able to name it (the same length limit).
The text of a request that the store keeps (queries, user, event and request ids) must be
storable by both backends: `storable_problem`.
"""

from __future__ import annotations

import re

MAX_ID_CHARS = 256  # an item id; also a filter key or value (api.limits)
# the last part of /items/{item_id}/similar, the one route below an item's own URL
SIMILAR = "similar"
# control characters (C0, DEL, C1), NUL among them: they break the CSV, logs and terminals
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
# a lone surrogate: JSON can escape one, but no UTF-8 file or database can hold it
_SURROGATE = re.compile("[\ud800-\udfff]")


def storable_problem(value: str) -> str | None:
    """What makes `value` impossible to store as text in SQLite and PostgreSQL alike (PostgreSQL
    refuses NUL, neither takes a lone surrogate), as a message saying the fix; None when it is
    fine."""
    if "\x00" in value:
        return f"contains a NUL character at position {value.index(chr(0))}: remove it"
    bad = _SURROGATE.search(value)
    if bad:
        return f"contains a lone surrogate ({bad.group()!r}) at position {bad.start()}: send " \
               f"valid Unicode text"
    return None


def column_name_problem(name: str) -> str | None:
    """What makes `name` impossible as a column of the revision's items CSV (a control character
    splits or ends its header line; a lone surrogate cannot be written), as a message saying the
    fix; None when it is fine."""
    bad = _CONTROL.search(name) or _SURROGATE.search(name)
    if bad:
        return f"a column name must not contain control characters or lone surrogates, found " \
               f"{bad.group()!r} at position {bad.start()}: rename the column"
    return None


def item_id_problem(item_id: str) -> str | None:
    """What is wrong with `item_id` as an item id, as a message saying the fix; None when it is
    valid."""
    if not item_id.strip():
        return "an item_id must not be empty or only spaces"
    if len(item_id) > MAX_ID_CHARS:
        return f"an item_id must be at most {MAX_ID_CHARS} characters, got {len(item_id)}: " \
               f"shorten it"
    bad = _CONTROL.search(item_id) or _SURROGATE.search(item_id)
    if bad:
        return f"an item_id must not contain control characters or lone surrogates, found " \
               f"{bad.group()!r} at position {bad.start()}: remove it"
    if any(part in ("", ".", "..") for part in item_id.split("/")):
        return "an item_id must not be '.' or '..', nor have an empty, '.' or '..' part between " \
               "slashes: URLs (/items/{item_id}) cannot reach it; rename it"
    if item_id.endswith(f"/{SIMILAR}"):
        return f"an item_id must not end in '/{SIMILAR}': /items/{{item_id}}/{SIMILAR} is an item's " \
               f"like-this list, so URLs (/items/{{item_id}}) cannot reach it; rename it"
    return None
