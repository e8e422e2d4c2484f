"""The only code that steps environments: plays batches of games with an acting function."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from tqdm.auto import tqdm

from archer.data.trajectory import Trajectory
from archer.envs.base import BatchedTextEnv, StepResult


class TokenizedActions(Protocol):
    """Actions together with the exact token ids that produced them (``archer.models.policy.Generation`` is one)."""

    texts: list[str]
    token_ids: list[list[int]]


# An acting function returns the action texts, or an object with ``.texts`` and ``.token_ids`` when the token ids
# should be recorded in the trajectories (``Trajectory.action_token_ids``; ``.token_ids`` may be None). An object
# that also has ``.replaced`` (one flag per action: an exploring rollout's replaced moves) has them recorded in
# ``Trajectory.replaced_moves``.
ActFn = Callable[[list[str]], "list[str] | TokenizedActions"]
# One batch's acting function: the live games' observations and their slots in the batch (a game keeps its slot).
TurnFn = Callable[[list[str], list[int]], "list[str] | TokenizedActions"]


@runtime_checkable
class BatchActor(Protocol):
    """An actor that keeps per-game state across the turns of a batch (``archer.models.incremental``)."""

    def start_batch(self) -> TurnFn:
        """A fresh acting function for one batch of games, called once per turn with the live games' slots."""
        ...


def split_actions(chosen: list[str] | TokenizedActions, expected: int) -> tuple[list[str], list[list[int]] | None]:
    """The action texts and, when the acting function gave them, their token ids; both checked for length."""
    if hasattr(chosen, "texts"):
        texts = list(chosen.texts)
        token_ids = None if chosen.token_ids is None else list(chosen.token_ids)
        if token_ids is not None and len(token_ids) != len(texts):
            raise ValueError(f"the acting function returned {len(token_ids)} token-id lists for {len(texts)} actions")
    else:
        texts, token_ids = list(chosen), None
    if len(texts) != expected:
        raise ValueError(f"the acting function returned {len(texts)} actions for {expected} observations")
    return texts, token_ids


@dataclass
class _GameRecord:
    """What one game of a batch has played so far (``play_batch``)."""

    observations: list[str]
    states: list[str | None]
    actions: list[str] = field(default_factory=list)
    action_ids: list[list[int]] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    replaced: list[bool] = field(default_factory=list)
    ending: tuple[bool, bool, dict] = field(default_factory=lambda: (False, False, {}))

    def record(
        self, action: str, ids: Sequence[int] | None, replaced: bool, result: StepResult, state: str | None
    ) -> None:
        """One turn: the action (with its token ids when the actor gave them), and what the environment answered."""
        self.actions.append(action)
        if ids is not None:
            self.action_ids.append(list(ids))
        self.rewards.append(result.reward)
        self.replaced.append(replaced)
        self.observations.append(result.observation)
        self.states.append(state)
        if result.done:
            self.ending = (result.terminated, result.truncated, dict(result.info))

    def trajectory(self, with_ids: bool) -> Trajectory:
        terminated, truncated, info = self.ending
        return Trajectory(
            observations=self.observations,
            actions=self.actions,
            rewards=self.rewards,
            terminated=terminated,
            truncated=truncated,
            info=info,
            action_token_ids=self.action_ids if with_ids else None,
            replaced_moves=self.replaced if any(self.replaced) else None,
            states=self.states if None not in self.states else None,
        )


def play_batch(env: BatchedTextEnv, act: ActFn | BatchActor, observations: list[str]) -> list[Trajectory]:
    """Play the batch ``env`` was just reset to, from its first ``observations``, until every game ends.

    ``act`` is called once per turn with the observations of the games still being played only (a ``BatchActor``
    starts one acting function for the batch, which also gets the games' slots). When it returns token ids (see
    ``ActFn``) they are kept in each trajectory's ``action_token_ids``; it must then do so on every turn. An
    environment's state keys (``BatchedTextEnv.state_key``), when it defines them, are kept in ``states``.
    """
    turn: TurnFn = act.start_batch() if isinstance(act, BatchActor) else lambda current, _slots: act(current)
    games = [_GameRecord([obs], [env.state_key(i)]) for i, obs in enumerate(observations)]
    with_ids: bool | None = None  # fixed by the first turn
    current = list(observations)
    while any(env.active):
        live = [i for i, alive in enumerate(env.active) if alive]
        turn_result = turn([current[i] for i in live], live)
        chosen, chosen_ids = split_actions(turn_result, len(live))
        chosen_replaced = getattr(turn_result, "replaced", None) or [False] * len(live)
        if with_ids is None:
            with_ids = chosen_ids is not None
        elif with_ids != (chosen_ids is not None):
            raise ValueError("the acting function must return token ids on every turn of a batch or on none")
        batch_actions: list[str | None] = [None] * len(games)
        for i, action in zip(live, chosen, strict=True):
            batch_actions[i] = action
        results = env.step(batch_actions)
        for k, i in enumerate(live):
            result = results[i]
            if result is not None:
                ids = chosen_ids[k] if chosen_ids is not None else None
                games[i].record(chosen[k], ids, bool(chosen_replaced[k]), result, env.state_key(i))
                current[i] = result.observation
    return [game.trajectory(bool(with_ids)) for game in games]


def collect_trajectories(
    env: BatchedTextEnv,
    act: ActFn | BatchActor,
    num_episodes: int | None = None,
    game_ids: Sequence[int] | None = None,
    seed: int | None = None,
    progress: bool = False,
    description: str = "rollout",
    group_size: int | None = None,
    first_group: int = 0,
) -> list[Trajectory]:
    """Play ``num_episodes`` random games, or exactly the games ``game_ids``, in batches of ``env.batch_size``.

    With ``group_size`` G, the ``num_episodes`` games are ``num_episodes / G`` groups of G identical starts: the
    environment draws one game id per group (``BatchedTextEnv.draw_groups``, the draws an ungrouped reset makes for
    that many games), each id is played G times in a row, and a group may be split over two batches. Each game
    records its group in ``Trajectory.group``: ``first_group``, ``first_group + 1``, ... in play order.

    Args:
        env: the batched environment.
        act: maps a list of observations to a list of actions (or to actions with their token ids, see ``ActFn``),
            or a ``BatchActor``.
        num_episodes: how many random games (ignored when ``game_ids`` is given).
        game_ids: play these games, in this order.
        seed: reseed the environment first, so the same seed draws the same games.
        progress: show a progress bar over games.
        description: the progress bar's label.
        group_size: G, play the random games as groups of G identical starts; ``None`` plays them ungrouped.
        first_group: the group index of the first group (so that several processes' groups are numbered apart).

    Returns:
        One trajectory per game, in the order played.
    """
    if game_ids is None and (num_episodes is None or num_episodes <= 0):
        raise ValueError("collect_trajectories needs num_episodes > 0 or game_ids")
    if group_size is not None:
        if game_ids is not None:
            raise ValueError("collect_trajectories: give game_ids or group_size, not both")
        if group_size <= 0 or num_episodes % group_size:
            raise ValueError(f"num_episodes={num_episodes} is not a whole number of groups of {group_size}")
    if seed is not None:
        env.seed(seed)
    if group_size is not None:
        game_ids = env.draw_groups(num_episodes // group_size, group_size)
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
    if group_size is not None:
        for index, game in enumerate(trajectories):
            game.group = first_group + index // group_size
    return trajectories
