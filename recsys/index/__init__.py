"""The scoring path: exact, fast scoring of a whole catalogue with a trained model.

`scoring.ScoringIndex` precomputes the item side (`attribute_sets`), scores a query against every
facet's vocabulary (`query`), merges facets into groups and takes the exact pruned top-k
(`topk`); `recsys/kernels.py` holds the numba versions of the same computations (beside this
package: the lexical start's evidence compiles with them too). The logit formula they all share
is `recsys/formula.py`; the reference implementation is the model (`recsys/model.py`).
"""
