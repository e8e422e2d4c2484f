"""Detective's offline dataset: the walkthrough played with random detours.

Each episode follows Jericho's walkthrough (in the lower-case, unabbreviated form of Jericho's valid actions: "W"
becomes "west"), but at each step takes a random valid action instead with probability ``p``, drawn per episode
from ``env.data_noise_levels``. After a detour the player resumes the walkthrough wherever the game state is one of
the walkthrough's states (matched by Jericho's world-state hash); when it is not, it takes a valid action that
leads back onto the walkthrough if one does (one step of lookahead), and otherwise goes on with the walkthrough's
next command from where it is (the game answers whatever that command does there). Noise-free episodes win with
the maximum score. Caching and the file format: ``archer.data.scripted_play``.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from archer.config import RunConfig
from archer.data.scripted_play import Player, cached_scripted_trajectories, observation_settings, play_scripted
from archer.data.trajectory import Trajectory
from archer.envs.adventure.config import AdventureEnvConfig
from archer.envs.adventure.env import make_adventure_env, normalise_command


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


def generate_adventure_dataset(
    env: Any, num_episodes: int, noise_levels: list[float], seed: int, progress: bool = False
) -> list[Trajectory]:
    """Detective episodes of the noisy walkthrough player, played through ``env`` (an ``AdventureEnv``)."""
    rng = random.Random(seed)
    commands = [normalise_command(command) for command in env.get_walkthrough()]
    hashes = env.walkthrough_hashes()

    def make_player() -> tuple[Player, float]:
        noise = rng.choice(noise_levels)
        return NoisyWalkthrough(env, commands, hashes, noise, random.Random(rng.random())), noise

    return play_scripted(env, make_player, num_episodes, progress)


def offline_trajectories(cfg: RunConfig, cache_dir: Path, progress: bool = False) -> list[Trajectory]:
    """The offline dataset of a Detective run: ``data.path``, or generated once and cached."""
    env_cfg = cfg.env
    assert isinstance(env_cfg, AdventureEnvConfig)
    env = make_adventure_env(env_cfg, seed=cfg.data.generate_seed)
    settings = observation_settings(cfg, {"game_md5": env.game_md5})
    return cached_scripted_trajectories(
        cfg, cache_dir, env, settings, env_cfg.data_noise_levels, generate_adventure_dataset, progress
    )
