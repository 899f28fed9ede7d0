"""Request (`...Request`) and response (`...Out`) models of the HTTP API.

Limits that depend on the settings (query length, k, list sizes) are checked in `api.limits`;
the models here fix the shapes, the types and the limits that never change. Head names are data
(the served model's facets, `GET /model`): a request's unknown head is refused by the model
(`Recommender.head_weight_vector`, a 422 naming it).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

import orjson
from fastapi import Response
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator
from pydantic_core import PydanticCustomError

from recsys.explain import MATCH_THRESHOLD, Explanation
from recsys.facet_counts import MAX_VALUES as MAX_FACET_VALUES
from recsys.facet_counts import FacetCounts
from recsys.facets import FACET_NAME, FACETS
from recsys.io.contract import EVENT_LABELS
from recsys.io.ids import MAX_ID_CHARS, item_id_problem, storable_problem
from recsys.match_evidence import CELL_KINDS
from recsys.recommender import Recommendation

HeadName = Annotated[str, Field(pattern=FACET_NAME.pattern, examples=list(FACETS))]
HeadWeight = Annotated[float, Field(ge=0.0, le=100.0, allow_inf_nan=False)]


def _valid_item_id(value: str) -> str:
    problem = item_id_problem(value)
    if problem:  # the message as it is, without pydantic's "Value error, " in front
        raise PydanticCustomError("item_id", problem)
    return value


def _storable(value: str) -> str:
    problem = storable_problem(value)
    if problem:
        raise PydanticCustomError("storable_text", problem)
    return value


# an item id as `recsys.io.ids` defines it, the same for every field, list and URL that names items
# (its maxLength in the OpenAPI document: api.openapi)
ItemId = Annotated[str, AfterValidator(_valid_item_id)]
# text the store keeps (an event's ids, a user id): the same on SQLite and PostgreSQL
StoredText = Annotated[str, AfterValidator(_storable)]


# a key of `facet_counts` (a filter key), and how many one request may name
FacetKey = Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS)]
MAX_FACET_KEYS = 32


def no_blank_user(user_id: str | None) -> str | None:
    """A `user_id` as the store keeps it: empty or blank is no shopper, as null. A client with no
    shopper sends "" as often as null: stored as "", no "forget this shopper" could reach it, an
    experiment's report counted it as a user, and /recommend put " " in an arm whose events
    then counted nowhere."""
    return user_id if user_id is None or user_id.strip() else None


class _Request(BaseModel):
    # a misspelt field is an error, not silently ignored; strict: `"explain": 0` is not false,
    # `"k": true` is not 1 and `"k": "10"` is not 10
    model_config = ConfigDict(extra="forbid", strict=True)


class FilterRange(_Request):
    """A numeric column's range (price, rating): `min <= x <= max`, either bound optional."""

    min: float | None = Field(None, allow_inf_nan=False, examples=[20])
    max: float | None = Field(None, allow_inf_nan=False, examples=[60])


class RecommendRequest(_Request):
    query: str = Field(description="what the shopper typed", examples=["red casual cotton dress"])
    k: int = Field(10, ge=1, description="how many items to return")
    offset: int = Field(0, ge=0, description="how many ranked items to skip (paging)")
    filters: dict[str, list[str] | FilterRange] = Field(
        default_factory=dict,
        description="facet or column (its own name or the facet's: `colour` and `color` alike, any "
                    "case) -> accepted values, OR-ed; or for a numeric column (price, rating) a "
                    "range {\"min\": 20, \"max\": 60}; keys are AND-ed",
        examples=[{"color": ["red", "navy"], "category": ["dress"], "price": {"min": 20, "max": 60}}],
    )
    exclude: list[ItemId] = Field(default_factory=list, description="item ids never to return")
    candidates: list[ItemId] | None = Field(
        None, description="rank only these item ids (re-rank another system's output)"
    )
    head_weights: dict[HeadName, HeadWeight] = Field(
        default_factory=dict, description="multiplier per head (0 mutes it); missing heads get 1",
        examples=[{"color": 0.0}],
    )
    explain: bool = Field(True, description="include per-head explanations")
    facet_counts: bool | Annotated[list[FacetKey], Field(max_length=MAX_FACET_KEYS)] = Field(
        False, description="true: each facet key's values with counts over the items that match "
                           "the query and the filters (`facet_counts` in the answer); or a list of "
                           "the keys to count (facets or columns, as `filters` takes them)",
        examples=[True, ["color", "brand"]])
    user_id: StoredText | None = Field(
        None, max_length=256,
        description="the shopper: their recent clicks, carts and purchases (the events sent with "
                    "this user_id) personalise the answer (`personalize`, `history`); while an "
                    "experiment runs, it also picks the arm (and version) that answers, the same "
                    "one every time. Without it (or empty, or blank) the active version answers, "
                    "in no arm, not personalised")
    personalize: bool | None = Field(
        None, description="with a `user_id`: rank the shopper's history words with the query, in the "
                          "same heads. true: always, every word of the profile; false: never (the "
                          "answer any shopper would get); null (default): a query with no word to rank "
                          "(a home page) with every word, a typed query only with the words the history "
                          "is sure of, as less sure ones cost typed queries relevance on simulated "
                          "shoppers (docs/results.md, \"For this shopper\")")

    @field_validator("user_id")
    @classmethod
    def _blank_is_no_user(cls, value: str | None) -> str | None:
        return no_blank_user(value)

    @field_validator("filters", mode="before")
    @classmethod
    def _single_value(cls, filters: Any) -> Any:
        """`{"color": "red"}` is read as `{"color": ["red"]}`."""
        if isinstance(filters, dict):
            return {k: [v] if isinstance(v, str) else v for k, v in filters.items()}
        return filters


