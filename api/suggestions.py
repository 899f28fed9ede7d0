"""The served model's completions (`recsys.suggest.Suggester`), built once per version and kept
current with the store's logged searches, re-read in the background every `REFRESH_S`."""

from __future__ import annotations

import logging
import threading
import time

from recsys.recommender import Recommender
from recsys.suggest import MIN_SHOPPERS, Suggester
from store.db import Database, unavailable
from store.events import search_counts

log = logging.getLogger("recsys.api")

REFRESH_S = 60.0  # logged searches are re-read at most this often (a search becomes a suggestion
# once enough shoppers made it: minutes of delay are fine, a query of the store per keystroke is not)


class Suggestions:
    def __init__(self, db: Database | None):
        self.db = db
        self._lock = threading.Lock()
        self._built: tuple[str, Suggester, float] | None = None  # (version, suggester, searches read at)
        self._refreshing = False
        self._terms_lock = threading.Lock()
        self._terms: tuple[str, Suggester] | None = None  # (version, its catalogue terms alone)

    def ready_for(self, rec: Recommender) -> Suggester | None:
        """The suggester of `rec`'s version if it is built (starting a background re-read of the
        searches when they are old), else None: `build` it in a worker thread."""
        built = self._built
        if built is None or built[0] != rec.version:
            return None
        if time.monotonic() - built[2] > REFRESH_S and not self._refreshing:
            self._refreshing = True
            threading.Thread(target=self._refresh, args=(built,), name="suggestions", daemon=True).start()
        return built[1]

    def prepare(self, rec: Recommender) -> None:
        """Read `rec`'s catalogue terms in the background (a version just installed): the
        first shopper with a word no item matches then waits for none of it (about 1 s at 100k
        items, which the request's time budget would pay). The searches are read when first
        asked for, as before."""
        def run() -> None:
            try:
                self._catalogue_terms(rec)
            except Exception:  # a request reads them again, and says why if it fails there too
                log.exception("reading the catalogue's terms for suggestions failed",
                              extra={"model_version": rec.version})

        threading.Thread(target=run, name="suggestions-terms", daemon=True).start()

    def _catalogue_terms(self, rec: Recommender) -> Suggester:
        """`rec`'s catalogue terms, without searches: read once per version."""
        with self._terms_lock:
            terms = self._terms
            if terms is None or terms[0] != rec.version:
                terms = self._terms = (rec.version, Suggester.from_catalog(rec.catalog))
            return terms[1]

    def build(self, rec: Recommender) -> Suggester:
        """The suggester of `rec`'s version, built now if it is not (catalogue terms and searches)."""
        with self._lock:
            built = self._built
            if built is None or built[0] != rec.version:
                suggester = self._catalogue_terms(rec).with_searches(self._searches())
                built = self._built = (rec.version, suggester, time.monotonic())
            return built[1]

    def _refresh(self, built: tuple[str, Suggester, float]) -> None:
        try:
            fresh = built[1].with_searches(self._searches())
            with self._lock:
                if self._built is not None and self._built[0] == built[0]:
                    self._built = (built[0], fresh, time.monotonic())
        finally:
            self._refreshing = False

    def _searches(self) -> dict[str, int]:
        if self.db is None:
            return {}
        try:
            return search_counts(self.db, MIN_SHOPPERS)
        except Exception as exc:  # only a store that cannot answer is expected here
            if not unavailable(exc):
                raise
            log.warning("the store is unavailable: suggestions complete from the catalogue alone "
                        "until it answers", extra={"error": str(exc)})
            return {}
