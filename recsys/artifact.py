"""Model versions on disk: write one atomically, point `current` at it, load it safely.

A version folder holds `manifest.json` (version, dates, data fingerprints, metrics, config),
`model.safetensors` (weights), `arrays.safetensors` (catalogue and evidence arrays) and
`catalog.json` / `words.json` (strings), and `items.csv`, a copy of the items file it was trained
on (what catalogue changes and retrains from events read). Nothing is unpickled: a replaced file
can at worst fail to load, never run code.

The manifest's `files` maps every other file to its sha256 (`recsys.io.text.fingerprint`), verified on
load: a damaged file is refused by name. Every file a version is read from must resolve (symlinks
followed) inside its folder; the manifest's `data.*.file` paths say where training read its
inputs (provenance, often outside) and are never opened.

Nothing is computed with a file's content before it is checked against the others: JSON types,
the catalogue's and the word table's sizes, every sparse table's shape, dtypes, index ranges and
order, every float finite, and the weights' names, shapes and dtypes against the model the
manifest's config builds (on the meta device: no memory until the file has proven its sizes).
A check that fails raises `ArtifactError` naming the file and the problem. Last, a few queries
are scored (`recsys.smoke`): finite but absurd weights are refused there.
"""

from __future__ import annotations

import dataclasses
import fcntl
import itertools
import json
import logging
import math
import os
import re
import shutil
import struct
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn, TypeVar, cast

import numpy as np
import scipy.sparse as sp
import torch
from safetensors.numpy import load_file as load_arrays
from safetensors.numpy import save_file as save_arrays
from safetensors.torch import load_file as load_tensors
from safetensors.torch import save_file as save_tensors

from .catalog import Attribute, Catalog, NumericBuckets, attribute_entry, attribute_from_entry
from .encoding import Featurizer
from .errors import ArtifactError, DataError
from .evidence import Evidence, phrases
from .facets import facet_name_problem
from .io.schema import Schema
from .io.text import fingerprint
from .model import FacetScorer
from .model_config import ModelConfig
from .recommender import Recommender
from .smoke import smoke_problem
from .words import WordTable

T = TypeVar("T")

FORMAT_VERSION = 4  # 4: BM25 start (source_bias, BM25 IDF and mean count buffers)
CURRENT_POINTER = "current"
_FILES = ("manifest.json", "model.safetensors", "arrays.safetensors", "catalog.json", "words.json")
ITEMS_FILE = "items.csv"  # optional: versions saved without an items file, or by older releases
_WEIGHTS = "model.safetensors"  # the file a version whose scores are wrong is refused by
log = logging.getLogger(__name__)
# versions whose manifest has no `files` map (saved by an older release), warned about once each
_unchecked_warned: set[Path] = set()
VERSION_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._\-]{0,127}$")
# the folder of the catalogue revisions' items files, beside the versions (`api.revision`): no version
CATALOGUES = "catalogues"
# rows of each sparse table in arrays.safetensors, `<kind>.<facet>`; columns: the facet's vocabulary
_CSR_ROWS = {"items": "items", "exact": "words", "assoc": "words"}
# and the association's confident lift and support (`evidence.Association`), which versions saved
# before lack
_CSR_OPTIONAL_ROWS = {"confident": "words", "support": "words"}
_CSR_PARTS = ("indptr", "indices", "data", "shape")
_CSR_SORTED = {"exact", "assoc"}  # looked up by binary search: columns ascending in every row
_MAX_CONFIG_INT = 1 << 26  # no config size (embedding rows, widths) is near this
_LOCK = ".lock"  # held (flock) by whoever writes a temporary folder, released when it dies
# save_version's (and, without a lock, older releases' `.v<name>.<random>`), training jobs', uploads'
_TEMP_PREFIXES = (".tmp-", ".v", ".staging-", ".upload-")


def new_version_name(now: datetime | None = None) -> str:
    now = now or datetime.now(UTC)
    return now.strftime("v%Y%m%d-%H%M%S-%f")


# ---- temporary folders ----------------------------------------------------------------------------


class TempDir:
    """A hidden folder `prefix<random>` under `root`, locked (flock on its `.lock`) for as long as
    this object lives or until `release`: `remove_stale_temp` removes only unlocked ones, so a
    process killed mid-write leaves nothing that the next start does not clean up."""

    def __init__(self, root: Path, prefix: str):
        self.path = Path(tempfile.mkdtemp(prefix=prefix, dir=root))
        self._fd: int | None = os.open(self.path / _LOCK, os.O_CREAT | os.O_RDWR, 0o600)
        fcntl.flock(self._fd, fcntl.LOCK_SH)

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def remove(self) -> None:
        self.release()
        shutil.rmtree(self.path, ignore_errors=True)


def hold_lock(folder: Path) -> int | None:
    """Share the lock of a `TempDir` made by another process (a training job's staging folder);
    returns the descriptor to keep open, None when there is no lock file."""
    try:
        fd = os.open(Path(folder) / _LOCK, os.O_RDWR)
    except OSError:
        return None
    fcntl.flock(fd, fcntl.LOCK_SH)
    return fd


