"""A shop's synonyms in the store, with who changed what and when (`store.audited`, as rules are
kept: each write and its `synonym_changes` row in one transaction under SYNONYMS_LOCK, the newest
change id the synonyms' revision)."""

from __future__ import annotations

from typing import Any

from recsys.synonyms import Synonym

from .audited import AuditedTable, Change, Conflict, Limit, Stored
from .db import SYNONYMS_LOCK
from .tables import synonym_changes, synonyms

SynonymConflict, SynonymLimit, SynonymChange = Conflict, Limit, Change
StoredSynonym = Stored[Synonym]


def synonym_json(s: Synonym) -> dict[str, Any]:
    """The synonym as its row and the audit trail keep it."""
    return {"name": s.name, "words": list(s.words), "to": list(s.to)}


def synonym_from_json(m: Any) -> Synonym:
    """The synonym `synonym_json` wrote (its row too)."""
    return Synonym(m["name"], tuple(m["words"]), tuple(m["to"]))


SYNONYMS: AuditedTable[Synonym] = AuditedTable(synonyms, synonym_changes, SYNONYMS_LOCK, "synonym",
                                               "/admin/synonyms", synonym_json, synonym_from_json, synonym_json,
                                               lambda s: s.name)