class ExplainRequest(_Request):
    query: str
    item_id: ItemId
    head_weights: dict[HeadName, HeadWeight] = Field(default_factory=dict)


class CompareRequest(_Request):
    query: str
    item_a: ItemId
    item_b: ItemId
    head_weights: dict[HeadName, HeadWeight] = Field(default_factory=dict)


class TrainRequest(_Request):
    """A retrain from CSV files already on the server, named relative to the data folder, or
    from the store's events."""

    source: Literal["csv", "events"] = Field(
        "csv", description="csv: `items` and `interactions` files (`items` alone: the untrained "
                           "start); events: the events in the "
                           "store (`items` optional: the served version's catalogue)")
    since: datetime | None = Field(None, strict=False,
                                   description="events: only those at or after this time")
    items: str | None = Field(None, examples=["shop/items.csv"])
    interactions: str | None = Field(None, examples=["shop/interactions.csv"])
    judgments: str | None = None
    probes: str | None = None
    schema_file: str | None = Field(
        None, alias="schema", examples=["shop/schema.toml"],
        description="a schema TOML file, as recsys train --schema takes: [rename] columns to the "
                    "contract's names, [columns] to facets, ...")
    epochs: int | None = Field(None, ge=1, description="default: RECSYS_TRAIN_EPOCHS")
    seed: int = Field(0, ge=0, le=2**32 - 1)
    force: bool = Field(False, description="activate the new version even if it is not better")
    on_bad_lines: Literal["error", "skip"] = Field(
        "error", description="skip: leave out the files' lines and rows that cannot be read (a wrong "
                             "number of fields, a search without a query, ...), as recsys train "
                             "--on-bad-lines skip does; they are counted in the version's manifest")

    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)


class EventIn(_Request):
    """One thing a shopper did with an item of an answer."""

    event_id: StoredText | None = Field(None, min_length=1, max_length=128,
                                 description="the client's id: a retried event is stored once")
    type: str = Field(description="impression (shown), click, cart or purchase",
                      json_schema_extra={"enum": list(EVENT_LABELS)})
    request_id: StoredText | None = Field(None, max_length=128,
                                   description="the `request_id` of the /recommend answer it came from")
    query: StoredText = Field(min_length=1, description="the query of that answer")
    item_id: ItemId = Field(description="an item of the served catalogue",
                            json_schema_extra={"maxLength": MAX_ID_CHARS})
    position: int | None = Field(None, ge=1, le=100_000,
                                 description="1-based rank the item was shown at (offset included)")
    user_id: StoredText | None = Field(None, max_length=256,
                                       description="the shopper; empty or blank: none, as null")
    timestamp: datetime | None = Field(
        None, strict=False, description="ISO 8601 (no zone: UTC); default: when it is received")


    @field_validator("user_id")
    @classmethod
    def _blank_is_no_user(cls, value: str | None) -> str | None:
        return no_blank_user(value)

    @field_validator("type")
    @classmethod
    def _known_type(cls, value: str) -> str:
        if value not in EVENT_LABELS:
            raise PydanticCustomError("event_type", "unknown event type {found}: expected one of {kinds}",
                                      {"found": repr(value[:40]), "kinds": ", ".join(EVENT_LABELS)})
        return value


