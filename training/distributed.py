"""Training on several processes with torch.distributed: `recsys train --nproc N` on one machine,
or torchrun across machines (docs/cli.md, "Distributed training and long logs"):

    torchrun --nproc-per-node N -m cli.distributed --items F --interactions F [train options]

runs the training `recsys train` runs. Every process reads the same files and builds the same
catalogue, word and evidence tables, split and groups (all deterministic; checked before the
first step). Each batch of the one-process run is split across the processes: each computes the
loss of its share, scaled by the whole batch's weight, so that the gradients summed over the
processes are the batch's gradient. Early stopping, the best weights and the share alpha are
decided on numbers every process holds identically (summed validation losses, rank 0's alpha),
so all stop at the same step; rank 0 evaluates, writes the version and prints the report.

Why not DistributedDataParallel: the hashed word and n-gram tables are `nn.Embedding(sparse=True)`
(a step touches a few hundred of their rows), which NCCL cannot all-reduce, and the learned
association pairs live beside the module, not in it. `Replicas.sum_gradients` sums the dense
gradients in one all-reduce and the sparse ones by gathering each process's (row, value) pairs,
which costs what the rows touched cost, not the tables' size.

The model trains on the CPU (the fit places nothing on a GPU), so the backend is gloo; where CUDA
is present the collectives run over NCCL on copies in the process's GPU.
"""

from __future__ import annotations

import hashlib

import numpy as np
import torch
import torch.distributed as dist
from torch import nn

from recsys.errors import InputError

from .groups import TrainingGroups

_current: Replicas | None = None


def current() -> Replicas | None:
    """The process group this process joined (it was started by torchrun), else None."""
    return _current


