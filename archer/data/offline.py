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


def _webshop(cfg: RunConfig, cache_dir: Path, progress: bool) -> list[Trajectory]:
    from archer.data.webshop_data import webshop_trajectories

    return webshop_trajectories(cfg, cache_dir, progress)


def _guess_my_city(cfg: RunConfig, cache_dir: Path, progress: bool) -> list[Trajectory]:
    from archer.config import GuessMyCityEnvConfig
    from archer.data.guess_my_city_data import (
        MAX_TURNS,
        conversation_to_trajectory,
        generate_guess_my_city_dataset,
        load_guess_my_city_dataset,
        save_guess_my_city_dataset,
    )

    env_cfg = cfg.env
    assert isinstance(env_cfg, GuessMyCityEnvConfig)
    path = Path(cfg.data.path).expanduser() if cfg.data.path else None
    if path is None:
        max_turns = min(env_cfg.max_turns, MAX_TURNS)
        episodes, seed = cfg.data.generate_episodes, cfg.data.generate_seed
        path = cache_dir / "datasets" / f"guess_my_city-{env_cfg.match}-{episodes}-t{max_turns}-seed{seed}.json"
        if not path.exists():
            log.info("generating %d Guess My City games into %s", episodes, path)
            games = generate_guess_my_city_dataset(
                num_episodes=episodes, seed=seed, max_turns=max_turns, match=env_cfg.match, progress=progress
            )
            save_guess_my_city_dataset(games, path)
    return [conversation_to_trajectory(c) for c in load_guess_my_city_dataset(path)]


def _scripted_games(cfg: RunConfig, cache_dir: Path, progress: bool) -> list[Trajectory]:
    from archer.data.scripted_games import scripted_trajectories

    return scripted_trajectories(cfg, cache_dir, progress)


# env name -> loader(run config, cache folder, show progress) returning the dataset's trajectories
OFFLINE_LOADERS: dict[str, Callable[[RunConfig, Path, bool], list[Trajectory]]] = {
    "twenty_questions": _twenty_questions,
    "webshop": _webshop,
    "guess_my_city": _guess_my_city,
    "adventure": _scripted_games,
    "frozenlake": _scripted_games,
    "sokoban": _scripted_games,
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
