"""``env.target``: find the user's callable, call it, and play what it returns as a batched environment.

Every failure is a ``ConfigError`` of one line that starts with ``env.target=<target>:`` and says what is wrong, so
a run refuses it before any model is built.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import sys
from collections.abc import Callable
from typing import Any

from archer.config import ConfigError
from archer.envs.base import BatchedTextEnv
from archer.envs.checker import EnvReport, check_batched_env, check_text_game
from archer.envs.external.config import ExternalEnvConfig
from archer.envs.gym_adapter import GymTextEnv, is_text_game, played_corpus
from archer.errors import ArcherError

#: Parameters the callable gets from the common env keys when it names them.
COMMON_PARAMETERS = ("batch_size", "max_turns", "seed")


def refusal(cfg: ExternalEnvConfig, problem: str) -> ConfigError:
    return ConfigError(f"env.target={cfg.target}: {problem}")


def resolve(cfg: ExternalEnvConfig) -> Callable[..., Any]:
    """The callable ``cfg.target`` names.

    Raises:
        ConfigError: the module cannot be imported, has no such attribute, or it is not callable.
    """
    module_name, _, attribute = cfg.target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name is not None and module_name.startswith(error.name):
            raise refusal(
                cfg,
                f"no module named {error.name!r}; put the folder holding it on PYTHONPATH (sys.path[0] is "
                f"{sys.path[0] or '.'!r})",
            ) from None
        raise refusal(cfg, f"importing {module_name} failed: {error}") from None
    except Exception as error:  # the user's module raised while importing
        raise refusal(cfg, f"importing {module_name} raised {type(error).__name__}: {error}") from None
    found: Any = module
    path = module_name
    for part in attribute.split("."):
        if not hasattr(found, part):
            names = [name for name in dir(found) if not name.startswith("_")]
            close = difflib.get_close_matches(part, names, n=1, cutoff=0.4)
            hint = f"; did you mean {close[0]}?" if close else ""
            raise refusal(cfg, f"{path} has no attribute {part!r}{hint}")
        found = getattr(found, part)
        path = f"{path}.{part}"
    if not callable(found):
        raise refusal(cfg, f"{path} is a {type(found).__name__}, not a callable")
    return found


def call_target(cfg: ExternalEnvConfig, factory: Callable[..., Any], seed: int | None) -> Any:
    """``factory(**cfg.kwargs)``, plus the ``COMMON_PARAMETERS`` it names (and ``cfg.kwargs`` does not set).

    Raises:
        ConfigError: the arguments do not fit its signature, or it raised.
    """
    common = {"batch_size": cfg.batch_size, "max_turns": cfg.max_turns, "seed": seed}
    kwargs = dict(cfg.kwargs)
    try:
        signature: inspect.Signature | None = inspect.signature(factory)
    except (TypeError, ValueError):  # a builtin without a signature: give it env.kwargs alone
        signature = None
    if signature is not None:
        for name in COMMON_PARAMETERS:
            if name in signature.parameters and name not in kwargs:
                kwargs[name] = common[name]
        try:
            signature.bind(**kwargs)
        except TypeError as error:
            raise refusal(cfg, f"cannot be called with env.kwargs={cfg.kwargs}: {error}") from None
    try:
        return factory(**kwargs)
    except ArcherError as error:  # a refusal that says what is wrong (a missing extra, a game that cannot be played)
        raise refusal(cfg, str(error)) from None
    except Exception as error:  # the user's code raised: one line, as for any refused setting
        raise refusal(cfg, f"calling it raised {type(error).__name__}: {error}") from None


def kind_of(cfg: ExternalEnvConfig, made: Any) -> str:
    """``batched`` or ``game``: which of the two shapes ``made`` has.

    Raises:
        ConfigError: neither, or a ``BatchedTextEnv`` of another batch size than ``env.batch_size``.
    """
    if isinstance(made, BatchedTextEnv):
        if made.batch_size != cfg.batch_size:
            raise refusal(
                cfg,
                f"returned a BatchedTextEnv of batch_size {made.batch_size}, but env.batch_size={cfg.batch_size}; "
                "give the callable a batch_size parameter (it then gets env.batch_size)",
            )
        return "batched"
    if is_text_game(made):
        return "game"
    raise refusal(
        cfg,
        f"returned a {type(made).__name__}, which is neither a BatchedTextEnv nor a text game with "
        "reset(seed=None) -> (observation, info) and step(text) -> (observation, reward, terminated, truncated, info)",
    )


def make_external_env(cfg: ExternalEnvConfig, seed: int | None) -> BatchedTextEnv:
    """The batched environment ``cfg.target`` makes: a ``BatchedTextEnv`` as returned (reseeded with ``seed``), or
    the single game played ``cfg.batch_size`` at a time (``GymTextEnv``, one call of the target per slot).

    Raises:
        ConfigError: naming ``env.target`` and what is wrong.
    """
    factory = resolve(cfg)
    made = call_target(cfg, factory, seed)
    label = f"env.target={cfg.target}"
    if kind_of(cfg, made) == "game":
        first = [made]

        def make_game() -> Any:
            # The instance already made serves the first slot.
            game = first.pop() if first else call_target(cfg, factory, seed)
            if not is_text_game(game):
                raise refusal(cfg, f"returned a {type(game).__name__} this time, not a text game")
            return game

        return GymTextEnv(
            make_game,
            batch_size=cfg.batch_size,
            max_turns=cfg.max_turns,
            num_games=cfg.num_games,
            num_eval_games=cfg.num_eval_games,
            seed=seed,
            history=cfg.history,
            corpus_games=cfg.corpus_games,
            label=label,
        )
    env: BatchedTextEnv = made
    env.seed(seed)
    if type(env).corpus is BatchedTextEnv.corpus and cfg.corpus_games > 0:
        # It brings no text for the embedded tokenizer: play a few of its games on a second instance (so this one's
        # generator and games are untouched), when asked.
        def corpus() -> list[str]:
            other = call_target(cfg, factory, 0)
            other.seed(0)
            return played_corpus(other, range(min(cfg.corpus_games, other.num_games)))

        env.corpus = corpus  # type: ignore[method-assign]
    return env


def check_target(cfg: ExternalEnvConfig, num_games: int, seed: int = 0, slow_step_s: float | None = None) -> EnvReport:
    """The checker's report on ``cfg.target``'s environment: ``check_text_game`` on a single game (``num_games``
    games), ``check_batched_env`` on a batched one.

    Raises:
        ConfigError: the target cannot be found, called, or returns neither shape.
    """
    factory = resolve(cfg)
    made = call_target(cfg, factory, seed)
    if kind_of(cfg, made) == "batched":
        made.seed(seed)
        return check_batched_env(made)
    first = [made]
    return check_text_game(
        lambda: first.pop() if first else call_target(cfg, factory, seed),
        num_games=num_games,
        max_turns=cfg.max_turns,
        seed=seed,
        slow_step_s=cfg.slow_step_s if slow_step_s is None else slow_step_s,
        label=f"env.target={cfg.target}",
    )