def remove_stale_temp(artifacts_dir: str | Path, min_age_s: float = 60.0) -> list[str]:
    """Remove temporary folders (and `current` pointer temp files) that nobody writes any more:
    folders whose lock nobody holds, or, without a lock file, older than `min_age_s`. Returns
    their names."""
    root = Path(artifacts_dir)
    removed: list[str] = []
    if not root.is_dir():
        return removed
    for entry in root.iterdir():
        name = entry.name
        try:
            if entry.is_dir() and not entry.is_symlink() and name.startswith(_TEMP_PREFIXES):
                if _unlocked(entry, min_age_s):
                    shutil.rmtree(entry, ignore_errors=True)
                    removed.append(name)
            elif (name.startswith(f".{CURRENT_POINTER}.") and name.endswith(".tmp")
                  and time.time() - entry.lstat().st_mtime > min_age_s):
                    entry.unlink(missing_ok=True)
                    removed.append(name)
        except OSError:
            continue
    return removed


def _unlocked(folder: Path, min_age_s: float) -> bool:
    try:
        fd = os.open(folder / _LOCK, os.O_RDWR | os.O_NOFOLLOW)
    except FileNotFoundError:
        return time.time() - folder.stat().st_mtime > min_age_s
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


# ---- writing ----------------------------------------------------------------------------------


def save_version(rec: Recommender, artifacts_dir: str | Path, manifest: dict[str, Any],
                 popularity: np.ndarray | None = None, make_current: bool = True) -> Path:
    """Write a new version folder atomically (temp folder + rename) and return its path."""
    root = Path(artifacts_dir)
    root.mkdir(parents=True, exist_ok=True)
    name = manifest.get("version") or new_version_name()
    manifest = {**manifest, "version": name, "format": FORMAT_VERSION,
                "config": rec.model.cfg.to_json(), "facets": list(rec.facets)}
    tmp = TempDir(root, f".tmp-{name}.")
    try:
        _write_version(rec, tmp.path, manifest, popularity)
        os.unlink(tmp.path / _LOCK)
        final = root / name
        os.rename(tmp.path, final)
        tmp.release()
    except BaseException:
        tmp.remove()
        raise
    if make_current:
        set_current(root, name)
    rec.version, rec.manifest = name, manifest
    return final


def _write_version(rec: Recommender, folder: Path, manifest: dict[str, Any],
                   popularity: np.ndarray | None) -> None:
    cat, fz = rec.catalog, rec.featurizer
    state = {k: v.contiguous() for k, v in rec.model.state_dict().items()}
    save_tensors(state, str(folder / _WEIGHTS))
    arrays: dict[str, np.ndarray] = {}
    for f in cat.facets:
        _put_csr(arrays, f"items.{f}", cat.item_attrs[f])
        _put_csr(arrays, f"exact.{f}", fz.evidence.exact[f])
        _put_csr(arrays, f"assoc.{f}", fz.evidence.assoc[f])
        for kind, tables in (("confident", fz.evidence.confident), ("support", fz.evidence.support)):
            if tables is not None:
                _put_csr(arrays, f"{kind}.{f}", tables[f])
    if popularity is not None:
        arrays["popularity"] = np.asarray(popularity, dtype=np.float32)
    save_arrays(arrays, str(folder / "arrays.safetensors"))
    catalog_json = {
        "item_ids": cat.item_ids,
        "titles": cat.titles,
        "texts": cat.texts,
        "vocab": {f: [attribute_entry(a) for a in cat.vocab[f]] for f in cat.facets},
        "buckets": {k: b.edges for k, b in cat.buckets.items()},
        # a bucketed column's numbers, for range filters (null: an empty cell)
        "numbers": {k: [None if math.isnan(x) else x for x in v.tolist()] for k, v in cat.numbers.items()},
        "aliases": cat.aliases,  # a variant's id -> its product's
        "key_names": cat.key_names,  # a key -> its column as written, where they differ
        "value_names": cat.value_names,  # a value's label -> the value as written, where they differ
    }
    if cat.descriptions is not None:  # a product page's text; none in a catalogue without any
        catalog_json["descriptions"] = cat.descriptions
    _write_json(folder / "catalog.json", catalog_json)
    _write_json(folder / "words.json", fz.words.to_json())
    _keep_items_file(folder, manifest)
    files = {name: fingerprint(folder / name) for name in sorted(os.listdir(folder))
             if name != _LOCK and (folder / name).is_file()}
    manifest["files"] = files
    _write_json(folder / "manifest.json", manifest)  # last: its presence marks a complete folder


def _keep_items_file(folder: Path, manifest: dict[str, Any]) -> None:
    """Copy the items file the manifest's data names into the version (ITEMS_FILE), when it is
    still the file training read (its fingerprint): what is read later of a version must be in
    its folder. Not kept otherwise; a catalogue change then asks for the items file."""
    items = (manifest.get("data") or {}).get("items") or {}
    source = items.get("file") if isinstance(items, dict) else None
    if not isinstance(source, str) or not os.path.isfile(source):
        return
    shutil.copyfile(source, folder / ITEMS_FILE)
    if fingerprint(folder / ITEMS_FILE) != items.get("fingerprint"):  # changed since training read it
        os.unlink(folder / ITEMS_FILE)


