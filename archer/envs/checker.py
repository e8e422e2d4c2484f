"""``check_env``: validates any environment against the batched text-environment contract (envs/base.py)."""

from __future__ import annotations

from collections.abc import Callable

from archer.envs.base import BatchedTextEnv, StepResult


class EnvContractError(AssertionError):
    """An environment broke the contract; the message says which rule."""


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise EnvContractError(message)


def check_env(
    env: BatchedTextEnv,
    act: Callable[[list[str]], list[str]] | None = None,
    max_steps: int = 1000,
    seed: int = 0,
) -> None:
    """Play one batch with ``act`` (default: a fixed junk action) and check every rule of the contract.

    Checks: reset returns one string per game; seeded resets repeat; step returns one result per game, ``None``
    exactly for finished games; results are well-typed ``StepResult`` with ``success`` in info; a game never
    ends both terminated and truncated; every game ends within ``max_steps``; stepping after the end keeps
    returning ``None``; a wrong number of actions raises ``ValueError``.
    """
    act = act or (lambda observations: ["?"] * len(observations))
    first = env.reset(seed=seed)
    _require(isinstance(first, list) and len(first) == env.batch_size, "reset must return batch_size observations")
    _require(all(isinstance(obs, str) for obs in first), "observations must be strings")
    _require(env.reset(seed=seed) == first, "reset with the same seed must give the same observations")
    _require(env.num_games > 0, "num_games must be positive")
    one = env.reset(game_ids=[0])
    _require(len(one) == 1 and env.active == [True], "reset(game_ids=[0]) must start exactly one game")

    observations = env.reset(seed=seed)
    try:
        env.step(["?"] * (len(observations) + 1))
    except ValueError:
        pass
    else:
        raise EnvContractError("step must raise ValueError on a wrong number of actions")

    for _ in range(max_steps):
        active = env.active
        if not any(active):
            break
        actions = act(observations)
        results = env.step([a if alive else None for a, alive in zip(actions, active, strict=True)])
        _require(len(results) == len(active), "step must return one result per game")
        for alive, result in zip(active, results, strict=True):
            if not alive:
                _require(result is None, "a finished game must return None")
                continue
            _require(isinstance(result, StepResult), "an active game must return a StepResult")
            assert result is not None
            _require(isinstance(result.observation, str), "observation must be a string")
            _require(isinstance(result.reward, float), "reward must be a float")
            _require(not (result.terminated and result.truncated), "a game cannot be both terminated and truncated")
            _require(isinstance(result.info.get("success"), bool), "info must carry a bool 'success'")
        observations = [r.observation if r is not None else obs for r, obs in zip(results, observations, strict=True)]
    _require(not any(env.active), f"games did not end within {max_steps} steps")
    _require(all(r is None for r in env.step([None] * len(observations))), "finished games must keep returning None")