class Replicas:
    """This process's place among the training processes, and the collectives the fit needs
    (training/fit.py calls them where one process would use its own numbers)."""

    def __init__(self, rank: int, world: int, device: torch.device):
        self.rank, self.world, self.device = rank, world, device

    @classmethod
    def start(cls) -> Replicas:
        """Join the group torchrun describes (its RANK, WORLD_SIZE, MASTER_ADDR, ... variables)."""
        global _current
        cuda = torch.cuda.is_available()
        dist.init_process_group("nccl" if cuda else "gloo")
        device = torch.device("cpu")
        if cuda:
            device = torch.device("cuda", dist.get_node_local_rank(0))
            torch.cuda.set_device(device)
        # one thread a process: N processes on N cores must not oversubscribe them (TrainConfig
        # trains on one thread too; this covers reading and building before the fit)
        torch.set_num_threads(1)
        _current = cls(dist.get_rank(), dist.get_world_size(), device)
        return _current

    def close(self) -> None:
        global _current
        dist.destroy_process_group()
        _current = None

    @property
    def writes(self) -> bool:
        """Rank 0 evaluates, writes the version and reports."""
        return self.rank == 0

    def rng(self, seed: int) -> np.random.Generator:
        """This process's generator: rank 0's is the one-process run's, the others draw other
        negatives (a batch's rows are spread over the processes)."""
        return np.random.default_rng(seed if self.rank == 0 else [seed, self.rank])

    def share(self, rows: np.ndarray) -> np.ndarray:
        """This process's part of `rows` (a batch, or the held-aside groups)."""
        if len(rows) < self.world:
            raise InputError(f"{self.world} training processes for a batch of {len(rows)} groups: "
                             f"use --nproc {max(1, len(rows))} or fewer (or more training queries)")
        return np.array_split(rows, self.world)[self.rank]

    def same_order(self, order: np.ndarray) -> np.ndarray:
        """Rank 0's shuffle of the groups, so that all split the same batches."""
        t = torch.from_numpy(np.ascontiguousarray(order, dtype=np.int64)).to(self.device)  # (G,)
        dist.broadcast(t, src=0)
        return t.cpu().numpy()

    def same_value(self, value: float) -> float:
        """Rank 0's value (a decision every process must share)."""
        t = torch.tensor([value], dtype=torch.float64, device=self.device)  # (1,)
        dist.broadcast(t, src=0)
        return float(t.item())

    def total(self, local: torch.Tensor) -> torch.Tensor:
        """A batch quantity (its weight, its cells) summed over the processes; no gradient
        flows through it (one process's is data, not a function of the weights either)."""
        t = local.detach().to(self.device, torch.float64).reshape(1)  # (1,)
        dist.all_reduce(t)
        return t.to(local.device, local.dtype).reshape(local.shape)

    def sums(self, total: float, n: int) -> tuple[float, int]:
        t = torch.tensor([total, float(n)], dtype=torch.float64, device=self.device)  # (2,)
        dist.all_reduce(t)
        return float(t[0]), round(float(t[1]))

    def sum_gradients(self, model: nn.Module, pairs: dict[str, nn.Parameter], loss: torch.Tensor) -> float:
        """Replace every gradient by its sum over the processes; returns the batch's loss.

        A parameter no process's share touched keeps no gradient (as one process's run would
        leave it, so the optimiser skips it the same way)."""
        sparse: list[torch.Tensor] = [m.weight for m in model.modules() if isinstance(m, nn.Embedding) and m.sparse]
        dense = [p for p in [*model.parameters(), *pairs.values()] if all(p is not s for s in sparse)]
        flags = torch.tensor([p.grad is not None for p in dense], dtype=torch.float32)  # (P,)
        flat = torch.cat([*(p.grad.reshape(-1) if p.grad is not None else p.new_zeros(p.numel())
                            for p in dense), flags, loss.detach().reshape(1).float()])  # (sum numel + P + 1,)
        flat = flat.to(self.device)
        dist.all_reduce(flat)
        flat = flat.cpu()
        at = 0
        for p, has in zip(dense, flat[-len(dense) - 1 : -1]):
            p.grad = flat[at : at + p.numel()].view_as(p).clone() if has > 0 else None
            at += p.numel()
        for table in sparse:
            table.grad = self._sum_sparse(table)
        return float(flat[-1])

    def _sum_sparse(self, p: torch.Tensor) -> torch.Tensor | None:
        """The rows each process's share touched, gathered; coalescing adds up shared rows."""
        dim = p.shape[1]
        if p.grad is None:
            rows, values = torch.zeros(0, dtype=torch.int64), p.new_zeros((0, dim))  # (0,), (0, D)
        else:
            g = p.grad.coalesce()
            rows, values = g.indices()[0], g.values()  # (n,), (n, D)
        counts = [torch.zeros(1, dtype=torch.int64, device=self.device) for _ in range(self.world)]
        dist.all_gather(counts, torch.tensor([len(rows)], device=self.device))
        sizes = [int(c.item()) for c in counts]
        if not any(sizes):
            return None
        width = max(sizes)  # all_gather takes tensors of one shape: pad to the longest
        padded_rows = torch.zeros(width, dtype=torch.int64)
        padded_rows[: len(rows)] = rows
        padded_values = p.new_zeros((width, dim))
        padded_values[: len(rows)] = values
        got_rows = [torch.zeros(width, dtype=torch.int64, device=self.device) for _ in sizes]
        got_values = [p.new_zeros((width, dim), device=self.device) for _ in sizes]
        dist.all_gather(got_rows, padded_rows.to(self.device))
        dist.all_gather(got_values, padded_values.to(self.device))
        all_rows = torch.cat([r[:n].cpu() for r, n in zip(got_rows, sizes)])  # (sum n,)
        all_values = torch.cat([v[:n].cpu() for v, n in zip(got_values, sizes)])  # (sum n, D)
        # (indices, values) built here are in range by construction: no invariant check to pay for
        return torch.sparse_coo_tensor(all_rows[None], all_values, p.shape, check_invariants=False).coalesce()

    def check_same(self, model: nn.Module, groups: TrainingGroups, validation: TrainingGroups | None,
                   fitted: bool = False) -> None:
        """Every process must hold the same weights and groups: before the fit, a machine that
        read other files (or another version of them) would otherwise train something else in
        silence; after it, weights that differ would mean the gradients were summed wrong."""
        digest = hashlib.sha256()
        for v in model.state_dict().values():
            digest.update(v.detach().cpu().numpy().tobytes())
        for g in (groups, validation):
            if g is not None:
                digest.update("\n".join(g.queries).encode())
                for a in (g.query_idx, g.positive, g.weight):
                    digest.update(np.ascontiguousarray(a).tobytes())
        mine = digest.hexdigest()
        everyone: list[str | None] = [None] * self.world
        dist.all_gather_object(everyone, mine)
        differ = [r for r, d in enumerate(everyone) if d != everyone[0]]
        if differ and fitted:
            raise RuntimeError(f"training process(es) {differ} fitted other weights than process 0")
        if differ:
            raise InputError(f"training process(es) {differ} built other training data or weights "
                             f"than process 0: every process must read the same --items and "
                             f"--interactions files (same bytes) with the same options")