def _optional_tables(csr: dict[str, sp.csr_matrix], kind: str, facets: tuple[str, ...]
                     ) -> dict[str, sp.csr_matrix] | None:
    """facet -> the `kind` table, when the version has it for every facet (else None)."""
    if not all(f"{kind}.{f}" in csr for f in facets):
        return None
    return {f: csr[f"{kind}.{f}"] for f in facets}


def _put_csr(arrays: dict[str, np.ndarray], prefix: str, m: sp.csr_matrix) -> None:
    arrays[f"{prefix}.indptr"] = m.indptr.astype(np.int64)
    arrays[f"{prefix}.indices"] = m.indices.astype(np.int64)
    arrays[f"{prefix}.data"] = m.data.astype(np.float32)
    arrays[f"{prefix}.shape"] = np.asarray(m.shape, dtype=np.int64)


def _write_json(path: Path, obj: object) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(obj, fh, ensure_ascii=False)
        fh.flush()
        os.fsync(fh.fileno())


def set_current(artifacts_dir: str | Path, version: str) -> None:
    root = Path(artifacts_dir)
    if not VERSION_NAME.match(version) or not (root / version / "manifest.json").is_file():
        raise ArtifactError(f"no such model version {version!r} (see `list_versions`)", root)
    fd, tmp = tempfile.mkstemp(prefix=f".{CURRENT_POINTER}.", suffix=".tmp", dir=root)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(version + "\n")
    os.replace(tmp, root / CURRENT_POINTER)


# ---- finding versions ---------------------------------------------------------------------------


def current_version(artifacts_dir: str | Path) -> str | None:
    """The version `current` names; ArtifactError when it names something that is no version name."""
    root = Path(artifacts_dir)
    pointer = root / CURRENT_POINTER
    if not pointer.is_file():
        return None
    with open(pointer, "rb") as fh:
        raw = fh.read(257)
    try:
        name = raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        name = None
    if name is None or not VERSION_NAME.match(name):
        raise ArtifactError(f"names {raw[:40]!r}, which is not a version name", root, CURRENT_POINTER)
    return name


def resolve_version_dir(path: str | Path) -> Path:
    """A version folder, or an artifacts folder (then its current version)."""
    p = Path(path)
    if (p / "manifest.json").is_file():
        return p
    name = current_version(p)
    if name is None:
        kept = [v["version"] for v in list_versions(p) if v["ok"]]
        if kept:  # trained, none served: a first version below BM25 in its own report is kept
            raise ArtifactError(
                f"no version here is served ('current' names none): {len(kept)} trained and kept, the "
                f"newest {kept[-1]} (`recsys train` said why it was not served); pass --model "
                f"{p / kept[-1]} to use it, or train with --activate to serve the new version", p)
        raise ArtifactError(
            "no model here (neither a version folder nor an artifacts folder with a 'current' "
            "pointer); train one with `recsys train` or pass --model", p)
    return p / name


def list_versions(artifacts_dir: str | Path) -> list[dict[str, Any]]:
    """Every version folder, good or broken: `ok` and `problem` come from `check_version` (the
    manifest and the files' headers; the arrays themselves are checked when loading)."""
    root = Path(artifacts_dir)
    if not root.is_dir():
        return []
    try:
        current = current_version(root)
    except ArtifactError:
        current = None
    out = []
    for d in sorted(root.iterdir()):
        if d.name.startswith(".") or not VERSION_NAME.match(d.name) or not d.is_dir() or d.name == CATALOGUES:
            continue
        problem, manifest = None, {}
        try:
            manifest = check_version(d)
        except ArtifactError as exc:
            problem = exc.public
        trained_at = manifest.get("trained_at")
        metrics = manifest.get("metrics")
        out.append({"version": d.name, "trained_at": trained_at if isinstance(trained_at, str) else None,
                    "metrics": metrics if isinstance(metrics, dict) else {},
                    "current": d.name == current, "ok": problem is None, "problem": problem})
    return out


def read_manifest(version_dir: str | Path) -> dict[str, Any]:
    """The manifest, checked: a JSON object of this format with a config of the right types."""
    folder = Path(version_dir)
    manifest: dict[str, Any] = _read_json(folder, "manifest.json")
    _check_manifest(folder, manifest)
    return manifest


def revised_from(manifest: dict[str, Any], version: str, artifacts_dir: str | Path, limit: int = 10_000) -> bool:
    """Whether the version of `manifest` is `version` with catalogue changes made since: a
    catalogue revision of it, or of one of its revisions (each manifest's
    `catalogue.revision_of`, read back through the versions in `artifacts_dir`)."""
    for _ in range(limit):
        parent = (manifest.get("catalogue") or {}).get("revision_of")
        if not isinstance(parent, str) or not VERSION_NAME.match(parent):
            return False
        if parent == version:
            return True
        try:
            manifest = read_manifest(Path(artifacts_dir) / parent)
        except ArtifactError:
            return False
    return False


def kept_items_file(version_dir: str | Path) -> Path | None:
    """The copy of the items file the version was trained on, in its folder; None when it keeps
    none. ArtifactError when it resolves outside the folder."""
    folder = Path(version_dir)
    if not os.path.lexists(folder / ITEMS_FILE):
        return None
    return _inside(folder, ITEMS_FILE)