class EventsRequest(_Request):
    events: list[EventIn] = Field(min_length=1, description="stored all together or not at all")


ItemCell = str | int | float | list[str] | None


class ExperimentRequest(_Request):
    """An experiment between versions (api/routes/experiments.py checks the values)."""

    name: str = Field(description="unique; salts the split of users", examples=["colour-heads"])
    arms: dict[str, str] = Field(description="arm -> version; the first arm is the control",
                                 examples=[{"A": "v20261201-101500-000000",
                                            "B": "v20261201-120000-000000"}])
    traffic: dict[str, float] | None = Field(
        None, description="arm -> share of the users, summing to 1 (default: equal)",
        examples=[{"A": 0.5, "B": 0.5}])


class EndExperimentRequest(_Request):
    winner: str = Field(description="the arm whose version is activated", examples=["B"])


class ItemsUpsertRequest(_Request):
    """Items to add or replace, each a row of the items CSV as an object (column -> cell)."""

    items: list[dict[str, ItemCell]] = Field(
        min_length=1, description="`item_id` and `title` required; the other columns feed facets as "
                                  "the catalogue's do; a list is several values (the CSV's '|')",
        examples=[[{"item_id": "SKU-NEW-1", "title": "Nordwell Red Linen Dress", "color": "red",
                    "style": ["casual", "boho"], "category": "dress", "price": 79.0}]])
    variants: dict[ItemId, list[ItemId]] = Field(
        default_factory=dict, max_length=10_000,
        description="other ids each item is known by (its variants' SKUs): item_id -> those ids. Events, "
                    "pages, explanations and exclusions that name one reach the item, as the variants of "
                    "a trained export do; an id may not be an item's own",
        examples=[{"SKU-NEW-1": ["SKU-NEW-1-S", "SKU-NEW-1-M"]}])


# ---- responses --------------------------------------------------------------------------------


class _Out(BaseModel):
    # read the library's dataclasses directly: no `asdict` deep copy on the hot path
    model_config = ConfigDict(from_attributes=True)


def as_json(out: BaseModel, model_version: str) -> Response:
    """The response, serialised once by pydantic-core (FastAPI would validate it a second time)."""
    return Response(out.model_dump_json(), media_type="application/json",
                    headers={"X-Model-Version": model_version})


class MatchOut(_Out):
    query_token: str
    attribute: str
    weight: float
    evidence: str = Field(default="", description=(
        f"why the head attends there: {', '.join(k for k in CELL_KINDS if k)}, or \"\" where only the "
        "trained model does"))
    counts: bool = Field(default=True, description=(
        "whether it makes the item a result of the query (`matched`, facet counts, `total`): the item "
        "says the word, or the catalogue never says it and the head learned where it belongs. A word "
        "the catalogue says that the head draws elsewhere (clicks, the model) moves the score only"))


class HeadOut(_Out):
    head: HeadName
    contribution: float
    matches: list[MatchOut]


class RuleEffectOut(_Out):
    name: str = Field(description="the rule's name (GET /admin/rules)")
    kind: str = Field(description="pin, boost, bury or hide")
    amount: float | None = Field(description="what it adds to the score (a bury's is negative); "
                                             "null for a pin or a hide, which change no score")
    position: int | None = Field(description="a pin's position (1-based)")
    note: str = Field(description="the rule as a reason line: \"boost 'acme-week': +2.00 "
                                  "(brand:acme)\", \"pinned at position 1 by rule 'hero'\"")


class SynonymEffectOut(_Out):
    name: str = Field(description="the synonym's name (GET /admin/synonyms)")
    query_token: str
    attribute: str = Field(description="the item's attribute the query word matched through it")
    note: str = Field(description="\"navy -> color:blue (synonym rule 'navy')\"")


class ExplanationOut(_Out):
    prior: float
    summary: str = Field(description="what sets the item apart from the others listed")
    matched: bool = Field(description="some query word matched one of its attributes (an attention "
                          f"share of at least {MATCH_THRESHOLD}, the match threshold) in a way that "
                          "counts (`heads[].matches[].counts`)")
    heads: list[HeadOut] = Field(description="one per head, always all of them, in facet order")
    history: list[str] = Field(
        default_factory=list,
        description="the shopper's history words (the answer's `history.words`) that matched this "
                    "item: their rows in `heads` are the matches with these `query_token`s, and "
                    "the summary ends `your history: navy, linen`")
    rules: list[RuleEffectOut] = Field(
        default_factory=list,
        description="the merchandising rules that acted on this item for this query: `score` is "
                    "prior + the heads' contributions + these amounts; a pin says so instead")
    synonyms: list[SynonymEffectOut] = Field(
        default_factory=list,
        description="the shop's synonyms through which a query word matched one of its attributes "
                    "(inside the heads: the score needs no term of its own)")


