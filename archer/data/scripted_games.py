"""Offline datasets for Detective and the grid games: scripted players with noise, played through the environments.

- Detective (``adventure``): each episode follows Jericho's walkthrough (in the lower-case, unabbreviated form of
  Jericho's valid actions: "W" becomes "west"), but at each step takes a random valid action instead with
  probability ``p``, drawn per episode from ``env.data_noise_levels``. After a detour the player resumes the
  walkthrough wherever the game state is one of the walkthrough's states (matched by Jericho's world-state hash);
  when it is not, it takes a valid action that leads back onto the walkthrough if one does (one step of lookahead),
  and otherwise goes on with the walkthrough's next command from where it is (the game answers whatever that
  command does there). Noise-free episodes win with the maximum score.
- Grid games (``frozenlake``, ``sokoban``): each episode follows the environment's BFS solver (first move of a
  shortest solution from the current position), but moves at random instead with probability ``epsilon``, drawn
  per episode from ``env.data_epsilons``; where the solver has no solution (a hole reached, a box stuck) it moves at
  random.

Every episode records its noise level in ``info["noise"]``. Datasets are generated once per setting and cached as
``archer.data.trajectory_file`` JSON under ``<cache_dir>/datasets``; ``data.path`` loads such a file instead.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from archer.config import AdventureEnvConfig, GridEnvConfig, RunConfig
from archer.data.rollout import play_batch
from archer.data.trajectory import Trajectory
from archer.data.trajectory_file import load_trajectories, save_trajectories
from archer.envs import make_env
from archer.envs.base import BatchedTextEnv
from archer.envs.grid_games import DIRECTIONS

log = logging.getLogger(__name__)

Player = Callable[[int], str]
"""A scripted player of one game: given the game's slot, the next action."""


def play_scripted(
    env: BatchedTextEnv,
    make_player: Callable[[], tuple[Player, float]],
    num_episodes: int,
    progress: bool = False,
) -> list[Trajectory]:
    """Play ``num_episodes`` games in batches, each game with its own player from ``make_player``.

    Args:
        env: the environment (already seeded).
        make_player: returns a new game's player and its noise level (recorded in ``info["noise"]``).
        num_episodes: games to play.
        progress: show a progress bar.

    Returns:
        One trajectory per game.
    """
    trajectories: list[Trajectory] = []
    with tqdm(total=num_episodes, desc="scripted games", unit="game", disable=not progress, leave=False) as bar:
        while len(trajectories) < num_episodes:
            size = min(env.batch_size, num_episodes - len(trajectories))
            observations = env.reset(count=size)
            players, levels = zip(*(make_player() for _ in range(size)), strict=True)

            def act(_: list[str], players: tuple[Player, ...] = players) -> list[str]:
                # ``play_batch`` asks for the games still active, in slot order: the same list as here.
                return [players[slot](slot) for slot, alive in enumerate(env.active) if alive]

            batch = play_batch(env, act, observations)
            for trajectory, level in zip(batch, levels, strict=True):
                trajectory.info["noise"] = level
            trajectories.extend(batch)
            bar.update(size)
    return trajectories


class NoisyWalkthrough:
    """Detective's scripted player: the walkthrough with random detours (see the module documentation).

    Args:
        env: the adventure environment the game is played in.
        commands: the walkthrough, normalised (``normalise_command``).
        hashes: world-state hash before each command, then after the last (``env.walkthrough_hashes()``).
        noise: probability of a random valid action instead of the next walkthrough command.
        rng: the player's generator.
    """

    def __init__(self, env: Any, commands: list[str], hashes: list[str], noise: float, rng: random.Random) -> None:
        self.env = env
        self.commands = commands
        self.hashes = hashes
        self.noise = noise
        self.rng = rng
        self.next = 0
        self._indices: dict[str, list[int]] = {}
        for index, state in enumerate(hashes):
            self._indices.setdefault(state, []).append(index)

    def _random_action(self, slot: int, avoid: str = "") -> str:
        options = [action for action in self.env.valid_actions(slot) if action != avoid]
        return self.rng.choice(options) if options else "look"

    def __call__(self, slot: int) -> str:
        state = self.env.state_hash(slot)
        if self.next >= len(self.hashes) or self.hashes[self.next] != state:
            matches = self._indices.get(state)
            if matches:
                # Back on the walkthrough: resume at its state nearest the player's progress, ahead if possible.
                self.next = min(matches, key=lambda index: (index < self.next, abs(index - self.next)))
            else:
                for action in self.env.valid_actions(slot):
                    if self.env.peek_hash(slot, action) in self._indices:
                        return action
        if self.next >= len(self.commands):
            return self._random_action(slot)
        command = self.commands[self.next]
        if self.rng.random() < self.noise:
            return self._random_action(slot, avoid=command)
        self.next += 1
        return command