def served_catalogue(version_dir: Path) -> tuple[Path, Schema]:
    """The items file and schema a version was trained on: the copy kept in its folder, if it is
    still as it was. The manifest's `data.items.file` (where training read it) is never opened:
    it may lie anywhere, and a manifest naming /etc/passwd there must not get it parsed."""
    manifest = read_manifest(version_dir)
    data = manifest.get("data") or {}
    items = data.get("items") or {}
    path = kept_items_file(version_dir)
    if path is None or fingerprint(path) != items.get("fingerprint"):
        state = ("changed since it was saved" if path is not None else
                 "not kept in its folder (saved without one, or by an older release)")
        raise DataError(f"{version_dir.name}/{ITEMS_FILE}",
                        f"the items file of the served version {version_dir.name} is {state}: give "
                        f"the items file to train on (--items, or \"items\" in the admin request)")
    return path, Schema.from_json(data.get("schema"))


def check_version(version_dir: str | Path) -> dict[str, Any]:
    """The quick check of a version folder: every file there, the manifest valid, the weights'
    and arrays' headers whole (a truncated file is caught here). Returns the manifest."""
    folder = Path(version_dir)
    _check_files(folder)
    manifest = read_manifest(folder)
    for name in ("model.safetensors", "arrays.safetensors"):
        _safetensors_header(folder, name)
    return manifest


# ---- loading --------------------------------------------------------------------------------------


def load_version(path: str | Path) -> Recommender:
    """The one way a version is read to be served or used (server start, activation, standby,
    the watchers, the command line): every file checked, then a few queries scored."""
    folder = resolve_version_dir(path)
    manifest = check_version(folder)
    _verify_files(folder, manifest)
    cfg = ModelConfig.from_json(manifest["config"])
    catalog_json = _read_json(folder, "catalog.json")
    words_json = _read_json(folder, "words.json")
    n_items, vocab_sizes = _check_catalog(folder, catalog_json, cfg)
    n_words = _check_words(folder, words_json)
    rows = {"items": n_items, "words": n_words}
    arrays = _read_safetensors(folder, "arrays.safetensors", load_arrays)
    csr = _check_arrays(folder, arrays, rows, vocab_sizes, cfg.facets)
    # the artifact's facets, in its heads' order (the vocabulary's keys are the catalogue's facets);
    # every entry was checked by `_check_catalog`
    vocab = {f: [cast(Attribute, attribute_from_entry(f, a)) for a in catalog_json["vocab"][f]] for f in cfg.facets}
    catalog = Catalog(
        item_ids=catalog_json["item_ids"],
        titles=catalog_json["titles"],
        texts=catalog_json["texts"],
        # the artifact's facets, in its heads' order (the vocabulary's keys are the catalogue's facets)
        vocab=vocab,
        item_attrs={f: csr[f"items.{f}"] for f in cfg.facets},
        buckets={k: NumericBuckets(e) for k, e in catalog_json["buckets"].items()},
        # absent from a version saved before range filters: its bucketed columns take labels only
        numbers={k: np.array([np.nan if x is None else x for x in v], dtype=float)
                 for k, v in catalog_json.get("numbers", {}).items()},
        aliases=catalog_json.get("aliases", {}),  # absent from a version saved before them
        descriptions=catalog_json.get("descriptions"),  # absent: none, or saved before them
        key_names=catalog_json.get("key_names", {}),  # absent from a version saved before them
        value_names=catalog_json.get("value_names", {}),  # absent from a version saved before them
    )
    words = WordTable.from_json(words_json)
    exact = {f: csr[f"exact.{f}"] for f in cfg.facets}
    evidence = Evidence(exact=exact, assoc={f: csr[f"assoc.{f}"] for f in cfg.facets}, partial=cfg.partial_worth,
                        confident=_optional_tables(csr, "confident", cfg.facets),
                        support=_optional_tables(csr, "support", cfg.facets),
                        phrase=phrases(catalog, exact, cfg))
    featurizer = Featurizer(catalog, words, evidence, cfg)
    model = _load_model(folder, cfg, featurizer)
    try:
        rec = Recommender(model.eval(), featurizer, version=folder.name, manifest=manifest)
    except Exception as exc:  # noqa: BLE001 - checked files that still do not build a model
        raise ArtifactError(f"the checked files do not build a model: {type(exc).__name__}: {exc}",
                            folder) from None
    rec.popularity = arrays.get("popularity")
    problem = smoke_problem(rec)
    if problem:
        raise ArtifactError(f"the weights give broken answers: {problem}; the version is damaged or "
                            f"its training diverged: re-train it or activate another version",
                            folder, _WEIGHTS)
    return rec


