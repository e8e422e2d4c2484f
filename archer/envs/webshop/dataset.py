"""WebShop offline data: scripted shoppers' games, saved as JSON, loaded back as trajectories.

A dataset file is a JSON list of episodes::

    [{"instruction": 12, "start_page": "\\nWebShop \\nInstruction:  \\n... \\n[Search] ",
      "steps": [{"action": "search[...]", "observation": "\\n[Back to Search] ...", "reward": 0.0}, ...],
      "terminated": true, "truncated": false}, ...]

Each step keeps only the page (or message) its action led to; the observations the agent saw, which repeat the
whole history, are rebuilt with the environment's own history functions, so the file stays small and the
trajectories match what the environment would have shown. ``terminated`` means the last action bought something,
``truncated`` that the turn limit ended the game (at most one of them; neither for an unfinished game).

Generate a file with the built-in shop (or against a server with ``--server-url``)::

    python -m archer.envs.webshop.dataset --out data/webshop.json --episodes 2000
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tqdm import tqdm

from archer.data.json_records import (
    MAX_OBSERVATION_CHARS,
    DatasetError,
    check_length,
    read_checked_records,
    require_keys,
    write_checked_records,
)
from archer.data.trajectory import Trajectory
from archer.envs.webshop.env import (
    WebShopEnv,
    clean_action,
    extend_history,
    first_history,
    parse_instruction,
    with_instruction,
)
from archer.envs.webshop.shoppers import ScriptedShopper

if TYPE_CHECKING:
    from archer.config import RunConfig

logger = logging.getLogger(__name__)

_KEYS = ("instruction", "start_page", "steps", "terminated", "truncated")
_STEP_KEYS = ("action", "observation", "reward")
# Shopper styles of the generated data: (weight, result accuracy, browse probability, think probability); the option
# accuracy comes from the config. Most games go straight to the product, some browse or hesitate.
_STYLES = ((0.5, 1.0, 0.0, 0.0), (0.3, 0.8, 0.5, 0.2), (0.2, 0.5, 0.3, 0.3))


class WebShopDatasetError(DatasetError):
    """A WebShop dataset file is missing or malformed; the message names the file and the record."""


@dataclass
class Step:
    """One action and the page (or message) it led to."""

    action: str
    observation: str
    reward: float


@dataclass
class Episode:
    """One recorded game.

    Attributes:
        instruction: the instruction index played.
        start_page: the start page's text.
        steps: the actions in order.
        terminated: the last action bought a product.
        truncated: the turn limit ended the game.
    """

    instruction: int
    start_page: str
    steps: list[Step]
    terminated: bool
    truncated: bool

    @property
    def score(self) -> float:
        """The purchase score (0 without a purchase)."""
        return float(sum(step.reward for step in self.steps))


def episode_to_trajectory(episode: Episode) -> Trajectory:
    """The episode as the environment would have shown it: full histories, instruction suffix included."""
    instruction = parse_instruction(episode.start_page)
    history = first_history(episode.start_page)
    observations = [with_instruction(history, instruction)]
    for step in episode.steps:
        history = extend_history(history, step.action, step.observation)
        observations.append(with_instruction(history, instruction))
    return Trajectory(
        observations=observations,
        actions=[step.action for step in episode.steps],
        rewards=[step.reward for step in episode.steps],
        terminated=episode.terminated,
        truncated=episode.truncated,
        info={"success": episode.score >= 1.0, "score": episode.score, "instruction": episode.instruction},
    )


def _latest_page(observation: str) -> str:
    """The page (or message) an observation's history ends with."""
    return observation.rsplit("\nInstruction:\n", 1)[0].rsplit("\nObservation:\n", 1)[1]


def _shopper(rng: random.Random, option_accuracy: float) -> ScriptedShopper:
    weights = [style[0] for style in _STYLES]
    _, result_accuracy, browse, think = rng.choices(_STYLES, weights=weights)[0]
    return ScriptedShopper(rng, option_accuracy, result_accuracy, browse, think)


