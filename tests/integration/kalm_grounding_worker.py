"""A few grounding steps in each process of a launch; writes this process's weights, the batches it drew and the
launch's distributed type.

Run by ``test_kalm_distributed.py`` under ``torch.distributed.run`` or ``accelerate launch`` with a DeepSpeed config:
``python kalm_grounding_worker.py <folder>``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch
from accelerate import PartialState
from accelerate.state import AcceleratorState

from archer.kalm import data as kalm_data
from archer.kalm import env as ball_env
from archer.kalm import grounding
from archer.kalm.config import KalmGroundingConfig


def main(folder: Path) -> None:
    processes = PartialState(cpu=True)
    torch.manual_seed(0)
    real = kalm_data.collect(ball_env.BallPushEnv(horizon=4), "train", 16, 0.2, np.random.default_rng(0))
    cfg = KalmGroundingConfig(n_layer=1, n_embd=16, n_head=2, max_positions=64, steps=3, batch_size=4)
    model = grounding.build_grounded_model(cfg, ball_env.STATE_DIM, ball_env.NUM_ACTIONS)
    initial = {name: value.clone() for name, value in model.state_dict().items()}
    drawn = []
    sample_batch = grounding.sample_batch

    def recording(*args, **kwargs):
        batch = sample_batch(*args, **kwargs)
        drawn.append(batch["input_ids"])
        return batch

    grounding.sample_batch = recording

    def rebuild() -> grounding.GroundedLM:
        return grounding.build_grounded_model(cfg, ball_env.STATE_DIM, ball_env.NUM_ACTIONS)

    _, model = grounding.train_grounding(model, real, cfg, np.random.default_rng(1), rebuild=rebuild)
    torch.save(
        {
            "num_processes": processes.num_processes,
            "distributed_type": str(AcceleratorState().distributed_type),
            "initial": initial,
            "trained": model.state_dict(),
            "batches": drawn,
        },
        folder / f"rank{processes.process_index}.pt",
    )


if __name__ == "__main__":
    main(Path(sys.argv[1]))