def _load_model(folder: Path, cfg: ModelConfig, featurizer: Featurizer) -> FacetScorer:
    """The weights, checked against the model the config builds: the same names, shapes and
    dtypes, finite floats, and integer tables (buffers derived from the catalogue) equal to what
    this catalogue gives."""
    file = _WEIGHTS
    header = _safetensors_header(folder, file)
    model: FacetScorer | None = None
    try:
        buffers = featurizer.attribute_buffers()
        if _fits_the_file(cfg, header):  # built once, for real, and the weights loaded into it
            model = FacetScorer(cfg, *buffers, initialise=False)
            expected = model.state_dict()
        else:
            # a config asking for more than the file holds: only its shapes are compared, on the
            # meta device, where parameters take no memory. (Not always: building there runs
            # torch's Python meta kernels, whose first call imports torch._dynamo, 1.5 CPU-s.)
            try:
                with torch.device("meta"):
                    expected = FacetScorer(cfg, *buffers).state_dict()
            except Exception:  # noqa: BLE001 - a model that cannot be built on meta: build it for real
                expected = FacetScorer(cfg, *buffers).state_dict()
    except Exception as exc:  # noqa: BLE001
        raise ArtifactError(f"the config does not build a model: {type(exc).__name__}: {exc}",
                            folder, "manifest.json") from None
    missing = sorted(set(expected) - set(header))
    unknown = sorted(set(header) - set(expected))
    if missing or unknown:
        raise ArtifactError(_names_problem(missing, unknown), folder, file)
    for name, want in expected.items():
        dtype, shape = header[name]
        if tuple(shape) != tuple(want.shape):
            raise ArtifactError(f"{name} has shape {list(shape)}, the config needs {list(want.shape)}",
                                folder, file)
        if dtype != _SAFETENSORS_DTYPES.get(want.dtype):
            raise ArtifactError(f"{name} is {dtype}, expected {_SAFETENSORS_DTYPES.get(want.dtype)}",
                                folder, file)
    state = _read_safetensors(folder, file, load_tensors)
    for name, tensor in state.items():
        want = expected[name]
        if tensor.is_floating_point():
            if not bool(torch.isfinite(tensor).all()):
                raise ArtifactError(f"{name} holds NaN or infinite values", folder, file)
        elif not want.is_meta and not torch.equal(tensor, want):
            raise ArtifactError(f"{name} does not match the catalogue it was saved with", folder, file)
    if model is None:
        model = FacetScorer(cfg, *buffers, initialise=False)
    try:
        model.load_state_dict(state)  # copied: the file's mapped pages are not kept
    except RuntimeError as exc:
        raise ArtifactError(f"weights do not fit the saved config: {exc}", folder, file) from None
    return model


def _fits_the_file(cfg: ModelConfig, header: dict[str, tuple[str, list[int]]]) -> bool:
    """Whether the config's largest tables (the hashed word and n-gram vectors, a head's
    projection) hold no more numbers than the weights file does: a model that matches the file
    is no larger than it, and a damaged config asking for far more is not built for real."""
    held = sum(math.prod(shape) for _, shape in header.values())
    try:
        return max(int(cfg.word_buckets), int(cfg.ngram_buckets), int(cfg.d_k)) * int(cfg.dim) <= held
    except (TypeError, ValueError):
        return False


def _names_problem(missing: list[str], unknown: list[str]) -> str:
    parts = []
    if missing:
        parts.append(f"lacks {', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}")
    if unknown:
        parts.append(f"has unknown {', '.join(unknown[:5])}{' ...' if len(unknown) > 5 else ''}")
    return "weights of another model: it " + " and ".join(parts)


_SAFETENSORS_DTYPES = {torch.float32: "F32", torch.float64: "F64", torch.float16: "F16",
                       torch.bfloat16: "BF16", torch.int64: "I64", torch.int32: "I32",
                       torch.int16: "I16", torch.int8: "I8", torch.uint8: "U8", torch.bool: "BOOL"}
_DTYPE_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1,
                "U64": 8, "U32": 4, "U16": 2, "U8": 1, "BOOL": 1}


# ---- checks -------------------------------------------------------------------------------------


def _check_files(folder: Path) -> None:
    if not folder.is_dir():
        raise ArtifactError("no such model version folder", folder)
    missing = [f for f in _FILES if not (folder / f).is_file()]
    if missing:
        others = f" (and {', '.join(missing[1:])})" if missing[1:] else ""
        raise ArtifactError(f"missing, or not a regular file{others}: an incomplete model version",
                            folder, missing[0])
    for name in _FILES:
        _inside(folder, name)


def _inside(folder: Path, name: str) -> Path:
    """`folder/name`, a regular file that lies in `folder` once every symlink is resolved: a
    version is read from its own folder only (a manifest linked to one elsewhere, an items copy
    linked to /etc/passwd are refused). The target is not named: it may be a server path."""
    path = folder / name
    try:
        real = path.resolve(strict=True)
        inside = real.is_relative_to(folder.resolve(strict=True))
    except (OSError, RuntimeError):  # missing, a symlink loop
        raise ArtifactError("missing, or a symlink to nothing", folder, name) from None
    if not inside:
        raise ArtifactError("resolves to a file outside the version folder (a symlink): a version "
                            "is read from its own folder only; re-train it or activate another "
                            "version", folder, name)
    if not real.is_file():
        raise ArtifactError("not a regular file", folder, name)
    return real


