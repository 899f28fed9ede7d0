"""`recsys train --nproc N` and torchrun's entry point (docs/cli.md, "Distributed training and
long logs"):

    torchrun --nproc-per-node N -m cli.distributed --items F --interactions F [train options]

runs, in each process, the training `recsys train` runs, as one of the replicas of
training/distributed.py (which says how the work is shared).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from recsys.errors import InputError
from training.distributed import Replicas


def launch(nproc: int, train_argv: Sequence[str]) -> int:
    """`recsys train --nproc N`: torchrun's launcher (the elastic agent `torch.distributed.run`
    calls) on this machine, N processes of `cli.distributed` with these `recsys train`
    options. Returns their exit code: 0, or the first failing process's (2 for bad input, which
    that process has said on stderr in one line; the agent's own report of it is not repeated)."""
    import logging
    import uuid

    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.launcher.api import LaunchConfig, elastic_launch

    if nproc < 1:
        raise InputError(f"--nproc must be at least 1, got {nproc}")
    # the workers inherit this environment: one thread each for BLAS and OpenMP too, so that N
    # processes on N cores do not oversubscribe them (torchrun's default as well)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    logging.getLogger("torch.distributed.elastic").setLevel(logging.CRITICAL)
    config = LaunchConfig(min_nodes=1, max_nodes=1, nproc_per_node=nproc, run_id=str(uuid.uuid4()),
                          rdzv_backend="c10d", rdzv_endpoint="localhost:0", max_restarts=0)
    try:
        elastic_launch(config, sys.executable)("-m", "cli.distributed", *train_argv)
    except ChildFailedError as error:
        _, first = error.get_first_failure()
        return first.exitcode if first.exitcode > 0 else 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """One training process (torchrun starts N): `recsys train` with these options."""
    from .main import main as cli_main

    replicas = Replicas.start()
    try:
        return cli_main(["train", *(sys.argv[1:] if argv is None else argv)])
    finally:
        replicas.close()


if __name__ == "__main__":
    sys.exit(main())
