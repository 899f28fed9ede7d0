"""Sets of items as bits: item i at bit i % 64 of word i // 64, a catalogue of 100k items in 1,563
words. What facet counts, the query's matches and the rules' boosts share (`recsys.query_match`,
`recsys.facet_counts`, `recsys.recommender`, `recsys.index.topk`); numpy alone, so any module
can import it."""

from __future__ import annotations

import numpy as np


def pack_items(mask: np.ndarray) -> np.ndarray:
    """(ceil(n / 64),) uint64: the (n,) bool `mask` as bits, item i at bit i % 64 of word
    i // 64 (the bits past n are zero)."""
    packed = np.packbits(mask, bitorder="little")
    words = np.zeros(-(-len(mask) // 64) * 8, dtype=np.uint8)
    words[: len(packed)] = packed
    return words.view("<u8").astype(np.uint64, copy=False)


def clear_items(bits: np.ndarray, items: np.ndarray) -> None:
    """Unselects `items` (int indices, repeats allowed) in `bits` (`pack_items`), in place: a
    few hidden items cost a few word operations, not a catalogue's mask packed anew."""
    items = np.asarray(items, dtype=np.int64)
    np.bitwise_and.at(bits, items >> 6, ~(np.uint64(1) << (items & 63).astype(np.uint64)))


def unpack_items(bits: np.ndarray, n: int) -> np.ndarray:
    """(n,) bool: the items `bits` (`pack_items`) selects."""
    return np.unpackbits(bits.astype("<u8", copy=False).view(np.uint8), count=n, bitorder="little").astype(bool)


def count_items(bits: np.ndarray) -> np.ndarray:
    """How many items `bits` (`pack_items`; or rows of them, (D, W)) selects: () or (D,) int64.
    A popcount a word with numpy 2 (7 us at 100k items), else the bits unpacked (20-60 us)."""
    if _BIT_COUNT is not None:
        counted: np.ndarray = _BIT_COUNT(bits).sum(axis=-1, dtype=np.int64)
        return counted
    unpacked: np.ndarray = np.count_nonzero(np.unpackbits(bits.view(np.uint8), axis=-1), axis=-1)
    return unpacked


_BIT_COUNT = getattr(np, "bitwise_count", None)  # numpy >= 2.0


def holds_items(bits: np.ndarray, items: np.ndarray) -> np.ndarray:
    """(len(items),) bool: which of `items` (int indices) `bits` (`pack_items`) selects, a word
    looked up an item: a few items of a large set are read where they are."""
    items = np.asarray(items, dtype=np.int64)
    held: np.ndarray = ((bits[items >> 6] >> (items & 63).astype(np.uint64)) & np.uint64(1)) == 1
    return held