def _verify_files(folder: Path, manifest: dict[str, Any]) -> None:
    """Every file the manifest's `files` map names (relative paths inside the folder) has the
    sha256 written when the version was saved. A version saved before the map existed loads
    unverified, with a warning (once per folder)."""
    files = manifest.get("files")
    if files is None:
        if folder.resolve() not in _unchecked_warned:
            _unchecked_warned.add(folder.resolve())
            log.warning("model version %s has no checksums (saved by an older release): its files "
                        "are loaded unverified; re-train it to have them checked", folder.name)
        return
    unlisted = [f for f in _FILES if f != "manifest.json" and f not in files]
    if unlisted:
        raise ArtifactError(f"'files' lists no checksum of {', '.join(unlisted)}: every file of a "
                            f"version has one; re-train it or activate another version",
                            folder, "manifest.json")
    for name, digest in files.items():
        parts = Path(name).parts
        if Path(name).is_absolute() or ".." in parts or not parts or name == "manifest.json":
            raise ArtifactError(f"'files' names {name[:80]!r}: only files of the version folder, "
                                f"by relative path, are listed; re-train it or activate another version",
                                folder, "manifest.json")
        path = _inside(folder, name)
        try:
            actual = fingerprint(path)
        except DataError as exc:  # its detail, without the server path its message starts with
            raise ArtifactError(f"cannot be read: {exc.detail}", folder, name) from None
        if actual != digest:
            raise ArtifactError("differs from the checksum its manifest recorded when the version "
                                "was saved: the version is damaged; re-train it or activate another "
                                "version", folder, name)


