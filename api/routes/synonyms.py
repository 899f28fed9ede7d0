"""Shop synonyms (admin token): create, list, change, delete, and who did what when.

Synonyms are checked before anything is stored: a bad field is a 422 naming it (nothing stored,
however many were sent); a synonym the served catalogue cannot use (no item says any word it
counts as) is stored with a warning. Every serving process applies a change within a poll of the
store (api/synonyms.py), without retraining.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Request

from recsys.recommender import Recommender
from recsys.synonyms import Synonym, SynonymError, check_synonym, make_synonym, parse_line
from store.db import Database
from store.synonyms import SYNONYMS, StoredSynonym, SynonymConflict, SynonymLimit

from ..deps import AdminDep, DatabaseDep, ModelDep
from ..limits import field_error
from ..schemas import (
    RuleChangesOut,
    SynonymBody,
    SynonymName,
    SynonymsOut,
    SynonymsRequest,
    error_responses,
)
from ..synonyms import ServedSynonyms
from .rules import ActorHeader

router = APIRouter(prefix="/admin/synonyms", tags=["admin"], dependencies=[AdminDep],
                   responses=error_responses(401, 403, 500, 503))

# synonyms one request may send, and the store may hold: each is a dict entry per word, and only
# a query with one of its words pays for it
MAX_SYNONYMS_PER_REQUEST = 1000
MAX_SYNONYMS = 10_000


def _served(request: Request) -> ServedSynonyms:
    served: ServedSynonyms = request.app.state.synonyms
    return served


def _synonym(body: SynonymBody, name: str | None, loc: tuple) -> Synonym:
    """The checked synonym of a body (a 422 naming the field when it is not one)."""
    try:
        if body.line is not None:
            if body.words or body.to:
                raise SynonymError("line", "give the line, or words (and to), not both")
            parsed = parse_line(body.line)
            if parsed is None:
                raise SynonymError("line", "the line has no synonym: 'navy => blue' or 'sofa, couch'")
            return make_synonym(parsed.words, parsed.to, name)
        return make_synonym(body.words, body.to, name)
    except SynonymError as exc:
        where = [int(p) if p.isdigit() else p for p in exc.field.split(".")]  # words.0 -> words, 0
        raise field_error((*loc, *where), str(exc)) from None


def _out(stored: list[StoredSynonym], revision: int, rec: Recommender, warnings: list[str],
         served: ServedSynonyms | None = None) -> dict:
    keys = rec.featurizer.catalog_keys()
    rows = [{"name": s.item.name, "words": list(s.item.words), "to": list(s.item.to), "line": s.item.line(),
             "source": "store", "usable": check_synonym(s.item, keys) is None, "created_at": s.created_at,
             "updated_at": s.updated_at, "updated_by": s.updated_by} for s in stored]
    if served is not None:  # the file's, where the store has none of the name
        names = {s.item.name for s in stored}
        rows += [{"name": s.name, "words": list(s.words), "to": list(s.to), "line": s.line(), "source": "file",
                  "usable": check_synonym(s, keys) is None} for s in served.from_file if s.name not in names]
    return {"revision": revision, "synonyms": rows, "warnings": warnings}


@router.get("", response_model=SynonymsOut)
def list_all(request: Request, db: DatabaseDep, rec: ModelDep) -> dict:
    """Every synonym in force: the store's, oldest first, then the synonyms file's
    (RECSYS_SYNONYMS_FILE) that the store has none of the name of, with whether the served
    catalogue can use each."""
    revision, stored = SYNONYMS.read(db)
    return _out(stored, revision, rec, [], _served(request))


@router.post("", status_code=201, response_model=SynonymsOut, responses=error_responses(409, 422))
def create(req: SynonymsRequest, request: Request, db: DatabaseDep, rec: ModelDep,
           actor: ActorHeader = "admin") -> dict:
    """Store synonyms, all or none: a 422 names the first bad field (`synonyms.2.words.0`), a
    409 a name taken. Each serving process applies them within RECSYS_WATCH_INTERVAL_S."""
    if len(req.synonyms) > MAX_SYNONYMS_PER_REQUEST:
        raise field_error(("synonyms",), f"at most {MAX_SYNONYMS_PER_REQUEST} synonyms a request, got "
                                         f"{len(req.synonyms)}: send them in parts")
    new = [_synonym(s, s.name, ("synonyms", n)) for n, s in enumerate(req.synonyms)]
    names = [s.name for s in new]
    if len(set(names)) < len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise field_error(("synonyms",), f"synonym {twice[0]!r} is sent twice: names are unique (a "
                                         f"name left out is the first word)")
    keys = rec.featurizer.catalog_keys()
    warnings = [w for s in new if (w := check_synonym(s, keys))]
    try:
        SYNONYMS.create(db, new, actor, MAX_SYNONYMS)
    except SynonymConflict as exc:
        raise HTTPException(409, detail=str(exc)) from None
    except SynonymLimit as exc:
        raise field_error(("synonyms",), str(exc)) from None
    _served(request).follow()
    return _created(db, rec, set(names), warnings)


def _created(db: Database, rec: Recommender, names: set[str], warnings: list[str]) -> dict:
    revision, stored = SYNONYMS.read(db)
    return _out([s for s in stored if s.item.name in names], revision, rec, warnings)


@router.put("/{name}", response_model=SynonymsOut, responses=error_responses(404, 422))
def change(name: SynonymName, body: SynonymBody, request: Request, db: DatabaseDep, rec: ModelDep,
           actor: ActorHeader = "admin") -> dict:
    """Replace the synonym `name` with `body`."""
    synonym = _synonym(body, name, ())
    warning = check_synonym(synonym, rec.featurizer.catalog_keys())
    try:
        SYNONYMS.update(db, synonym, actor)
    except SynonymConflict as exc:
        raise HTTPException(404, detail=str(exc)) from None
    _served(request).follow()
    return _created(db, rec, {name}, [warning] if warning else [])


@router.delete("/{name}", response_model=SynonymsOut, responses=error_responses(404))
def remove(name: SynonymName, request: Request, db: DatabaseDep, rec: ModelDep,
           actor: ActorHeader = "admin") -> dict:
    """Delete the synonym `name`; the answer lists the store's synonyms left."""
    try:
        SYNONYMS.delete(db, name, actor)
    except SynonymConflict as exc:
        raise HTTPException(404, detail=str(exc)) from None
    _served(request).follow()
    revision, stored = SYNONYMS.read(db)
    return _out(stored, revision, rec, [])


@router.get("/changes", response_model=RuleChangesOut)
def changes(db: DatabaseDep, name: Annotated[SynonymName | None, Query()] = None,
            limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> dict:
    """The audit trail: who created, changed or deleted which synonym when, with it before and
    after, newest first (of synonym `name` alone when given)."""
    return {"changes": SYNONYMS.history(db, name, limit)}
