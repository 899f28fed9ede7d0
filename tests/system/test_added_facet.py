"""A fifth facet declared by a schema (`[facets] add = ["material"]`) trains, loads and serves five
heads through the library, the command line and the HTTP API, with no code naming it; the
material head is what ranks the right item first (tests/planted.py: only the material word tells
the right items apart). Artifacts of another format are refused with the format named."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from cli.app import create_app
from recsys.artifact import FORMAT_VERSION, load_version
from recsys.catalog import Catalog
from recsys.errors import ArtifactError, InputError
from recsys.io.readers import read_items
from recsys.io.schema import Schema
from recsys.reindex import with_catalog
from tests import zygote
from tests.planted import MATERIALS

ROOT = Path(__file__).resolve().parents[2]
HEADS = ["quality", "color", "style", "other", "material"]
QUERY = "wool dress"


def recsys(*args: str) -> subprocess.CompletedProcess:
    # forked from a warm interpreter (tests/zygote.py): the imports of a fresh one are 3-4 s of CPU
    return zygote.run("cli.main", list(args), {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}, cwd=ROOT)


@pytest.fixture(scope="module")
def material_model(material_trained):
    return load_version(material_trained[0])


def right(item: dict) -> bool:
    return item["attributes"]["material"] == ["wool"] and item["attributes"]["other"][0] == "category:dress"


def test_the_schema_adds_the_facet_and_its_column_feeds_it(material_paths):
    schema = Schema.load(material_paths["schema"])
    assert schema.facets == tuple(HEADS)
    items, _ = read_items(material_paths["items"], schema=schema)
    catalog = Catalog.build(items, schema.columns, lexicon=schema.lexicon, facets=schema.facets)
    assert catalog.facets == tuple(HEADS)
    assert sorted(a.value for a in catalog.vocab["material"]) == sorted(MATERIALS)
    assert not any(a.key == "material" for a in catalog.vocab["other"])  # not in `other` too
    with pytest.raises(InputError, match=r"facet 'material', which is not one of .*\[facets\] add"):
        Catalog.build(items, schema.columns)  # the default four facets


def test_training_builds_five_heads_and_records_them(material_trained, material_model):
    printed = material_trained[1]
    manifest = json.loads((Path(printed["path"]) / "manifest.json").read_text())
    assert manifest["facets"] == manifest["config"]["facets"] == HEADS
    assert manifest["data"]["schema"]["facets"] == {"add": ["material"]}
    assert list(material_model.model.heads) == HEADS
    assert material_model.facets == tuple(HEADS) and material_model.index.facets == tuple(HEADS)
    # every clicked item of a held-out query is one of its 8 right items, and they come first
    assert printed["metrics"]["held_out"]["model"]["recall@10"] == 1.0


def test_the_material_head_ranks_the_right_items_first(material_model):
    res = material_model.recommend(QUERY, k=8)
    for item in res.items:
        assert item.attributes["material"] == ["wool"] and "category:dress" in item.attributes["other"]
        heads = {h.head: h for h in item.explanation.heads}
        assert list(heads) == HEADS
        assert item.score == pytest.approx(item.explanation.prior + sum(h.contribution for h in heads.values()),
                                           abs=1e-4)
        assert [(m.query_token, m.attribute) for m in heads["material"].matches] == [("wool", "wool")]
    # against the same item in cotton, the material head is the whole difference
    top = res.items[0]
    twin = next(i for i, a in enumerate(material_model.catalog.item_ids)
                if material_model.catalog.attribute_labels(i)["material"] == ["cotton"]
                and material_model.catalog.titles[i] == top.title
                and material_model.catalog.attribute_labels(i)["color"] == top.attributes["color"])
    pair = material_model.recommend(QUERY, k=2, candidates=[material_model.catalog.item_ids[twin], top.item_id])
    assert pair.items[0].item_id == top.item_id
    a, b = ({h.head: h.contribution for h in i.explanation.heads} for i in pair.items)
    others = abs(pair.items[0].explanation.prior - pair.items[1].explanation.prior) + sum(
        abs(a[h] - b[h]) for h in HEADS if h != "material")
    assert a["material"] - b["material"] > others
    muted = material_model.recommend(QUERY, k=2, candidates=[material_model.catalog.item_ids[twin], top.item_id],
                                     head_weights={"material": 0.0})
    assert all(h.contribution == 0.0 for i in muted.items for h in i.explanation.heads if h.head == "material")
    with pytest.raises(InputError, match=re.escape("head_weights.flavour: unknown head; this model's heads "
                                                   "are quality, color, style, other, material")):
        material_model.recommend(QUERY, head_weights={"flavour": 1.0})


def test_recommend_and_explain_on_the_command_line(material_trained):
    art = str(material_trained[0])
    out = recsys("recommend", QUERY, "--k", "3", "--model", art, "--json")
    assert out.returncode == 0, out.stderr
    items = json.loads(out.stdout)["items"]
    assert all(right(i) for i in items)
    assert all([h["head"] for h in i["explanation"]["heads"]] == HEADS for i in items)
    out = recsys("explain", QUERY, items[0]["item_id"], "--model", art, "--json")
    assert out.returncode == 0, out.stderr
    heads = {h["head"]: h for h in json.loads(out.stdout)["heads"]}
    assert list(heads) == HEADS and heads["material"]["attributes"] == ["wool", "(no match)"]
    out = recsys("recommend", QUERY, "--k", "3", "--model", art)
    assert out.returncode == 0 and "■ material" in out.stdout, out.stdout
    out = recsys("explain", QUERY, items[0]["item_id"], "--model", art)
    assert out.returncode == 0 and "material head" in out.stdout, out.stdout


def test_the_api_serves_five_heads(material_trained, material_model, tmp_path):
    from api.config import Settings

    settings = Settings(artifacts_dir=material_trained[0], data_dir=tmp_path, default_data_dir=tmp_path / "d",
                        watch_interval_s=0)
    with TestClient(create_app(settings, recommender=material_model)) as client:
        assert client.get("/model").json()["facets"] == HEADS
        body = client.post("/recommend", json={"query": QUERY, "k": 8}).json()
        for item in body["items"]:
            assert right(item) and list(item["attributes"]) == HEADS
            heads = item["explanation"]["heads"]
            assert [h["head"] for h in heads] == HEADS
            assert item["score"] == pytest.approx(item["explanation"]["prior"]
                                                  + sum(h["contribution"] for h in heads), abs=1e-4)
        top = body["items"][0]["item_id"]
        detail = client.post("/explain", json={"query": QUERY, "item_id": top}).json()
        assert [h["head"] for h in detail["heads"]] == HEADS
        material = detail["heads"][HEADS.index("material")]
        assert material["attributes"] == ["wool", "(no match)"] and material["contribution"] > 0
        muted = client.post("/recommend", json={"query": QUERY, "k": 3, "head_weights": {"material": 0}}).json()
        assert all(h["contribution"] == 0 for i in muted["items"] for h in i["explanation"]["heads"]
                   if h["head"] == "material")
        refused = client.post("/recommend", json={"query": QUERY, "head_weights": {"flavour": 1.0}})
        assert refused.status_code == 422 and "head_weights.flavour" in refused.json()["message"]


def test_a_new_catalogue_is_indexed_with_the_model_facets(material_paths, material_model):
    items, _ = read_items(material_paths["items"])
    again = with_catalog(material_model, items.head(40), Schema.from_json(
        material_model.manifest["data"]["schema"]))
    assert again.facets == tuple(HEADS) and again.catalog.facets == tuple(HEADS)
    assert all(right({"attributes": i.attributes}) for i in again.recommend(QUERY, k=4).items)
    with pytest.raises(InputError, match="the model has the heads quality, color, style, other, material"):
        with_catalog(material_model, items.head(40), Schema())


@pytest.mark.parametrize("fmt", [FORMAT_VERSION - 1, FORMAT_VERSION + 1])
def test_another_format_is_refused_naming_it(material_trained, tmp_path, fmt):
    import shutil

    version = tmp_path / "v"
    shutil.copytree(Path(material_trained[1]["path"]), version)
    manifest = json.loads((version / "manifest.json").read_text())
    (version / "manifest.json").write_text(json.dumps({**manifest, "format": fmt}))
    with pytest.raises(ArtifactError, match=f"model format {fmt}, this program reads format {FORMAT_VERSION}; retrain"):
        load_version(version)
