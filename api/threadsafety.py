"""Work-arounds for library state that is not safe to share between request threads.

`recsys.tokenize` stems with one module-level snowball stemmer; the pure-Python stemmer keeps the
word being stemmed on the instance, so two threads stemming at once get each other's words
(measured: thousands of wrong stems and IndexErrors in a few seconds). Until the library guards
it, the service wraps it in a lock. Stems are cached (`lru_cache`), so the lock is only taken for
words not seen before.
"""

from __future__ import annotations

import threading


class _LockedStemmer:
    def __init__(self, stemmer) -> None:
        self._stemmer, self._lock = stemmer, threading.Lock()

    def stemWord(self, word: str) -> str:  # noqa: N802 - the snowball API's name
        with self._lock:
            return self._stemmer.stemWord(word)


def guard_stemmer() -> None:
    import recsys.tokenize as tokenize

    if not isinstance(tokenize._STEMMER, _LockedStemmer):
        tokenize._STEMMER = _LockedStemmer(tokenize._STEMMER)
