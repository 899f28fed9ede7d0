"""Loading a saved version (recsys.artifact.load_version) builds its model once, for real, and
copies the weights into it: the same model, bit for bit, as building it and loading the state
the straightforward way, without building a second model on the meta device first (whose
Python meta kernels import torch._dynamo: 1.5 CPU-s in every process that loads a version,
a server's worker or `recsys recommend`, for a 0.2 CPU-s load)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import torch
from safetensors.torch import load_file

from recsys.artifact import load_version, resolve_version_dir
from recsys.model import FacetScorer
from recsys.recommender import Recommender

ROOT = Path(__file__).resolve().parents[2]
QUERIES = ["scarlet gown", "azure blouse casual", "red", "zzqx unknownword", "kicks onyx onyx"]


def test_the_loaded_model_is_the_straightforward_one_bit_for_bit(planted_artifacts):
    folder = resolve_version_dir(planted_artifacts[0])
    rec = load_version(folder)
    fz = rec.featurizer
    old = FacetScorer(rec.model.cfg, *fz.attribute_buffers())
    old.load_state_dict(load_file(str(folder / "model.safetensors")))
    new_state, old_state = rec.model.state_dict(), old.state_dict()
    assert list(new_state) == list(old_state)
    for name, tensor in old_state.items():
        assert tensor.dtype == new_state[name].dtype and torch.equal(tensor, new_state[name]), name
    assert [n for n, p in rec.model.named_parameters() if p.requires_grad] == \
        [n for n, p in old.named_parameters() if p.requires_grad]
    straightforward = Recommender(old.eval(), fz, version=folder.name, manifest=rec.manifest)
    for q in QUERIES:
        a, b = rec.recommend(q, k=10), straightforward.recommend(q, k=10)
        assert [(i.item_id, i.score) for i in a.items] == [(i.item_id, i.score) for i in b.items], q


def test_a_load_imports_no_dynamo_and_keeps_no_mapping_of_the_file(planted_artifacts, tmp_path):
    """In a process of its own: after the load, the weights file is truncated in place (as a
    damaged disk or a careless copy would); a model still mapping its pages would die of SIGBUS."""
    import shutil

    copy = tmp_path / "artifacts"
    shutil.copytree(planted_artifacts[0], copy, symlinks=True)
    script = textwrap.dedent(f"""
        import os, sys
        from recsys.artifact import load_version, resolve_version_dir
        folder = resolve_version_dir({str(copy)!r})
        rec = load_version(folder)
        assert "torch._dynamo" not in sys.modules, "a load imported torch._dynamo"
        before = [(i.item_id, i.score) for i in rec.recommend("scarlet gown", k=5).items]
        os.truncate(folder / "model.safetensors", 0)
        rec.model.state_dict()["word_emb.weight"].sum()  # every page of the largest table read
        after = [(i.item_id, i.score) for i in rec.recommend("scarlet gown", k=5).items]
        assert after == before
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", (done.returncode, done.stderr[-3000:])


def test_a_folder_whose_versions_none_is_served_names_the_newest(planted_artifacts, tmp_path):
    """A first version kept, not served (below BM25 in its own report), leaves a folder with no
    `current`: loading it names that version and how to use it, rather than "train one"."""
    import shutil

    import pytest

    from recsys.artifact import CURRENT_POINTER
    from recsys.errors import ArtifactError

    folder = resolve_version_dir(planted_artifacts[0])
    copy = tmp_path / "art"
    shutil.copytree(folder, copy / folder.name)
    with pytest.raises(ArtifactError, match=f"newest {folder.name}.*--model {copy / folder.name}.*--activate"):
        resolve_version_dir(copy)
    (copy / CURRENT_POINTER).write_text(folder.name)
    assert resolve_version_dir(copy) == copy / folder.name
    shutil.rmtree(copy / folder.name)
    (copy / CURRENT_POINTER).unlink()
    with pytest.raises(ArtifactError, match="no model here"):
        resolve_version_dir(copy)