def _read_json(folder: Path, name: str) -> Any:  # any JSON value
    path = _inside(folder, name)
    try:
        with open(path, "rb") as fh:
            text = fh.read().decode("utf-8")
        return json.loads(text, parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ArtifactError(f"not valid JSON: {str(exc).splitlines()[0][:200]}", folder, name) from None
    except OSError as exc:
        raise ArtifactError(f"cannot be read: {exc.strerror}", folder, name) from None


def _no_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not a JSON number")


def _safetensors_header(folder: Path, name: str) -> dict[str, tuple[str, list[int]]]:
    """{tensor: (dtype, shape)} from the header, after checking that the file holds exactly the
    bytes the header declares (a truncated or padded file, or not a safetensors file at all)."""
    path = _inside(folder, name)
    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            head = fh.read(8)
            if len(head) < 8:
                raise ArtifactError(f"truncated: {size} bytes, not a safetensors file", folder, name)
            (n,) = struct.unpack("<Q", head)
            if n > min(size - 8, 100_000_000):
                raise ArtifactError(f"not a safetensors file (or truncated): a header of {n} bytes "
                                    f"in a file of {size}", folder, name)
            header = json.loads(fh.read(n).decode("utf-8"))
    except OSError as exc:
        raise ArtifactError(f"cannot be read: {exc.strerror}", folder, name) from None
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise ArtifactError("not a safetensors file: its header is not JSON", folder, name) from None
    if not isinstance(header, dict):
        raise ArtifactError("not a safetensors file: its header is not a JSON object", folder, name)
    out: dict[str, tuple[str, list[int]]] = {}
    end = 0
    for key, info in header.items():
        if key == "__metadata__":
            continue
        try:
            dtype, shape, (lo, hi) = info["dtype"], [int(s) for s in info["shape"]], info["data_offsets"]
            width = _DTYPE_BYTES[dtype] * math.prod(shape)
            ok = all(s >= 0 for s in shape) and int(hi) - int(lo) == width and 0 <= int(lo) <= int(hi)
        except (KeyError, TypeError, ValueError):
            ok = False
        if not ok:
            raise ArtifactError(f"tensor {key!r} has a malformed header entry", folder, name)
        out[key], end = (dtype, shape), max(end, int(hi))
    if 8 + n + end != size:
        raise ArtifactError(f"truncated or padded: the header declares {8 + n + end} bytes, the "
                            f"file has {size}", folder, name)
    return out


def _read_safetensors(folder: Path, name: str, loader: Callable[[str], dict[str, T]]) -> dict[str, T]:
    try:
        return loader(str(_inside(folder, name)))
    except Exception as exc:  # noqa: BLE001 - SafetensorError, OSError, ...: any is a bad file
        raise ArtifactError(f"cannot be read: {str(exc)[:200]}", folder, name) from None


def _check_manifest(folder: Path, m: object) -> None:
    file = "manifest.json"
    if not isinstance(m, dict):
        raise ArtifactError(f"a JSON object expected, found {_json_type(m)}", folder, file)
    if m.get("format") != FORMAT_VERSION:
        raise ArtifactError(f"model format {m.get('format')!r}, this program reads format "
                            f"{FORMAT_VERSION}; retrain with this version of recsys", folder, file)
    for key, kinds in (("config", (dict,)), ("metrics", (dict,)), ("data", (dict,)),
                       ("training", (dict,)), ("trained_at", (str, type(None))),
                       ("version", (str,)), ("facets", (list,)), ("files", (dict,))):
        if key == "config" and key not in m:
            raise ArtifactError("no 'config': the model cannot be rebuilt", folder, file)
        if key in m and not isinstance(m[key], kinds):
            raise ArtifactError(f"'{key}' is {_json_type(m[key])}", folder, file)
    _check_config(folder, m["config"])
    heads = list(m["config"]["facets"])
    if "facets" in m and m["facets"] != heads:
        raise ArtifactError(f"'facets' is {m['facets']!r}, its config's heads are {heads!r}", folder, file)


def _check_config(folder: Path, config: dict[str, Any]) -> None:
    """Every field of the config of the type of its default (ints in range, floats finite)."""
    file = "manifest.json"
    try:
        cfg = ModelConfig.from_json(config)
    except (TypeError, KeyError, ValueError) as exc:
        raise ArtifactError(f"'config' does not fit this program's model: {exc}", folder, file) from None
    for f in dataclasses.fields(ModelConfig):
        value = getattr(cfg, f.name)
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = None
        if not _same_kind(value, default):
            raise ArtifactError(f"config '{f.name}' is {value!r}", folder, file)
    facets = cfg.facets
    if not _strings(list(facets)) or not facets:
        raise ArtifactError(f"config 'facets' is {list(facets)!r}, expected a list of facet names",
                            folder, file)
    for h, name in enumerate(facets):
        problem = facet_name_problem(name, facets[:h])
        if problem:
            raise ArtifactError(f"config 'facets': {problem}", folder, file)
    sizes = cfg.vocab_sizes
    if not isinstance(sizes, dict) or set(sizes) != set(facets) or not all(
            _same_kind(v, 0) for v in sizes.values()):
        raise ArtifactError("config 'vocab_sizes' must give a size to every facet", folder, file)


def _same_kind(value: object, default: object) -> bool:
    if default is None:
        return True
    if isinstance(default, bool):
        return isinstance(value, bool)
    if isinstance(default, int):
        return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= _MAX_CONFIG_INT
    if isinstance(default, float):
        return (isinstance(value, (int, float)) and not isinstance(value, bool)
                and math.isfinite(value))
    if isinstance(default, (tuple, list)):
        return isinstance(value, (tuple, list))
    return isinstance(value, type(default))


def _check_catalog(folder: Path, c: object, cfg: ModelConfig) -> tuple[int, dict[str, int]]:
    file = "catalog.json"

    def bad(problem: str) -> ArtifactError:
        return ArtifactError(problem, folder, file)

    if not isinstance(c, dict):
        raise bad(f"a JSON object expected, found {_json_type(c)}")
    for key in ("item_ids", "titles", "texts", "vocab", "buckets"):
        if key not in c:
            raise bad(f"no '{key}'")
    ids = c["item_ids"]
    for key in ("item_ids", "titles", "texts") + (("descriptions",) if "descriptions" in c else ()):
        if not _strings(c[key]):
            raise bad(f"'{key}' must be a list of strings")
        if len(c[key]) != len(ids):
            raise bad(f"'{key}' has {len(c[key])} entries, 'item_ids' {len(ids)}")
    if not ids:
        raise bad("the catalogue has no items")
    if len(set(ids)) != len(ids):
        raise bad("'item_ids' has duplicates")
    vocab = c["vocab"]
    if not isinstance(vocab, dict) or set(cfg.facets) - set(vocab):
        raise bad(f"'vocab' must have every facet of {list(cfg.facets)}")
    sizes = {}
    for f in cfg.facets:
        attrs = vocab[f]
        if not isinstance(attrs, list) or any(attribute_from_entry(f, a) is None for a in attrs):
            raise bad(f"'vocab.{f}' must be a list of [key, value] string pairs, each optionally "
                      "followed by two occurrence counts")
        if len(attrs) != cfg.vocab_sizes[f]:
            raise bad(f"'vocab.{f}' has {len(attrs)} attributes, the model was built for "
                      f"{cfg.vocab_sizes[f]}")
        sizes[f] = len(attrs)
    buckets = c["buckets"]
    if not isinstance(buckets, dict):
        raise bad("'buckets' must be an object")
    for key, edges in buckets.items():
        if not isinstance(edges, list) or not all(
                isinstance(e, (int, float)) and not isinstance(e, bool) and math.isfinite(e)
                for e in edges) or any(a > b for a, b in itertools.pairwise(edges)):
            raise bad(f"'buckets.{key}' must be ascending finite numbers")
    numbers = c.get("numbers", {})
    if not isinstance(numbers, dict):
        raise bad("'numbers' must be an object")
    for key, values in numbers.items():
        if key not in buckets or not isinstance(values, list) or len(values) != len(ids) or not all(
                x is None or (isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x))
                for x in values):
            raise bad(f"'numbers.{key}' must be a bucketed column's finite numbers or nulls, one an item")
    aliases = c.get("aliases", {})
    known = set(ids)
    if not isinstance(aliases, dict) or not all(
            isinstance(a, str) and isinstance(i, str) and i in known and a not in known for a, i in aliases.items()):
        raise bad("'aliases' must map ids that are not item_ids to item_ids")
    names = c.get("key_names", {})
    if not isinstance(names, dict) or not all(isinstance(k, str) and isinstance(v, str) and v.lower() == k
                                              for k, v in names.items()):
        raise bad("'key_names' must map lower-cased keys to their columns as written")
    return len(ids), sizes