class ItemOut(_Out):
    item_id: str
    title: str
    attributes: dict[str, list[str]] = Field(description="facet -> attribute labels")
    numbers: dict[str, float] = Field(
        default_factory=dict, description="the item's numbers in its number columns (a price, a rating), "
                                          "key -> the number its file gives: `attributes` holds their "
                                          "ranges (`price:61-95`), which filters and the heads read")
    value_names: dict[str, str] = Field(
        default_factory=dict, description="of its attribute labels, those its file writes otherwise, "
                                          "label -> as written (`brand:núñez & hijos` -> `Núñez & Hijos`): "
                                          "what to show a shopper; the labels are what filters take")


class ItemDetailOut(ItemOut):
    model_version: str
    description: str | None = Field(None, description="the item's description as the catalogue gave it "
                                    "(its `description` and free-text columns); null when it has none")


class RankedItemOut(ItemOut):
    rank: int
    score: float = Field(description="prior + sum of the head contributions + sum of the rules' "
                                     "amounts (`explanation.rules`)")
    explanation: ExplanationOut | None


class SimilarOut(_Out):
    item_id: str = Field(description="the item the others are like (never among them)")
    query: str = Field(description="the words of its own attributes it was ranked by")
    drawn_by: dict[str, list[str]] = Field(
        description="query word -> the attributes of the item it came from: with each result's "
                    "explanation, which of its attributes drew which attribute of the result")
    kept_to: dict[str, list[str]] = Field(
        default_factory=dict,
        description="filter key -> the item's own values every result shares: its kind when "
                    "`same` is not given (`{\"category\": [\"chair\"]}`), the keys `same` names, "
                    "or nothing")
    model_version: str
    offset: int
    total: int = Field(description="items that passed filters and exclusions (the item excluded)")
    items: list[RankedItemOut]
    took_ms: float


class SuggestionOut(_Out):
    text: str = Field(description="the completed text")
    source: str = Field(description="`search`: shoppers searched it (at least 2 of them); "
                                    "`catalogue`: the catalogue's own words and values")
    count: int = Field(description="shoppers who made the search, or items that say the term")
    corrected: bool = Field(description="reached by taking the last word as a typo of one edit")


class SuggestOut(_Out):
    query: str
    suggestions: list[SuggestionOut]
    model_version: str


class ExperimentArmOut(_Out):
    name: str
    arm: str


class FacetValueOut(_Out):
    value: str = Field(description="as a filter on the key takes it")
    count: int = Field(description="items a filter on this value would leave")
    name: str = Field(description="the value as the items file writes it (`Núñez & Hijos` for "
                                  "`núñez & hijos`; the value where the two are one): what to show")


class FacetCountOut(_Out):
    key: str
    values: list[FacetValueOut] = Field(description="values with items, the most counted first "
                                                    f"(at most {MAX_FACET_VALUES})")
    more: int = Field(description="values with items that are not listed")


class FacetCountsOut(_Out):
    matching: int = Field(description="items that match the query and pass every filter, "
                                      "exclusion and candidate list")
    facets: list[FacetCountOut]


class HistoryOut(_Out):
    """The shopper's profile an answer was ranked with (POST /recommend with a `user_id`)."""

    personalized: bool = Field(description="the history words were ranked with the query")
    words: list[str] = Field(description="the shopper's preferences as words, strongest first, "
                                         "those the query did not say already")
    weights: dict[str, float] = Field(description="word -> its lift: the weight of the shopper's events "
                                                  "on items saying it (purchase 3, cart 2, click 1, halving "
                                                  "every 14 days) less what they would have chosen anyway")
    drawn_by: dict[str, list[str]] = Field(description="word -> the attributes of the shopper's items "
                                                       "it came from")
    events: int = Field(description="the shopper's events the profile was built from")
    note: str = Field(description="why the answer is not personalised, when it is not")


