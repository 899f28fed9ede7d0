"""The lexical start's click-association weight is the catalogue's: chosen on held-aside queries,
low where clicks mislead, kept at the model's default where they carry what the words cannot."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from recsys.catalog import Catalog
from recsys.lexicon import LexiconConfig
from recsys.model_config import ModelOptions
from training.fit import TrainConfig, choose_served, start_assoc_ndcg
from training.start import build_featurizer, new_model

TITLES = (["oak table", "oak side table", "pine table", "glass table", "low table", "tall table"]
          + ["walnut chair", "walnut dining chair", "walnut desk chair"]
          + ["red dress", "red party dress", "red summer dress", "blue dress", "blue party dress",
             "blue summer dress", "green scarf", "green hat"])


def catalog() -> Catalog:
    items = pd.DataFrame({"item_id": [f"T{i:02d}" for i in range(len(TITLES))], "title": TITLES})
    return Catalog.build(items, lexicon=LexiconConfig(enabled=False))


def clicks(cat: Catalog, pairs: list[tuple[str, str]], times: int) -> pd.DataFrame:
    """Each (query, title) clicked `times` times."""
    rows = [(q, cat.titles.index(t)) for q, t in pairs for _ in range(times)]
    return pd.DataFrame({"query": [q for q, _ in rows], "item_idx": np.array([i for _, i in rows]),
                         "label": np.ones(len(rows), dtype=np.float32),
                         "weight": np.ones(len(rows), dtype=np.float32)})


# a said word's click association whole, as for a word the catalogue never says: the choice of
# a weaker start is what these tests are about (the factors that damp a said word's clicks
# first, `ModelOptions.said_assoc_share`, have a test of their own below)
WHOLE = replace(ModelOptions(), said_assoc_share=1.0)


def chosen(cat: Catalog, rows: pd.DataFrame, judged: dict[str, dict[int, float]],
           options: ModelOptions = WHOLE) -> tuple[float, dict]:
    """The weight the held-aside queries `judged` choose, and each weight's mean NDCG."""
    cfg = TrainConfig(model=options)
    featurizer = build_featurizer(cat, rows, cfg)
    model = new_model(featurizer, cfg.seed)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    per_query = start_assoc_ndcg(model, featurizer, judged, cfg)
    after = model.state_dict()
    # the model is left as the fit starts from it: the default weight, its own vectors back
    for name, value in before.items():
        assert (after[name] == value).all(), name
    weight = choose_served(per_query, cfg.model.init_assoc, cfg.start_assoc_z)
    return weight, {f"{w:g}": float(v.mean()) for w, v in per_query.items()}


# queries with "table" in them: every table is relevant, those with the other word most
TABLE_QUERIES = ["table", "oak table", "side table", "low table", "tall table", "glass table"]


def tables(cat: Catalog) -> dict[str, dict[int, float]]:
    out = {}
    for q in TABLE_QUERIES:
        words = set(q.split()) - {"table"}
        out[q] = {cat.titles.index(t): 2.0 if words <= set(t.split()) else 1.0 for t in TITLES if "table" in t}
    return out


def test_clicks_that_mislead_get_a_weak_start():
    """Logged shoppers who typed "table" chose walnut chairs; a new shopper's "table" means a
    table. As strong as an exact match, the association ranks chairs among the tables; the
    held-aside queries show it on every one of them, and a weaker weight is taken."""
    cat = catalog()
    rows = clicks(cat, [("table", "walnut chair"), ("table", "walnut dining chair"),
                        ("table", "walnut desk chair")], times=20)
    weight, ndcg = chosen(cat, rows, tables(cat))
    default = TrainConfig().model.init_assoc
    assert weight < default and ndcg[f"{weight:g}"] > ndcg[f"{default:g}"]
    assert ndcg[f"{weight:g}"] == max(ndcg.values())


def test_a_said_words_clicks_count_half():
    """The same misleading clicks with the default options: "table" is a word the catalogue
    says, so its association counts half, and every start ranks the tables first; "crimson",
    which no title says, keeps its association whole."""
    cat = catalog()
    rows = clicks(cat, [("table", "walnut chair"), ("table", "walnut dining chair"),
                        ("table", "walnut desk chair"), ("crimson", "red dress")], times=20)
    weight, ndcg = chosen(cat, rows, tables(cat), ModelOptions())
    assert weight == TrainConfig().model.init_assoc and set(ndcg.values()) == {1.0}
    featurizer = build_featurizer(cat, rows, TrainConfig())
    enc = featurizer.encode_queries(["table", "oak table", "crimson table"])
    np.testing.assert_array_equal(featurizer.assoc_scales(enc), [[0.5, 1], [0.5, 0.5], [1, 0.5]])  # (3, 2)
    whole = build_featurizer(cat, rows, TrainConfig(model=WHOLE))
    assert (whole.assoc_scales(enc) == 1).all()