def _check_words(folder: Path, w: object) -> int:
    file = "words.json"
    if not isinstance(w, dict) or not isinstance(w.get("keys"), list) or not isinstance(
            w.get("query_words"), list):
        raise ArtifactError("an object with 'keys' and 'query_words' lists expected", folder, file)
    if not _strings(w["keys"]) or not _strings(w["query_words"]):
        raise ArtifactError("'keys' and 'query_words' must be lists of strings", folder, file)
    if len(set(w["keys"])) != len(w["keys"]):
        raise ArtifactError("'keys' has duplicates", folder, file)
    return len(w["keys"])


def _check_arrays(folder: Path, arrays: dict[str, np.ndarray], rows: dict[str, int],
                  vocab_sizes: dict[str, int], facets: tuple[str, ...]) -> dict[str, sp.csr_matrix]:
    """Every sparse table (`<prefix>.indptr/indices/data/shape`) whole and in range, every other
    float array finite; the tables the loader reads of the catalogue's and word table's sizes."""
    file = "arrays.safetensors"
    prefixes = {name.rsplit(".", 1)[0] for name in arrays if name.rsplit(".", 1)[-1] in _CSR_PARTS}
    needed = {f"{kind}.{f}" for kind in _CSR_ROWS for f in facets}
    missing = sorted(needed - prefixes)
    if missing:
        raise ArtifactError(f"lacks the tables {', '.join(missing)}", folder, file)
    out = {}
    row_kinds = {**_CSR_ROWS, **_CSR_OPTIONAL_ROWS}
    for prefix in sorted(prefixes):
        kind, _, facet = prefix.partition(".")
        want = (rows[row_kinds[kind]] if kind in row_kinds else None, vocab_sizes.get(facet),
                {"items": "catalogue", "words": "word table"}.get(row_kinds.get(kind, "")))
        out[prefix] = _checked_csr(folder, file, arrays, prefix, want, kind in _CSR_SORTED)
    for name, a in arrays.items():
        if name.rsplit(".", 1)[0] in prefixes:
            continue
        if a.dtype.kind == "f" and not np.isfinite(a).all():
            raise ArtifactError(f"{name} holds NaN or infinite values", folder, file)
    popularity = arrays.get("popularity")
    if popularity is not None and (popularity.dtype != np.float32 or popularity.shape != (rows["items"],)):
        raise ArtifactError(f"popularity is {popularity.dtype} {list(popularity.shape)}, expected "
                            f"float32 [{rows['items']}]", folder, file)
    return out


def _checked_csr(folder: Path, file: str, arrays: dict[str, np.ndarray], prefix: str,
                 want: tuple[int | None, int | None, str | None], sorted_rows: bool) -> sp.csr_matrix:
    def bad(problem: str) -> ArtifactError:
        return ArtifactError(f"{prefix}: {problem}", folder, file)

    parts = {}
    for part in _CSR_PARTS:
        a = arrays.get(f"{prefix}.{part}")
        if a is None:
            raise bad(f"no {part}")
        dtype = np.float32 if part == "data" else np.int64
        if a.dtype != dtype or a.ndim != 1:
            raise bad(f"{part} is {a.dtype} with {a.ndim} dimensions, expected 1-D {np.dtype(dtype)}")
        parts[part] = a
    shape, indptr, indices, data = (parts[p] for p in ("shape", "indptr", "indices", "data"))
    if len(shape) != 2 or (shape < 0).any():
        raise bad(f"shape {shape.tolist()} is not a matrix shape")
    n_rows, n_cols = int(shape[0]), int(shape[1])
    for got, expected, what, source in ((n_rows, want[0], "rows", want[2]),
                                        (n_cols, want[1], "columns", "catalogue's vocabulary")):
        if expected is not None and got != expected:
            raise bad(f"{got} {what}, the {source} needs {expected}")
    nnz = len(indices)
    if len(indptr) != n_rows + 1 or indptr[0] != 0 or indptr[-1] != nnz or len(data) != nnz:
        raise bad(f"indptr of {len(indptr)} entries ({indptr[:1].tolist()}..{indptr[-1:].tolist()}) "
                  f"does not fit {n_rows} rows of {nnz} entries ({len(data)} values)")
    if (np.diff(indptr) < 0).any():
        raise bad("indptr decreases")
    if nnz and (indices.min() < 0 or indices.max() >= n_cols):
        raise bad(f"column indices {int(indices.min())}..{int(indices.max())} outside 0..{n_cols - 1}")
    row_of = np.repeat(np.arange(n_rows, dtype=np.int64), np.diff(indptr))
    if nnz > 1 and sorted_rows:
        ascending = np.diff(indices) > 0
        ascending |= row_of[1:] != row_of[:-1]  # a row may start below where the previous one ended
        if not ascending.all():
            raise bad("column indices not ascending within a row (unsorted or repeated)")
    elif nnz > 1 and len(np.unique(row_of * n_cols + indices)) != nnz:
        raise bad("a column index repeated within a row")
    if not np.isfinite(data).all():
        raise bad("values hold NaN or infinite numbers")
    return sp.csr_matrix((data, indices, indptr), shape=(n_rows, n_cols), copy=False)


def _strings(xs: object) -> bool:
    return isinstance(xs, list) and all(isinstance(x, str) for x in xs)


def _json_type(x: object) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
            type(None): "null"}.get(type(x), "a number")
