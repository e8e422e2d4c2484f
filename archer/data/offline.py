"""Offline datasets as trajectories, per environment: loaded from a configured file or generated and cached."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from archer.config import RunConfig, TwentyQuestionsEnvConfig
from archer.data.trajectory import Trajectory

log = logging.getLogger(__name__)


def _twenty_questions(cfg: RunConfig, cache_dir: Path, progress: bool) -> list[Trajectory]:
    from archer.data.twenty_questions_data import (
        MAX_LINES,
        conversation_to_trajectory,
        generate_twenty_questions_dataset,
        load_twenty_questions_dataset,
        save_twenty_questions_dataset,
    )
    from archer.envs.knowledge_oracle import KnowledgeBaseOracle
    from archer.envs.twenty_questions_words import word_list

    env_cfg = cfg.env
    assert isinstance(env_cfg, TwentyQuestionsEnvConfig)
    path = Path(cfg.data.path).expanduser() if cfg.data.path else None
    if path is None:
        max_turns = min(env_cfg.max_turns, MAX_LINES)
        episodes, seed = cfg.data.generate_episodes, cfg.data.generate_seed
        path = cache_dir / "datasets" / f"twenty_questions-{env_cfg.words}-{episodes}-t{max_turns}-seed{seed}.json"
        if not path.exists():
            log.info("generating %d Twenty Questions games into %s", episodes, path)
            conversations = generate_twenty_questions_dataset(
                num_episodes=episodes,
                seed=seed,
                oracle=KnowledgeBaseOracle(),
                words=word_list(env_cfg.words),
                max_turns=max_turns,
                progress=progress,
            )
            save_twenty_questions_dataset(conversations, path)
    return [conversation_to_trajectory(c) for c in load_twenty_questions_dataset(path)]


# env name -> loader(run config, cache folder, show progress) returning the dataset's trajectories
OFFLINE_LOADERS: dict[str, Callable[[RunConfig, Path, bool], list[Trajectory]]] = {
    "twenty_questions": _twenty_questions,
    # (new offline datasets are registered above this line)
}


def load_offline_trajectories(cfg: RunConfig, cache_dir: Path, progress: bool = False) -> list[Trajectory]:
    """The offline dataset of ``cfg.env`` as trajectories.

    With ``cfg.data.path`` set, the file is loaded (and validated); otherwise a dataset is generated with the
    environment's scripted players, cached under ``cache_dir/datasets`` so every run reuses the same file.
    """
    try:
        loader = OFFLINE_LOADERS[cfg.env.name]
    except KeyError:
        raise ValueError(
            f"environment {cfg.env.name!r} has no offline dataset; environments with one: {', '.join(OFFLINE_LOADERS)}"
        ) from None
    return loader(cfg, cache_dir, progress)