class NoisySolver:
    """A grid game's scripted player: the BFS solver's move, or a random move with probability ``epsilon``."""

    def __init__(self, env: Any, epsilon: float, rng: random.Random) -> None:
        self.env = env
        self.epsilon = epsilon
        self.rng = rng

    def __call__(self, slot: int) -> str:
        if self.rng.random() >= self.epsilon:
            move = self.env.solver_move(slot)
            if move is not None:
                return move
        return self.rng.choice(DIRECTIONS)


def generate_adventure_dataset(
    env: Any, num_episodes: int, noise_levels: list[float], seed: int, progress: bool = False
) -> list[Trajectory]:
    """Detective episodes of the noisy walkthrough player, played through ``env`` (an ``AdventureEnv``)."""
    from archer.envs.adventure import normalise_command

    rng = random.Random(seed)
    commands = [normalise_command(command) for command in env.get_walkthrough()]
    hashes = env.walkthrough_hashes()

    def make_player() -> tuple[Player, float]:
        noise = rng.choice(noise_levels)
        return NoisyWalkthrough(env, commands, hashes, noise, random.Random(rng.random())), noise

    return play_scripted(env, make_player, num_episodes, progress)


def generate_grid_dataset(
    env: Any, num_episodes: int, epsilons: list[float], seed: int, progress: bool = False
) -> list[Trajectory]:
    """Grid-game episodes of the epsilon-noisy BFS solver, played through ``env`` (a ``GridGameEnv``)."""
    rng = random.Random(seed)

    def make_player() -> tuple[Player, float]:
        epsilon = rng.choice(epsilons)
        return NoisySolver(env, epsilon, random.Random(rng.random())), epsilon

    return play_scripted(env, make_player, num_episodes, progress)


def observation_settings(cfg: RunConfig, env: BatchedTextEnv) -> dict[str, Any]:
    """The environment settings a dataset's observations and rewards depend on (checked when a file is loaded)."""
    skip = {"name", "batch_size", "data_noise_levels", "data_epsilons", "game_path"}
    settings = {key: value for key, value in asdict(cfg.env).items() if key not in skip}
    if isinstance(cfg.env, AdventureEnvConfig):
        settings["game_md5"] = env.game_md5  # type: ignore[attr-defined]
    return settings


def scripted_trajectories(cfg: RunConfig, cache_dir: Path, progress: bool = False) -> list[Trajectory]:
    """The offline dataset of a Detective or grid-game run: ``data.path``, or generated once and cached.

    Raises:
        TrajectoryFileError: ``data.path`` is missing, malformed or made with other observation settings.
    """
    env_cfg = cfg.env
    env = make_env(env_cfg, seed=cfg.data.generate_seed)
    settings = observation_settings(cfg, env)
    if cfg.data.path:
        return load_trajectories(cfg.data.path, env_cfg.name, settings)
    if isinstance(env_cfg, AdventureEnvConfig):
        levels, generate = env_cfg.data_noise_levels, generate_adventure_dataset
    else:
        assert isinstance(env_cfg, GridEnvConfig)
        levels, generate = env_cfg.data_epsilons, generate_grid_dataset
    episodes, seed = cfg.data.generate_episodes, cfg.data.generate_seed
    key = json.dumps({"settings": settings, "levels": levels, "episodes": episodes, "seed": seed}, sort_keys=True)
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    path = cache_dir / "datasets" / f"{env_cfg.name}-{episodes}-seed{seed}-{digest}.json"
    if not path.exists():
        log.info("generating %d scripted %s games into %s", episodes, env_cfg.name, path)
        trajectories = generate(env, episodes, levels, seed, progress)
        save_trajectories(trajectories, path, env_cfg.name, settings)
    return load_trajectories(path, env_cfg.name, settings)