class RecommendOut(_Out):
    request_id: str = Field(description="this answer's id (also the X-Request-ID header); events "
                                        "refer to it")
    query: str
    tokens: list[str]
    model_version: str = Field(description="the version that answered (the arm's, in an experiment)")
    experiment: ExperimentArmOut | None = Field(
        None, description="the running experiment and the arm of the request's user_id; null "
                          "without either")
    offset: int
    total: int = Field(description="items that passed filters, exclusions and candidates")
    unmatched_tokens: list[str] = Field(description="query words that no item of the catalogue matches")
    history: HistoryOut | None = Field(
        None, description="with a `user_id`: the shopper's profile the answer was ranked with, or a "
                          "note saying why it was not personalised (no history yet, none sure enough "
                          "for a typed query, `personalize` false); null without a user_id")
    items: list[RankedItemOut]
    did_you_mean: list[str] = Field(
        default_factory=list,
        description="when some query word matches nothing: whole queries near it, each of whose "
                    "words matches (near spellings of the unmatched words, then completions), "
                    "the best first")
    facet_counts: FacetCountsOut | None = Field(
        None, description="when asked (`facet_counts`): per key, its values over the items that "
                          "match the query and every filter but that key's own, the most counted first")
    took_ms: float


def recommend_json(result: Recommendation, offset: int, took_ms: float, request_id: str,
                   experiment: dict[str, str] | None = None, facet_counts: FacetCounts | None = None,
                   did_you_mean: list[str] | None = None, history: dict | None = None) -> Response:
    """`RecommendOut` of a recommendation, built as plain dicts field for field in the models'
    order and serialised by orjson: validating the ranked items' dataclasses into the models cost
    more than ranking them. tests/api/test_contract.py checks it against `RecommendOut`."""
    body = {
        "request_id": request_id,
        "query": result.query,
        "tokens": result.tokens,
        "model_version": result.model_version,
        "experiment": experiment,
        "offset": offset,
        "total": result.total,
        "unmatched_tokens": result.unmatched_tokens,
        "history": history,
        "items": [{
            "item_id": item.item_id,
            "title": item.title,
            "attributes": item.attributes,
            "numbers": item.numbers,
            "value_names": item.value_names,
            "rank": item.rank,
            "score": item.score,
            "explanation": None if item.explanation is None else _explanation(item.explanation),
        } for item in result.items],
        "did_you_mean": did_you_mean or [],
        "facet_counts": facet_counts,  # orjson writes a dataclass as its fields, in order
        "took_ms": took_ms,
    }
    # a query with a lone surrogate, which no JSON answer can echo, is refused by api.limits: a
    # failure here is a bug (a 500)
    return Response(orjson.dumps(body), media_type="application/json",
                    headers={"X-Model-Version": result.model_version})


def _explanation(e: Explanation) -> dict:
    return {
        "prior": e.prior,
        "summary": e.summary,
        "matched": e.matched,
        "heads": [{
            "head": h.head,
            "contribution": h.contribution,
            "matches": [{"query_token": m.query_token, "attribute": m.attribute, "weight": m.weight,
                         "evidence": m.evidence, "counts": m.counts} for m in h.matches],
        } for h in e.heads],
        "history": e.history,
        "rules": e.rules,  # orjson writes each dataclass as its fields
        "synonyms": e.synonyms,
    }


class ErasureOut(_Out):
    attribute: str
    score_change: float


class HeadDetailOut(_Out):
    head: HeadName
    contribution: float
    attributes: list[str] = Field(
        description="the item's attributes of this facet, then the no-match slot")
    attention: list[list[float]] = Field(description="one row per query token over `attributes`")
    erasure: list[ErasureOut]
    matches: list[MatchOut]
    evidence: list[list[str]] = Field(
        description="one row per query token over `attributes` without the no-match slot: what "
                    "lets the word match the attribute: \"exact\", \"description\" (a word of its "
                    "description), \"near spelling\", \"words run together\", \"learned from N "
                    "searches, lift L\" (a click association: N distinct training searches with the "
                    "word chose items with the value; \"learned from clicks\" for versions saved "
                    "before this was kept), or \"\" (no evidence: attention from the learned "
                    "vectors alone)",
        examples=[[["learned from 41 searches, lift 0.62"], [""]]])


class ExplainOut(_Out):
    query: str
    item_id: str
    title: str
    tokens: list[str]
    score: float = Field(description="prior + the heads' contributions + the rules' amounts")
    prior: float
    heads: list[HeadDetailOut]
    rules: list[RuleEffectOut] = Field(description="the merchandising rules acting on the item for "
                                                   "this query (a hide says the item is not shown)")
    model_version: str
    took_ms: float


