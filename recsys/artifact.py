"""Model versions on disk: write one atomically, point `current` at it, load it safely.

A version folder holds `manifest.json` (version, dates, data fingerprints, metrics, config),
`model.safetensors` (weights), `arrays.safetensors` (catalogue and evidence arrays) and
`catalog.json` / `words.json` (strings). Nothing is unpickled: a replaced file can at worst fail
to load, never run code.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import torch
from safetensors.numpy import load_file as load_arrays
from safetensors.numpy import save_file as save_arrays
from safetensors.torch import load_file as load_tensors
from safetensors.torch import save_file as save_tensors

from .catalog import Attribute, Catalog, NumericBuckets
from .encoding import Featurizer
from .errors import ArtifactError
from .evidence import Evidence
from .facets import FACETS
from .model import FacetScorer, ModelConfig
from .recommender import Recommender
from .words import WordTable

FORMAT_VERSION = 3
CURRENT_POINTER = "current"
_FILES = ("manifest.json", "model.safetensors", "arrays.safetensors", "catalog.json", "words.json")


def new_version_name(now: datetime | None = None) -> str:
    now = now or datetime.now(timezone.utc)
    return now.strftime("v%Y%m%d-%H%M%S-%f")


def save_version(rec: Recommender, artifacts_dir: str | Path, manifest: dict,
                 popularity: np.ndarray | None = None, make_current: bool = True) -> Path:
    """Write a new version folder atomically (temp folder + rename) and return its path."""
    root = Path(artifacts_dir)
    root.mkdir(parents=True, exist_ok=True)
    name = manifest.get("version") or new_version_name()
    manifest = {**manifest, "version": name, "format": FORMAT_VERSION,
                "config": rec.model.cfg.to_json(), "facets": list(FACETS)}
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=root))
    try:
        _write_version(rec, tmp, manifest, popularity)
        final = root / name
        os.rename(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if make_current:
        set_current(root, name)
    rec.version, rec.manifest = name, manifest
    return final


def _write_version(rec: Recommender, folder: Path, manifest: dict, popularity) -> None:
    cat, fz = rec.catalog, rec.featurizer
    state = {k: v.contiguous() for k, v in rec.model.state_dict().items()}
    save_tensors(state, str(folder / "model.safetensors"))
    arrays: dict[str, np.ndarray] = {}
    for f in FACETS:
        _put_csr(arrays, f"items.{f}", cat.item_attrs[f])
        _put_csr(arrays, f"exact.{f}", fz.evidence.exact[f])
        _put_csr(arrays, f"assoc.{f}", fz.evidence.assoc[f])
    if popularity is not None:
        arrays["popularity"] = np.asarray(popularity, dtype=np.float32)
    save_arrays(arrays, str(folder / "arrays.safetensors"))
    catalog_json = {
        "item_ids": cat.item_ids,
        "titles": cat.titles,
        "texts": cat.texts,
        "vocab": {f: [[a.key, a.value] for a in cat.vocab[f]] for f in FACETS},
        "buckets": {k: b.edges for k, b in cat.buckets.items()},
    }
    _write_json(folder / "catalog.json", catalog_json)
    _write_json(folder / "words.json", fz.words.to_json())
    _write_json(folder / "manifest.json", manifest)  # last: its presence marks a complete folder


def _put_csr(arrays: dict, prefix: str, m: sp.csr_matrix) -> None:
    arrays[f"{prefix}.indptr"] = m.indptr.astype(np.int64)
    arrays[f"{prefix}.indices"] = m.indices.astype(np.int64)
    arrays[f"{prefix}.data"] = m.data.astype(np.float32)
    arrays[f"{prefix}.shape"] = np.asarray(m.shape, dtype=np.int64)


def _get_csr(arrays: dict, prefix: str) -> sp.csr_matrix:
    shape = tuple(int(x) for x in arrays[f"{prefix}.shape"])
    return sp.csr_matrix(
        (arrays[f"{prefix}.data"], arrays[f"{prefix}.indices"], arrays[f"{prefix}.indptr"]), shape=shape
    )


def _write_json(path: Path, obj) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(obj, fh, ensure_ascii=False)
        fh.flush()
        os.fsync(fh.fileno())


def set_current(artifacts_dir: str | Path, version: str) -> None:
    root = Path(artifacts_dir)
    if not (root / version / "manifest.json").is_file():
        raise ArtifactError(f"{root / version}: no such model version (see `list_versions`)")
    tmp = root / f".{CURRENT_POINTER}.tmp"
    tmp.write_text(version + "\n", encoding="utf-8")
    os.replace(tmp, root / CURRENT_POINTER)


def current_version(artifacts_dir: str | Path) -> str | None:
    pointer = Path(artifacts_dir) / CURRENT_POINTER
    return pointer.read_text(encoding="utf-8").strip() if pointer.is_file() else None


def resolve_version_dir(path: str | Path) -> Path:
    """A version folder, or an artifacts folder (then its current version)."""
    p = Path(path)
    if (p / "manifest.json").is_file():
        return p
    name = current_version(p)
    if name is None:
        raise ArtifactError(
            f"{p}: no model here (neither a version folder nor an artifacts folder with a "
            f"'current' pointer); train one with `recsys train` or pass --model"
        )
    return p / name


def list_versions(artifacts_dir: str | Path) -> list[dict]:
    root = Path(artifacts_dir)
    if not root.is_dir():
        return []
    current = current_version(root)
    out = []
    for d in sorted(root.iterdir()):
        if d.name.startswith(".") or not (d / "manifest.json").is_file():
            continue
        m = read_manifest(d)
        out.append({"version": d.name, "trained_at": m.get("trained_at"),
                    "metrics": m.get("metrics", {}), "current": d.name == current})
    return out


def read_manifest(version_dir: str | Path) -> dict:
    return json.loads((Path(version_dir) / "manifest.json").read_text(encoding="utf-8"))


def load_version(path: str | Path) -> Recommender:
    folder = resolve_version_dir(path)
    missing = [f for f in _FILES if not (folder / f).is_file()]
    if missing:
        raise ArtifactError(f"{folder}: incomplete model version, missing {', '.join(missing)}")
    manifest = read_manifest(folder)
    if manifest.get("format") != FORMAT_VERSION:
        raise ArtifactError(
            f"{folder}: model format {manifest.get('format')!r}, this program reads format "
            f"{FORMAT_VERSION}; retrain with this version of recsys"
        )
    arrays = load_arrays(str(folder / "arrays.safetensors"))
    cat_json = json.loads((folder / "catalog.json").read_text(encoding="utf-8"))
    catalog = Catalog(
        item_ids=cat_json["item_ids"],
        titles=cat_json["titles"],
        texts=cat_json["texts"],
        vocab={f: [Attribute(f, k, v) for k, v in cat_json["vocab"][f]] for f in FACETS},
        item_attrs={f: _get_csr(arrays, f"items.{f}") for f in FACETS},
        buckets={k: NumericBuckets(e) for k, e in cat_json["buckets"].items()},
    )
    words = WordTable.from_json(json.loads((folder / "words.json").read_text(encoding="utf-8")))
    evidence = Evidence(
        exact={f: _get_csr(arrays, f"exact.{f}") for f in FACETS},
        assoc={f: _get_csr(arrays, f"assoc.{f}") for f in FACETS},
    )
    cfg = ModelConfig.from_json(manifest["config"])
    featurizer = Featurizer(catalog, words, evidence, cfg)
    buffers = featurizer.attribute_buffers()
    model = FacetScorer(cfg, *buffers)
    state = load_tensors(str(folder / "model.safetensors"))
    try:
        model.load_state_dict(state)
    except RuntimeError as exc:
        raise ArtifactError(f"{folder}: weights do not fit the saved config: {exc}") from None
    rec = Recommender(model.eval(), featurizer, version=folder.name, manifest=manifest)
    rec.popularity = arrays.get("popularity")
    return rec