def generate_webshop_dataset(
    env: WebShopEnv,
    num_episodes: int,
    seed: int,
    instructions: tuple[int, int],
    option_accuracy: float = 0.8,
    progress: bool = False,
) -> list[Episode]:
    """Play scripted shoppers in ``env`` and record their games.

    Args:
        env: the shop (in process or over HTTP); it is reset, so do not share it with a game in progress.
        num_episodes: games to record.
        seed: the same seed (and shop) gives the same data.
        instructions: ``[lower, upper)``: each game's instruction is drawn uniformly from this range.
        option_accuracy: probability that a shopper picks the option value the instruction names.
        progress: show a progress bar.
    """
    rng = random.Random(seed)
    episodes: list[Episode] = []
    with tqdm(total=num_episodes, desc="webshop data", unit="game", disable=not progress, leave=False) as bar:
        while len(episodes) < num_episodes:
            count = min(env.batch_size, num_episodes - len(episodes))
            ids = [rng.randrange(*instructions) for _ in range(count)]
            observations = env.reset(game_ids=ids)
            shoppers = [_shopper(random.Random(rng.getrandbits(64)), option_accuracy) for _ in ids]
            start_pages = [_latest_page(obs) for obs in observations]
            steps: list[list[Step]] = [[] for _ in ids]
            endings = [(False, False)] * count
            while any(env.active):
                live = env.active
                actions = [s.act(o) if a else None for s, o, a in zip(shoppers, observations, live, strict=True)]
                for i, result in enumerate(env.step(actions)):
                    if result is None:
                        continue
                    action = actions[i]
                    assert action is not None
                    steps[i].append(Step(clean_action(action), _latest_page(result.observation), result.reward))
                    observations[i] = result.observation
                    if result.done:
                        endings[i] = (result.terminated, result.truncated)
            for i, index in enumerate(ids):
                episodes.append(Episode(index, start_pages[i], steps[i], *endings[i]))
            bar.update(count)
    return episodes


def _check_episode(record: Any, index: int, path: str) -> Episode:
    where = f"{path}: record {index}"
    require_keys(record, where, _KEYS, WebShopDatasetError)
    if not isinstance(record["instruction"], int) or isinstance(record["instruction"], bool):
        raise WebShopDatasetError(f"{where}: 'instruction' must be an integer index, got {record['instruction']!r}")
    if not isinstance(record["start_page"], str) or "Instruction:" not in record["start_page"]:
        raise WebShopDatasetError(f"{where}: 'start_page' must be the start page's text (with its 'Instruction:')")
    terminated, truncated = record["terminated"], record["truncated"]
    if not isinstance(terminated, bool) or not isinstance(truncated, bool):
        raise WebShopDatasetError(f"{where}: 'terminated' and 'truncated' must be true or false")
    if terminated and truncated:
        raise WebShopDatasetError(f"{where}: a game ends either terminated (bought) or truncated, not both")
    raw_steps = record["steps"]
    if not isinstance(raw_steps, list) or not raw_steps:
        raise WebShopDatasetError(f"{where}: 'steps' must be a non-empty list of {{action, observation, reward}}")
    steps = []
    for number, step in enumerate(raw_steps):
        if not isinstance(step, dict) or any(key not in step for key in _STEP_KEYS):
            raise WebShopDatasetError(f"{where}: step {number} must be an object with keys {', '.join(_STEP_KEYS)}")
        action, observation, reward = step["action"], step["observation"], step["reward"]
        if not isinstance(action, str) or not action.strip() or "\n" in action:
            raise WebShopDatasetError(f"{where}: step {number} 'action' must be a non-empty one-line string")
        if not isinstance(observation, str):
            raise WebShopDatasetError(f"{where}: step {number} 'observation' must be a string")
        check_length(action, f"{where}: step {number} 'action'", error=WebShopDatasetError)
        check_length(observation, f"{where}: step {number} 'observation'", MAX_OBSERVATION_CHARS, WebShopDatasetError)
        if isinstance(reward, bool) or not isinstance(reward, int | float) or not 0.0 <= reward <= 1.0:
            raise WebShopDatasetError(f"{where}: step {number} 'reward' must be a number in [0, 1], got {reward!r}")
        steps.append(Step(action, observation, float(reward)))
    return Episode(record["instruction"], record["start_page"], steps, terminated, truncated)