class CompareHeadOut(_Out):
    head: HeadName
    contribution_a: float
    contribution_b: float
    difference: float
    only_a: list[str]
    only_b: list[str]
    matches_a: list[MatchOut]
    matches_b: list[MatchOut]


class CompareOut(_Out):
    query: str
    item_a: ItemId
    item_b: ItemId
    score_a: float
    score_b: float
    prior_difference: float
    heads: list[CompareHeadOut]
    summary: str = Field(description="why A is above or below B, in the reason lines' words")
    rules_a: list[RuleEffectOut] = Field(description="the merchandising rules acting on A")
    rules_b: list[RuleEffectOut] = Field(description="the merchandising rules acting on B")
    model_version: str
    took_ms: float


class ModelOut(_Out):
    version: str
    trained_at: str | None
    facets: list[str]
    attributes: dict[str, int] = Field(
        description="facet -> how many distinct attributes the catalogue has in it; a head of 0 "
                    "can never match (a catalogue of titles and descriptions alone may fill only "
                    "`other`)")
    n_items: int
    key_names: dict[str, str] = Field(
        default_factory=dict,
        description="attribute key (lower-cased, as labels and filters say it) -> its column's name as "
                    "the items file writes it, where the two differ (`articletype` -> `articleType`)")
    loaded_at: str
    data: dict[str, Any] = Field(description="input files and their fingerprints")
    metrics: dict[str, Any]
    config: dict[str, Any]
    training: dict[str, Any]


class HealthOut(_Out):
    status: Literal["ok"]


class ReadyOut(_Out):
    status: Literal["ready", "loading", "failed"]
    model_version: str | None = None
    detail: str | None = None


class ProgressOut(_Out):
    step: int
    total: int
    loss: float | None
    fraction: float


class JobOut(_Out):
    id: str
    status: Literal["queued", "running", "succeeded", "failed", "cancelled"]
    created_at: str
    started_at: str | None
    finished_at: str | None
    progress: ProgressOut
    version: str | None = Field(description="the new version, once trained")
    activated: bool
    decision: str | None = Field(description="why the new version is or is not served")
    metrics: dict[str, Any] | None
    error: str | None


class DecisionOut(_Out):
    activated: bool
    reason: str = Field(description="why it is or is not served")
    job_id: str | None
    decided_at: str


class VersionOut(_Out):
    version: str
    trained_at: str | None
    held_out_ndcg: float | None = Field(description="held-out NDCG@10 of the model")
    metrics: dict[str, Any]
    current: bool = Field(description="the artifacts' `current` pointer names it")
    serving: bool = Field(description="this process serves it")
    ok: bool = Field(description="false: the version is broken and cannot be activated")
    problem: str | None = Field(description="what is wrong with a broken version (file and problem)")
    decision: DecisionOut | None = Field(
        None, description="a retrain's: whether it was activated on its own, and why (not for "
                          "versions no admin job made)")


class VersionsOut(_Out):
    serving: str | None
    versions: list[VersionOut]


class ActivateOut(_Out):
    serving: str
    previous: str | None


class CatalogueChangeOut(_Out):
    serving: str = Field(description="the new catalogue revision, now served")
    previous: str | None = Field(description="the version it revises (activate it to roll back)")
    items: int = Field(description="items in the catalogue now")
    added: list[str]
    replaced: list[str]
    removed: list[str]


class EventsOut(_Out):
    accepted: int = Field(description="events of the batch now durably in the store")
    duplicates: int = Field(description="of which were stored already (a retried event_id)")


class EventStatsOut(_Out):
    total: int
    by_type: dict[str, int] = Field(description="every event type, 0 when none is stored")


class ExperimentArmSpecOut(_Out):
    arm: str
    version: str
    traffic: float


class ExperimentSummaryOut(_Out):
    name: str
    status: Literal["running", "ended"]
    started_at: str
    ended_at: str | None
    winner: str | None
    arms: list[ExperimentArmSpecOut]


class ExperimentsOut(_Out):
    running: str | None = Field(description="the running experiment's name")
    experiments: list[ExperimentSummaryOut] = Field(description="newest first")


class RateOut(_Out):
    rate: float
    ci95: list[float] = Field(description="Wilson score interval [low, high]")