def test_clicks_that_carry_a_synonym_keep_the_default():
    """Shoppers' "crimson" are red dresses, a word no title has: the model's default weight
    ranks them best ("crimson dress" finds the blue dresses too with a weaker one), and is kept."""
    cat = catalog()
    reds = {cat.titles.index(t): 1.0 for t in TITLES if t.startswith("red ")}
    rows = clicks(cat, [("crimson", cat.titles[i]) for i in reds], times=20)
    weight, ndcg = chosen(cat, rows, {"crimson": reds, "crimson dress": reds})
    default = TrainConfig().model.init_assoc
    assert ndcg[f"{default:g}"] == max(ndcg.values()) == 1.0
    assert weight == default


def test_a_weaker_start_is_served_only_when_it_ranks_best_and_the_fit_starts_from_the_default(planted_paths):
    """Where a weaker association weight alone ranks the held-aside queries best (better than
    every blend toward the fitted weights), the served heads have it; the fit itself always
    starts from the model's default, so its weights do not depend on the choice."""
    from training.fit import fit_model, train_recommender
    from training.groups import make_groups
    from training.train import TrainInputs, load_training_data

    cat = catalog()
    rows = clicks(cat, [("table", "walnut chair"), ("table", "walnut dining chair"),
                        ("table", "walnut desk chair")], times=20)
    judged = tables(cat)
    cfg = TrainConfig(epochs=1, alphas=(0.0,), model=WHOLE)
    featurizer = build_featurizer(cat, rows, cfg)
    model = new_model(featurizer, cfg.seed)
    groups = make_groups(rows, cat.n_items)
    report = fit_model(model, featurizer, groups, cfg, validation=groups, validation_judgments=judged)
    assert report.start_assoc is not None and report.start_assoc < cfg.model.init_assoc
    assert report.alpha == 0.0 and report.alpha_rule.endswith("the start with less weight on clicks")
    for head in model.heads.values():
        assert float(head.evidence_weight.detach()[1]) == report.start_assoc

    planted, planted_rows, _ = load_training_data(TrainInputs(planted_paths["items"], planted_paths["interactions"]))
    one = train_recommender(planted, planted_rows, TrainConfig(epochs=1, alphas=(1.0,), start_assoc_shares=(0.25,)))[0]
    other = train_recommender(planted, planted_rows, TrainConfig(epochs=1, alphas=(1.0,)))[0]
    for a, b in zip(one.model.state_dict().values(), other.model.state_dict().values()):
        assert (a == b).all()


def test_a_served_start_has_the_held_aside_queries_clicks_too(planted_paths):
    """When the held-aside queries choose the start, the start served is built from every
    training query's clicks, theirs too: it scores every logged query exactly as the start
    built from all the rows does (served from the fit's rows alone, it lacked a tenth of them)."""
    from training.fit import train_recommender
    from training.start import untrained_recommender
    from training.train import TrainInputs, load_training_data

    planted, rows, _ = load_training_data(TrainInputs(planted_paths["items"], planted_paths["interactions"]))
    cfg = TrainConfig(epochs=1, alphas=(0.0,), start_assoc_shares=(1.0,))
    served, report = train_recommender(planted, rows, cfg)
    assert report.alpha == 0.0 and report.start_assoc == cfg.model.init_assoc
    every = untrained_recommender(planted, rows, cfg)
    queries = sorted(set(rows["query"]))
    assert len(queries) >= 50  # enough to hold some aside
    for query in queries:
        np.testing.assert_array_equal(served.index.score(served.index.query_state(query)),
                                      every.index.score(every.index.query_state(query)), err_msg=query)


def test_the_bar_for_weaker_weights_grows_with_how_many_are_tried():
    """Two weaker click weights tried at a one-sided 1 standard error would let one through by
    noise about twice as often as one weight: the bar is raised to keep that chance at one
    weight's (Bonferroni), and a gain between the two bars keeps the default."""
    from training.fit import bonferroni_z

    assert bonferroni_z(1.0, 1) == 1.0 and bonferroni_z(1.0, 0) == 1.0
    assert bonferroni_z(1.0, 2) == pytest.approx(1.4096, abs=1e-4)
    assert bonferroni_z(2.0, 3) == pytest.approx(2.4284, abs=1e-4)
    # per-query NDCG of the default start and two weaker ones: the first gains 1.2 standard errors
    rng = np.random.default_rng(0)
    base = rng.uniform(0.2, 0.8, 40)
    noise = rng.normal(0.0, 1.0, 40)
    noise = (noise - noise.mean()) / noise.std(ddof=1)  # mean 0, standard deviation 1
    gain = 0.05 * (noise + 1.2 / np.sqrt(40))  # 1.2 standard errors of its mean above 0
    weaker = {"default": base, "half": base + gain, "quarter": base - 0.01}
    assert choose_served(weaker, "default", 1.0) == "half"
    assert choose_served(weaker, "default", bonferroni_z(1.0, 2)) == "default"
