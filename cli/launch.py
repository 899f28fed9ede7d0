"""`recsys train --nproc N`: N training processes of this machine, each torchrun's entry point
(cli/distributed.py)."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from recsys.errors import InputError


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
