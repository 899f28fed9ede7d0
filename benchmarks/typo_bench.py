"""Typo benchmark: how often a misspelled catalogue word is matched back to it.

For each catalogue, words are drawn from its own vocabulary (the match keys of its attributes'
words, `evidence.catalog_word_keys`), one typing error is made in each (a letter dropped, a
letter doubled or added, two neighbours swapped, a letter changed) and the result is kept only
when the catalogue lacks it (a typo that spells another catalogue word is that word's exact
match). `spelling.NearWords.related` then gives the near words of the typo; its first one is the
correction. Per word length and error kind it prints:

- recall: the share of typos corrected to the word they came from;
- precision: of the typos given a correction, the share corrected to the right word;
- wrong: the share of typos corrected to another word (what a shopper sees as a bad guess).

Usage::

    .venv/bin/python benchmarks/typo_bench.py [--datasets homedepot crowdflower fashion synthetic]
        [--per-cell 300] [--seed 0] [--data ../shared/data]
"""

from __future__ import annotations

import argparse
import string
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from known_item import LOADERS  # noqa: E402

from recsys.catalog import Catalog  # noqa: E402
from recsys.evidence import catalog_word_keys  # noqa: E402
from recsys.spelling import NearWords  # noqa: E402

KINDS = ("dropped", "added", "swapped", "changed")
LENGTHS = {"3-4": (3, 4), "5-8": (5, 8), "9+": (9, 32)}


def make_typo(word: str, kind: str, rng: np.random.Generator) -> str:
    i = int(rng.integers(len(word)))
    if kind == "dropped":
        return word[:i] + word[i + 1:]
    if kind == "added":  # half the time the letter doubled, else a random one
        letter = word[i] if rng.random() < 0.5 else str(rng.choice(list(string.ascii_lowercase)))
        return word[:i] + letter + word[i:]
    if kind == "swapped":
        i = min(i, len(word) - 2)
        return word[:i] + word[i + 1] + word[i] + word[i + 2:]
    letter = str(rng.choice([c for c in string.ascii_lowercase if c != word[i]]))
    return word[:i] + letter + word[i + 1:]


def run(name: str, data: Path, per_cell: int, seed: int) -> list[dict]:
    items, schema = LOADERS[name](data)
    catalog = Catalog.build(items, schema.columns, lexicon=schema.lexicon, facets=schema.facets)
    vocabulary = sorted(catalog_word_keys(catalog))
    speller = NearWords(vocabulary)
    known = set(vocabulary)
    rng = np.random.default_rng(seed)
    rows = []
    for label, (lo, hi) in LENGTHS.items():
        pool = [w for w in vocabulary if lo <= len(w) <= hi and w.isalpha()]
        for kind in KINDS:
            tried = corrected = right = 0
            for word in rng.permutation(pool):
                if tried == per_cell:
                    break
                typo = make_typo(str(word), kind, rng)
                if typo in known or len(typo) < 2:
                    continue
                tried += 1
                near = speller.related(typo)
                if near:
                    corrected += 1
                    right += int(near[0][0] == word)
            rows.append({"catalogue": name, "length": label, "kind": kind, "typos": tried,
                         "recall": right / tried if tried else float("nan"),
                         "precision": right / corrected if corrected else float("nan"),
                         "wrong": (corrected - right) / tried if tried else float("nan")})
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    p.add_argument("--datasets", nargs="+", default=["homedepot", "crowdflower", "fashion", "synthetic"])
    p.add_argument("--per-cell", type=int, default=300)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    tempfile.tempdir = tempfile.mkdtemp(prefix="typo-bench-")
    print(f"{'catalogue':12} {'length':6} {'kind':8} {'typos':>6} {'recall':>7} {'precision':>9} {'wrong':>6}")
    for name in args.datasets:
        for r in run(name, args.data, args.per_cell, args.seed):
            print(f"{r['catalogue']:12} {r['length']:6} {r['kind']:8} {r['typos']:6d} {r['recall']:7.3f} "
                  f"{r['precision']:9.3f} {r['wrong']:6.3f}")


if __name__ == "__main__":
    main()