def load_webshop_dataset(path: str | os.PathLike[str]) -> list[Episode]:
    """Read and check a WebShop dataset file.

    Raises:
        WebShopDatasetError: the file is missing, is not JSON, or a record breaks the format (the message names
            the file, the record and the problem).
    """
    path = os.fspath(path)
    return read_checked_records(
        path,
        f"{path}: WebShop dataset not found. Point data.path at a file of recorded games (format in "
        "archer/envs/webshop/dataset.py), set data.path=null to generate one with scripted shoppers, or run "
        f"`python -m archer.envs.webshop.dataset --out {path}`.",
        "episodes",
        _check_episode,
        WebShopDatasetError,
    )


def save_webshop_dataset(episodes: Sequence[Episode], path: str | os.PathLike[str]) -> None:
    """Write ``episodes`` as JSON, one episode per line, atomically (checked before anything is written)."""
    write_checked_records([asdict(episode) for episode in episodes], path, _check_episode)


def webshop_trajectories(cfg: RunConfig, cache_dir: Path, progress: bool = False) -> list[Trajectory]:
    """The offline dataset of a WebShop run: ``cfg.data.path``, or scripted games generated once and cached.

    The generated file is named by everything that shapes it (the shop, the instruction range, the turn limit, the
    shopper's option accuracy, the episode count and seed, and the server URL when the games were played on one),
    so a changed setting never reuses another setting's data.
    """
    from archer.envs.webshop.config import WebShopEnvConfig
    from archer.envs.webshop.shop import make_webshop_env

    env_cfg = cfg.env
    assert isinstance(env_cfg, WebShopEnvConfig)
    if cfg.data.path:
        episodes = load_webshop_dataset(Path(cfg.data.path).expanduser())
    else:
        key = {
            "format": 1,
            "shop": [env_cfg.num_products, env_cfg.shop_seed, env_cfg.num_instructions, env_cfg.show_attributes],
            "instructions": [env_cfg.data_lower, env_cfg.data_upper],
            "max_turns": env_cfg.max_turns,
            "option_accuracy": env_cfg.data_option_accuracy,
            "episodes": cfg.data.generate_episodes,
            "seed": cfg.data.generate_seed,
            "server_url": env_cfg.server_url,
        }
        digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:12]
        path = (
            cache_dir / "datasets" / f"webshop-{cfg.data.generate_episodes}-seed{cfg.data.generate_seed}-{digest}.json"
        )
        if not path.exists():
            logger.info("generating %d WebShop games into %s", cfg.data.generate_episodes, path)
            env = make_webshop_env(env_cfg, seed=cfg.data.generate_seed)
            try:
                generated = generate_webshop_dataset(
                    env,
                    cfg.data.generate_episodes,
                    cfg.data.generate_seed,
                    (env_cfg.data_lower, env_cfg.data_upper),
                    env_cfg.data_option_accuracy,
                    progress=progress,
                )
            finally:
                env.close()
            save_webshop_dataset(generated, path)
        episodes = load_webshop_dataset(path)
    return [episode_to_trajectory(episode) for episode in episodes]


def main(argv: Sequence[str] | None = None) -> None:
    """Command line: generate a dataset file."""
    from archer.envs.webshop.config import WebShopEnvConfig
    from archer.envs.webshop.shop import make_webshop_env

    parser = argparse.ArgumentParser(description="Record scripted shoppers' WebShop games as a dataset.")
    parser.add_argument("--out", required=True, help="JSON file to write")
    parser.add_argument("--episodes", type=int, default=2000, help="games (default 2000)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--server-url", default=None, help="play a WebShop server instead of the built-in shop")
    parser.add_argument("--lower", type=int, default=0, help="first instruction index (default 0)")
    parser.add_argument("--upper", type=int, default=1000, help="instruction index bound, exclusive (default 1000)")
    parser.add_argument("--option-accuracy", type=float, default=0.8, help="right-option probability (default 0.8)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    cfg = WebShopEnvConfig(server_url=args.server_url, data_lower=args.lower, data_upper=args.upper)
    cfg.validate()
    env = make_webshop_env(cfg, seed=args.seed)
    try:
        episodes = generate_webshop_dataset(
            env, args.episodes, args.seed, (args.lower, args.upper), args.option_accuracy, progress=True
        )
    finally:
        env.close()
    save_webshop_dataset(episodes, args.out)
    logger.info("wrote %d games to %s", len(episodes), args.out)


if __name__ == "__main__":
    main()
