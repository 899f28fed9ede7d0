"""A corpus of broken model version folders, each made from a copy of a good one.

`CORRUPTIONS` maps a name to (how to break a folder, the file the error must name). The model's
tensors are picked by kind (the first float tensor, the largest matrix, the first integer
table), never by name, so the corpus follows the model as parameters are added.

After breaking a folder, `make_corrupt` records the broken files' checksums in the manifest
(`reseal`), as a writer with a bug would: so each deeper check is still what refuses them.
Those in `UNSEALED` keep the old checksums: damage on disk, that only the checksum can see.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import struct
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from safetensors.numpy import load_file as load_arrays
from safetensors.numpy import save_file as save_arrays
from safetensors.torch import load_file as load_tensors
from safetensors.torch import save_file as save_tensors

from recsys.artifact import ITEMS_FILE
from recsys.io.text import fingerprint

ARRAYS, MODEL, MANIFEST, CATALOG, WORDS = (
    "arrays.safetensors", "model.safetensors", "manifest.json", "catalog.json", "words.json")
ABSURD = 3e38  # finite float32, near its largest: a weight of it passes every file check


def _arrays(edit: Callable[[dict], None]) -> Callable[[Path], None]:
    def run(folder: Path) -> None:
        arrays = load_arrays(str(folder / ARRAYS))
        edit(arrays)
        save_arrays(arrays, str(folder / ARRAYS))
    return run


def _model(edit: Callable[[dict], None]) -> Callable[[Path], None]:
    def run(folder: Path) -> None:
        state = load_tensors(str(folder / MODEL))
        edit(state)
        save_tensors({k: v.contiguous() for k, v in state.items()}, str(folder / MODEL))
    return run


def _json(file: str, edit: Callable) -> Callable[[Path], None]:
    def run(folder: Path) -> None:
        obj = json.loads((folder / file).read_text(encoding="utf-8"))
        edit(obj)  # in place
        (folder / file).write_text(json.dumps(obj), encoding="utf-8")
    return run


def _bytes(file: str, edit: Callable[[bytes], bytes]) -> Callable[[Path], None]:
    def run(folder: Path) -> None:
        (folder / file).write_bytes(edit((folder / file).read_bytes()))
    return run


def _set(a: dict, key: str, fn) -> None:
    a[key] = fn(a[key].copy())


def _first_float(state: dict) -> str:
    return next(k for k in sorted(state) if state[k].is_floating_point() and state[k].numel())


def _largest_matrix(state: dict) -> str:
    return max((k for k in state if state[k].ndim == 2), key=lambda k: state[k].numel())


def _first_int_table(state: dict) -> str:
    return next(k for k in sorted(state) if not state[k].is_floating_point() and state[k].numel())


def _poke(a: np.ndarray, value) -> np.ndarray:
    a[len(a) // 2] = value
    return a


class Evil:
    """Unpickling this would create the file `marker` names: it must never happen."""

    marker = ""

    def __reduce__(self):
        return (Path.touch, (Path(self.marker),))


def _flip_bytes(n: int) -> Callable[[Path], None]:
    """The lowest bit of `n` float32 values of the largest float tensor flipped: every weight
    stays finite and near its value, so only the checksum can tell."""
    def run(folder: Path) -> None:
        raw = bytearray((folder / MODEL).read_bytes())
        (size,) = struct.unpack("<Q", raw[:8])
        header = json.loads(raw[8:8 + size])
        _, (lo, hi) = max((info["data_offsets"][1] - info["data_offsets"][0], info["data_offsets"])
                          for key, info in header.items()
                          if key != "__metadata__" and info["dtype"] == "F32")
        step = (hi - lo) // 4 // n * 4
        assert step >= 4, "the tensor is too small for that many flips"
        for at in range(8 + size + lo, 8 + size + lo + n * step, step):
            raw[at] ^= 1  # little-endian: the first byte of a float32 is the end of its mantissa
        (folder / MODEL).write_bytes(bytes(raw))
    return run


def _symlink_outside(file: str) -> Callable[[Path], None]:
    """`file` replaced by a symlink to a copy of it outside the version folder."""
    def run(folder: Path) -> None:
        outside = folder.parent / f"outside-{folder.name}-{file}"
        shutil.copyfile(folder / file, outside)
        os.remove(folder / file)
        os.symlink(outside, folder / file)
    return run


def _items_copy_to(target: str) -> Callable[[Path], None]:
    def run(folder: Path) -> None:
        os.remove(folder / ITEMS_FILE)
        os.symlink(target, folder / ITEMS_FILE)
    return run


def _pickle_instead(folder: Path) -> None:
    Evil.marker = str(folder.parent / "PICKLE-WAS-EXECUTED")
    (folder / MODEL).write_bytes(pickle.dumps({"weights": Evil()}))


CORRUPTIONS: dict[str, tuple[Callable[[Path], None], str]] = {
    # sparse tables: out-of-range indices once crashed the process in a scipy product
    "column index past the vocabulary": (
        _arrays(lambda a: _set(a, "items.color.indices", lambda x: _poke(x, 10**6))), ARRAYS),
    "negative column index": (
        _arrays(lambda a: _set(a, "exact.other.indices", lambda x: _poke(x, -7))), ARRAYS),
    "indptr past the entries": (
        _arrays(lambda a: _set(a, "items.other.indptr", lambda x: x + np.arange(len(x)))), ARRAYS),
    "indptr decreasing": (
        _arrays(lambda a: _set(a, "assoc.other.indptr", lambda x: _poke(x, 0))), ARRAYS),
    "table shape lies": (
        _arrays(lambda a: _set(a, "exact.style.shape", lambda x: x + 1)), ARRAYS),
    "NaN evidence": (_arrays(lambda a: _set(a, "exact.other.data", lambda x: _poke(x, np.nan))), ARRAYS),
    "infinite association": (
        _arrays(lambda a: _set(a, "assoc.other.data", lambda x: _poke(x, np.inf))), ARRAYS),
    "int32 indices": (_arrays(lambda a: _set(a, "items.style.indices", lambda x: x.astype(np.int32))),
                      ARRAYS),
    "float64 values": (_arrays(lambda a: _set(a, "exact.color.data", lambda x: x.astype(np.float64))),
                       ARRAYS),
    "a table missing": (_arrays(lambda a: [a.pop(k) for k in list(a) if k.startswith("exact.color.")]),
                        ARRAYS),
    "repeated column in a row": (
        _arrays(lambda a: _set(a, "exact.other.indices", lambda x: np.repeat(x[:1], len(x)))), ARRAYS),
    "arrays truncated": (_bytes(ARRAYS, lambda b: b[: len(b) // 2]), ARRAYS),
    "arrays empty": (_bytes(ARRAYS, lambda b: b""), ARRAYS),
    # weights
    "NaN weight": (_model(lambda s: s[_first_float(s)].view(-1).__setitem__(0, float("nan"))), MODEL),
    "infinite weight": (_model(lambda s: s[_largest_matrix(s)].view(-1).__setitem__(3, float("inf"))),
                        MODEL),
    "weight of the wrong shape": (_model(lambda s: s.__setitem__(
        _largest_matrix(s), s[_largest_matrix(s)][:-1])), MODEL),
    "float64 weight": (_model(lambda s: s.__setitem__(
        _largest_matrix(s), s[_largest_matrix(s)].double())), MODEL),
    "weight missing": (_model(lambda s: s.pop(_first_float(s))), MODEL),
    "unknown weight": (_model(lambda s: s.__setitem__("backdoor.weight", torch.ones(3))), MODEL),
    "integer table out of range": (_model(lambda s: s[_first_int_table(s)].view(-1).__setitem__(
        0, 10**9)), MODEL),
    "weights truncated": (_bytes(MODEL, lambda b: b[: len(b) - 1000]), MODEL),
    "weights empty": (_bytes(MODEL, lambda b: b""), MODEL),
    "weights padded": (_bytes(MODEL, lambda b: b + b"\0" * 64), MODEL),
    "a pickle instead of weights": (_pickle_instead, MODEL),
    # weights that pass every file check and score NaN: only scoring a query finds them
    "every weight 3e38": (_model(lambda s: [t.fill_(ABSURD) for t in s.values() if t.is_floating_point()]),
                          MODEL),
    # damage on disk: the checksums
    "1000 flipped bytes in the weights": (_flip_bytes(1000), MODEL),
    "a letter of the catalogue changed": (_bytes(CATALOG, lambda b: b.replace(b"a", b"e", 1)), CATALOG),
    "a checksum missing": (_json(MANIFEST, lambda m: m["files"].pop(WORDS)), MANIFEST),
    # paths: a version is read from its own folder only
    "manifest a symlink to outside": (_symlink_outside(MANIFEST), MANIFEST),
    "weights a symlink to outside": (_symlink_outside(MODEL), MODEL),
    "items copy a symlink to /etc/passwd": (_items_copy_to("/etc/passwd"), ITEMS_FILE),
    "checksum of /etc/passwd listed": (_json(MANIFEST, lambda m: m["files"].__setitem__(
        "/etc/passwd", fingerprint("/etc/passwd"))), MANIFEST),
    "checksum of a file above listed": (_json(MANIFEST, lambda m: m["files"].__setitem__(
        "../outside.json", "sha256:0")), MANIFEST),
    "header length past the file": (_bytes(MODEL, lambda b: (2**40).to_bytes(8, "little") + b[8:]),
                                    MODEL),
    # manifest
    "manifest broken JSON": (_bytes(MANIFEST, lambda b: b[: len(b) // 2]), MANIFEST),
    "manifest a list": (_bytes(MANIFEST, lambda b: b"[" + b + b"]"), MANIFEST),
    "manifest without config": (_json(MANIFEST, lambda m: m.pop("config")), MANIFEST),
    "config with an unknown field": (_json(MANIFEST, lambda m: m["config"].update(rogue=1)), MANIFEST),
    "config size a string": (_json(MANIFEST, lambda m: m["config"].update(dim="32")), MANIFEST),
    "config size huge": (_json(MANIFEST, lambda m: m["config"].update(word_buckets=2**40)), MANIFEST),
    "another format": (_json(MANIFEST, lambda m: m.update(format=99)), MANIFEST),
    "manifest metrics a string": (_json(MANIFEST, lambda m: m.update(metrics="great")), MANIFEST),
    "manifest with NaN": (_bytes(MANIFEST, lambda b: b[:-1] + b', "x": NaN}'), MANIFEST),
    # catalogue and words
    "catalogue without vocab": (_json(CATALOG, lambda c: c.pop("vocab")), CATALOG),
    "catalogue titles short": (_json(CATALOG, lambda c: c["titles"].pop()), CATALOG),
    "vocabulary smaller than the model's": (_json(CATALOG, lambda c: c["vocab"]["style"].pop()), CATALOG),
    "catalogue item ids not strings": (_json(CATALOG, lambda c: c["item_ids"].__setitem__(0, 7)), CATALOG),
    "catalogue prices short": (_json(CATALOG, lambda c: c["numbers"]["price"].pop()), CATALOG),
    "catalogue price a string": (_json(CATALOG, lambda c: c["numbers"]["price"].__setitem__(0, "9")), CATALOG),
    "catalogue not UTF-8": (_bytes(CATALOG, lambda b: b"\xff\xfe" + b), CATALOG),
    "words without query_words": (_json(WORDS, lambda w: w.pop("query_words")), WORDS),
    "word table shorter than the evidence": (_json(WORDS, lambda w: w["keys"].pop()), ARRAYS),
    "a file missing": (lambda folder: os.remove(folder / WORDS), WORDS),
    "a file replaced by a folder": (lambda folder: (os.remove(folder / CATALOG),
                                                   os.mkdir(folder / CATALOG)), CATALOG),
}


# damage the checksums must catch: their manifest keeps the checksums of the good files
UNSEALED = {"1000 flipped bytes in the weights", "a letter of the catalogue changed"}


def make_corrupt(good: Path, dest_root: Path, name: str) -> Path:
    """A copy of the version folder `good` under `dest_root`, broken the way `name` says; the
    folder is named after the corruption (a valid version name)."""
    slug = "bad-" + "".join(c if c.isalnum() else "-" for c in name.lower())
    folder = dest_root / slug
    shutil.copytree(good, folder)
    CORRUPTIONS[name][0](folder)
    if name not in UNSEALED:
        reseal(folder)
    return folder


def reseal(folder: Path) -> None:
    """The manifest's checksums made those of the files as they are now (symlinks followed),
    when it is a JSON object with a `files` map; a file that is not there keeps its entry."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict):
        return
    for file in manifest["files"]:
        path = folder / file
        if path.is_file() and not Path(file).is_absolute() and ".." not in Path(file).parts:
            manifest["files"][file] = fingerprint(path)
    (folder / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
