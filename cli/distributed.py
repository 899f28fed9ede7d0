"""torchrun's entry point (docs/cli.md, "Distributed training and long logs"; `recsys train
--nproc N` starts it through cli/launch.py):

    torchrun --nproc-per-node N -m cli.distributed --items F --interactions F [train options]

runs, in each process, the training `recsys train` runs, as one of the replicas of
training/distributed.py (which says how the work is shared).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from training.distributed import Replicas

from .main import main as cli_main


def main(argv: Sequence[str] | None = None) -> int:
    """One training process (torchrun starts N): `recsys train` with these options."""
    replicas = Replicas.start()
    try:
        return cli_main(["train", *(sys.argv[1:] if argv is None else argv)])
    finally:
        replicas.close()


if __name__ == "__main__":
    sys.exit(main())