class ArmReportOut(ExperimentArmSpecOut):
    users: int = Field(description="users with events in the window")
    answers: int = Field(description="answers (request_ids) with impressions")
    impressions: int
    clicks: int
    carts: int
    purchases: int
    ctr: RateOut = Field(description="clicks per impression")
    cart_rate: RateOut = Field(description="carts per impression")
    purchase_rate: RateOut = Field(description="purchases per impression")


class ComparisonOut(_Out):
    arm: str
    against: str = Field(description="the control, the first arm")
    metric: Literal["ctr", "cart_rate", "purchase_rate"]
    difference: float = Field(description="the arm's rate minus the control's")
    ci95: list[float] = Field(description="Newcombe's hybrid score interval of the difference")
    z: float
    p_value: float = Field(description="two-sided pooled two-proportion z-test")
    significant: bool = Field(description="p_value < 0.05")
    summary: str


class ExperimentReportOut(ExperimentSummaryOut):
    window: dict[str, str] = Field(description="the events counted: from the start to the end (or now)")
    arms: list[ArmReportOut]  # type: ignore[assignment]
    comparisons: list[ComparisonOut]
    summary: str = Field(description="the CTR comparisons in words")
    method: str = Field(description="how the figures are computed")
    serving: str | None = Field(
        None, description="set when this process cannot serve the running experiment's arms (why)")


class EndExperimentOut(_Out):
    serving: str = Field(description="the winner's version, now active")
    previous: str | None
    experiment: ExperimentReportOut


class ForgottenOut(_Out):
    user_id: str
    deleted_events: int = Field(description="the shopper's events deleted from the store")


# letters of any script, as a synonym's name takes them ("größmann-woche")
_RULE_NAME = r"^[^\W_][\w.\-]{0,63}$"
_RULE_NAME_WORDS = "1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"
RuleName = Annotated[str, Field(pattern=_RULE_NAME, description=_RULE_NAME_WORDS, examples=["acme-week"])]


class RuleBody(_Request):
    """A merchandising rule without its name (`recsys.rules` checks the values)."""

    kind: str = Field(description="pin (item_id at position), boost or bury (items by amount), "
                                   "hide", json_schema_extra={"enum": ["pin", "boost", "bury", "hide"]})
    attribute: StoredText | None = Field(None, max_length=512, description="the items it acts on: a filter "
                                  "key and one value, `brand:acme`, `color:red`", examples=["brand:acme"])
    item_id: ItemId | None = Field(None, description="or one item (a pin names one)")
    amount: float | None = Field(None, strict=False, allow_inf_nan=False,
                                 description="boost or bury: added to (bury: subtracted from) the score")
    position: int | None = Field(None, description="pin: the 1-based rank it is shown at")
    match: str = Field("any", description="which queries: `any`, `exact` (the query, case and "
                                          "spacing ignored), `contains` (the query has the word)",
                       json_schema_extra={"enum": ["any", "exact", "contains"]})
    query: StoredText = Field("", max_length=512, description="the exact query, or the word")
    start: datetime | None = Field(None, strict=False, description="ISO 8601 (no zone: UTC); from then on")
    end: datetime | None = Field(None, strict=False, description="ISO 8601 (no zone: UTC); until then "
                                                                 "(exclusive); after start")


class RuleIn(RuleBody):
    name: RuleName


class RulesRequest(_Request):
    rules: list[RuleIn] = Field(min_length=1, description="stored all together or not at all")


class RuleOut(_Out):
    name: str
    kind: str
    attribute: str | None
    item_id: str | None
    amount: float | None
    position: int | None
    match: str
    query: str
    start: datetime | None
    end: datetime | None
    active: bool = Field(description="its window holds now")
    matches: int = Field(description="items of the served catalogue it acts on")
    created_at: datetime | None = None
    updated_at: datetime | None = None
    updated_by: str | None = None


class ScoreScaleOut(_Out):
    searches: list[str] = Field(description="the catalogue's commonest title words, asked as searches")
    first_to_tenth: float = Field(description="how far their 1st result scores above their 10th (median)")
    neighbours: float = Field(description="how far two neighbouring results score apart on average")
    note: str = Field(description="the scale in words")


class RulesOut(_Out):
    revision: int = Field(description="the newest change's id: every serving process follows it "
                                      "within RECSYS_WATCH_INTERVAL_S")
    rules: list[RuleOut]
    warnings: list[str] = Field(default_factory=list,
                                description="rules that act on no item of the served catalogue")
    scale: ScoreScaleOut = Field(description="what a boost's or a bury's amount moves on the served "
                                             "catalogue (`recsys.score_scale`): amounts are in its "
                                             "scores' units")


