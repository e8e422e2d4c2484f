"""Environments and their oracles by name. Builders import lazily, so optional extras are only needed when used."""

from __future__ import annotations

from collections.abc import Callable

from archer.config import EnvConfig, TwentyQuestionsEnvConfig
from archer.envs.base import BatchedTextEnv, StepResult
from archer.envs.oracles import Oracle

__all__ = ["ENV_BUILDERS", "ORACLE_BUILDERS", "BatchedTextEnv", "StepResult", "make_env", "make_oracle"]


def _twenty_questions_oracle(cfg: EnvConfig) -> Oracle:
    assert isinstance(cfg, TwentyQuestionsEnvConfig)
    if cfg.oracle == "knowledge_base":
        from archer.envs.knowledge_oracle import KnowledgeBaseOracle

        return KnowledgeBaseOracle()
    from archer.envs.t5_oracle import Seq2SeqOracle

    return Seq2SeqOracle(
        checkpoint_path=cfg.oracle_path,
        base_model=cfg.oracle_base_model,
        max_new_tokens=16,
        normalisation=cfg.answer_normalisation,
    )


def _twenty_questions(cfg: EnvConfig, seed: int | None, oracle: Oracle | None) -> BatchedTextEnv:
    from archer.envs.twenty_questions import TwentyQuestionsEnv
    from archer.envs.twenty_questions_words import word_list

    assert isinstance(cfg, TwentyQuestionsEnvConfig)
    return TwentyQuestionsEnv(
        words=word_list(cfg.words),
        oracle=oracle if oracle is not None else _twenty_questions_oracle(cfg),
        batch_size=cfg.batch_size,
        max_turns=cfg.max_turns,
        success_check=cfg.success_check,
        seed=seed,
    )


def _webshop(cfg: EnvConfig, seed: int | None, oracle: Oracle | None) -> BatchedTextEnv:
    from archer.envs.webshop import make_webshop_env

    return make_webshop_env(cfg, seed)


def _guess_my_city_oracle(cfg: EnvConfig) -> Oracle:
    from archer.config import GuessMyCityEnvConfig

    assert isinstance(cfg, GuessMyCityEnvConfig)
    if cfg.oracle == "knowledge_base":
        from archer.envs.city_oracle import CityKnowledgeOracle

        return CityKnowledgeOracle()
    from archer.envs.guess_my_city import make_t5_oracle

    assert cfg.oracle_path is not None
    return make_t5_oracle(cfg.oracle_path, cfg.oracle_base_model)


def _guess_my_city(cfg: EnvConfig, seed: int | None, oracle: Oracle | None) -> BatchedTextEnv:
    from archer.config import GuessMyCityEnvConfig
    from archer.envs.guess_my_city import GuessMyCityEnv

    assert isinstance(cfg, GuessMyCityEnvConfig)
    return GuessMyCityEnv(
        oracle=oracle if oracle is not None else _guess_my_city_oracle(cfg),
        batch_size=cfg.batch_size,
        max_turns=cfg.max_turns,
        match=cfg.match,
        seed=seed,
    )


def _adventure(cfg: EnvConfig, seed: int | None, oracle: Oracle | None) -> BatchedTextEnv:
    from archer.envs.adventure import make_adventure_env

    return make_adventure_env(cfg, seed)


def _frozenlake(cfg: EnvConfig, seed: int | None, oracle: Oracle | None) -> BatchedTextEnv:
    from archer.envs.frozen_lake import make_frozen_lake_env

    return make_frozen_lake_env(cfg, seed)


def _sokoban(cfg: EnvConfig, seed: int | None, oracle: Oracle | None) -> BatchedTextEnv:
    from archer.envs.sokoban import make_sokoban_env

    return make_sokoban_env(cfg, seed)


# env name -> builder(cfg, seed, shared oracle or None)
ENV_BUILDERS: dict[str, Callable[[EnvConfig, int | None, Oracle | None], BatchedTextEnv]] = {
    "twenty_questions": _twenty_questions,
    "webshop": _webshop,
    "guess_my_city": _guess_my_city,
    "adventure": _adventure,
    "frozenlake": _frozenlake,
    "sokoban": _sokoban,
    # (new environments are registered above this line)
}

# env name -> oracle builder, for environments with an oracle (shared by the training and evaluation envs)
ORACLE_BUILDERS: dict[str, Callable[[EnvConfig], Oracle]] = {
    "twenty_questions": _twenty_questions_oracle,
    "guess_my_city": _guess_my_city_oracle,
    # (new oracles are registered above this line)
}


def make_oracle(cfg: EnvConfig) -> Oracle | None:
    """The oracle of ``cfg``'s environment, or None for environments without one."""
    builder = ORACLE_BUILDERS.get(cfg.name)
    return builder(cfg) if builder is not None else None


def make_env(cfg: EnvConfig, seed: int | None = None, oracle: Oracle | None = None) -> BatchedTextEnv:
    """Build the environment ``cfg.name`` names; ``oracle`` shares one oracle object between environments."""
    try:
        builder = ENV_BUILDERS[cfg.name]
    except KeyError:
        raise ValueError(
            f"unknown environment {cfg.name!r}; choose one of {', '.join(sorted(ENV_BUILDERS))}"
        ) from None
    return builder(cfg, seed, oracle)
