"""The only code that steps environments: plays batches of games with an acting function."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tqdm.auto import tqdm

from archer.data.trajectory import Trajectory
from archer.envs.base import BatchedTextEnv

ActFn = Callable[[list[str]], list[str]]


def play_batch(env: BatchedTextEnv, act: ActFn, observations: list[str]) -> list[Trajectory]:
    """Play the batch ``env`` was just reset to, from its first ``observations``, until every game ends.

    ``act`` is called once per turn with the observations of the games still being played only.
    """
    num_games = len(observations)
    history: list[list[str]] = [[obs] for obs in observations]
    actions: list[list[str]] = [[] for _ in range(num_games)]
    rewards: list[list[float]] = [[] for _ in range(num_games)]
    endings: list[tuple[bool, bool, dict]] = [(False, False, {})] * num_games
    current = list(observations)
    while any(env.active):
        live = [i for i, alive in enumerate(env.active) if alive]
        chosen = act([current[i] for i in live])
        if len(chosen) != len(live):
            raise ValueError(f"the acting function returned {len(chosen)} actions for {len(live)} observations")
        batch_actions: list[str | None] = [None] * num_games
        for i, action in zip(live, chosen, strict=True):
            batch_actions[i] = action
        for i, result in enumerate(env.step(batch_actions)):
            if result is None:
                continue
            actions[i].append(batch_actions[i])
            rewards[i].append(result.reward)
            history[i].append(result.observation)
            current[i] = result.observation
            if result.done:
                endings[i] = (result.terminated, result.truncated, dict(result.info))
    return [
        Trajectory(
            observations=history[i],
            actions=actions[i],
            rewards=rewards[i],
            terminated=endings[i][0],
            truncated=endings[i][1],
            info=endings[i][2],
        )
        for i in range(num_games)
    ]


def collect_trajectories(
    env: BatchedTextEnv,
    act: ActFn,
    num_episodes: int | None = None,
    game_ids: Sequence[int] | None = None,
    seed: int | None = None,
    progress: bool = False,
    description: str = "rollout",
) -> list[Trajectory]:
    """Play ``num_episodes`` random games, or exactly the games ``game_ids``, in batches of ``env.batch_size``.

    Args:
        env: the batched environment.
        act: maps a list of observations to a list of actions.
        num_episodes: how many random games (ignored when ``game_ids`` is given).
        game_ids: play these games, in this order.
        seed: reseed the environment first, so the same seed draws the same games.
        progress: show a progress bar over games.
        description: the progress bar's label.

    Returns:
        One trajectory per game, in the order played.
    """
    if game_ids is None and (num_episodes is None or num_episodes <= 0):
        raise ValueError("collect_trajectories needs num_episodes > 0 or game_ids")
    if seed is not None:
        env.seed(seed)
    total = len(game_ids) if game_ids is not None else num_episodes
    assert total is not None
    trajectories: list[Trajectory] = []
    with tqdm(total=total, desc=description, unit="game", disable=not progress, leave=False) as bar:
        while len(trajectories) < total:
            size = min(env.batch_size, total - len(trajectories))
            if game_ids is not None:
                observations = env.reset(game_ids=game_ids[len(trajectories) : len(trajectories) + size])
            else:
                observations = env.reset(count=size)
            trajectories.extend(play_batch(env, act, observations))
            bar.update(size)
    return trajectories