class RuleChangeOut(_Out):
    id: int
    name: str
    action: str = Field(description="create, update or delete")
    actor: str = Field(description="the X-Actor header of the change (\"admin\" without one)")
    changed_at: datetime
    before: dict[str, Any] | None
    after: dict[str, Any] | None


class RuleChangesOut(_Out):
    changes: list[RuleChangeOut] = Field(description="newest first")


class ErrorOut(_Out):
    detail: Any = Field(description="what was wrong: a message, or for a 422 a list of the errors")
    message: str | None = Field(None, description="422: the errors in one line, naming the fields")
    request_id: str | None = Field(None, description="500: the id the log has the traceback under")


def error_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    what = {400: "the body is not JSON (or nested too deep to parse)",
            401: "no bearer token", 403: "wrong bearer token, or a path outside the data folder",
            404: "unknown item, version or job (or admin is off)", 409: "conflict: see the detail",
            415: "neither JSON nor multipart/form-data",
            413: "the body is over RECSYS_MAX_BODY_BYTES (RECSYS_MAX_UPLOAD_BYTES for uploads)",
            422: "an input over a limit, of the wrong type or unknown to the model (a filter "
                 "key); `message` says which",
            429: "too many training jobs are waiting",
            500: "internal error; `request_id` finds its traceback in the log",
            503: "no model is loaded yet, the version `current` names is still loading in "
                 "this process, the store is unavailable, or the request went over its time "
                 "budget (RECSYS_REQUEST_TIMEOUT_S); retry after the Retry-After header"}
    return {c: {"model": ErrorOut, "description": what.get(c, "error")} for c in codes}


SCORING_RESPONSES = error_responses(400, 404, 413, 422, 500, 503)


_SYNONYM_NAME = r"^[\w.\-]{1,64}$"
_SYNONYM_NAME_WORDS = "1-64 letters, digits, '.', '_' or '-'"
SynonymName = Annotated[str, Field(pattern=_SYNONYM_NAME, description=_SYNONYM_NAME_WORDS + " (by default the "
                                   "synonym's first word)", examples=["navy"])]
# a name's pattern in words, for the 422 of a name that does not match it (`api.errors`)
PATTERN_WORDS = {_RULE_NAME: _RULE_NAME_WORDS, _SYNONYM_NAME: _SYNONYM_NAME_WORDS,
                 FACET_NAME.pattern: "a facet's name: lower-case letters, digits and '_', starting with a letter "
                                     "(at most 32)"}
# a NUL or a lone surrogate is refused, as in a `line` (it was cleaned out silently)
SynonymWord = Annotated[StoredText, Field(min_length=1, max_length=128)]


class SynonymBody(_Request):
    """A synonym without its name (`recsys.synonyms` checks the words): `words` and `to`, or the
    synonyms.txt `line`."""

    words: list[SynonymWord] = Field(default_factory=list, max_length=64,
                                     description="the query words, one word each; without `to`, a "
                                                 "two-way list: each counts as every other",
                                     examples=[["sofa", "couch", "settee"]])
    to: list[SynonymWord] = Field(default_factory=list, max_length=64,
                                  description="one-way: what `words` count as (words or phrases); "
                                              "they do not count as `words`", examples=[["blue"]])
    line: StoredText | None = Field(None, max_length=2048, description="instead of words and to: a "
                                    "synonyms.txt line, `navy => blue` or `sofa, couch, settee`")


class SynonymIn(SynonymBody):
    name: SynonymName | None = None


class SynonymsRequest(_Request):
    synonyms: list[SynonymIn] = Field(min_length=1, description="stored all together or not at all")


class SynonymOut(_Out):
    name: str
    words: list[str]
    to: list[str] = Field(description="[] for a two-way list")
    line: str = Field(description="as a synonyms.txt line")
    source: str = Field(description="store (the admin API) or file (RECSYS_SYNONYMS_FILE)")
    usable: bool = Field(description="some item of the served catalogue says a word it counts as")
    created_at: datetime | None = None
    updated_at: datetime | None = None
    updated_by: str | None = None


class SynonymsOut(_Out):
    revision: int = Field(description="the store's newest synonym change id: every serving "
                                      "process follows it within RECSYS_WATCH_INTERVAL_S")
    synonyms: list[SynonymOut]
    warnings: list[str] = Field(default_factory=list,
                                description="synonyms the served catalogue cannot use (no item has a "
                                            "word they count as): stored, changing no result")

