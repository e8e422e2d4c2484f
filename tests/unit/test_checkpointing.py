"""Config fingerprints: which config changes make a checkpoint or a cached starting policy unusable."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from archer.checkpointing import config_fingerprint, explicit_settings
from archer.config import (
    ArcherConfig,
    BCConfig,
    CHAIConfig,
    CriticConfig,
    CriticTrainingConfig,
    ModelConfig,
    PolicyConfig,
    RunConfig,
)
from archer.envs.twenty_questions.config import TwentyQuestionsEnvConfig
from archer.pretraining import pretraining_config


@dataclass
class _Inner:
    rate: float = 0.1
    names: list[str] = field(default_factory=lambda: ["a"])


@dataclass
class _Outer:
    inner: _Inner = field(default_factory=_Inner)
    seed: int = 0


def test_explicit_settings_keeps_only_changed_fields_and_the_types():
    assert explicit_settings(_Outer()) == {"__type__": "_Outer"}
    changed = _Outer(inner=_Inner(names=["a", "b"]), seed=3)
    assert explicit_settings(changed) == {
        "__type__": "_Outer",
        "inner": {"__type__": "_Inner", "names": ["a", "b"]},
        "seed": 3,
    }


def test_a_new_field_left_at_its_default_keeps_the_fingerprint():
    @dataclass
    class _OuterWithNewKey(_Outer):
        new_switch: bool = False

    _OuterWithNewKey.__name__ = "_Outer"  # the same class, one version later
    assert config_fingerprint(_OuterWithNewKey()) == config_fingerprint(_Outer())
    assert config_fingerprint(_OuterWithNewKey(new_switch=True)) != config_fingerprint(_Outer())


def _run(algorithm, **kwargs) -> RunConfig:
    return RunConfig(algorithm=algorithm, env=TwentyQuestionsEnvConfig(), **kwargs)


def test_fingerprint_sees_changed_values_and_algorithm_types_but_not_ignored_keys():
    base = _run(ArcherConfig())
    assert config_fingerprint(base) == config_fingerprint(_run(ArcherConfig()))
    assert config_fingerprint(base) != config_fingerprint(_run(ArcherConfig(critic=CriticTrainingConfig(lr=1e-3))))
    # CHAI's config with all defaults differs from ArCHer's by its type alone.
    assert config_fingerprint(base) != config_fingerprint(_run(CHAIConfig()))
    longer = _run(ArcherConfig(num_iterations=5000))
    assert config_fingerprint(base) != config_fingerprint(longer)
    ignore = ("algorithm.num_iterations", "run_dir")
    assert config_fingerprint(base, ignore) == config_fingerprint(longer, ignore)
    assert config_fingerprint(base, ignore) == config_fingerprint(_run(ArcherConfig(), run_dir="x"), ignore)


def test_an_ignored_key_leaves_no_trace_even_when_it_is_its_sections_only_setting():
    ignore = ("inner.rate",)
    # The section then equals its default and drops out, exactly as if the key had never been set.
    assert config_fingerprint(_Outer(inner=_Inner(rate=0.5)), ignore) == config_fingerprint(_Outer(), ignore)
    assert config_fingerprint(_Outer(inner=_Inner(rate=0.5)), ignore) == config_fingerprint(_Outer())
    assert config_fingerprint(_Outer(inner=_Inner(names=[])), ignore) != config_fingerprint(_Outer(), ignore)
    assert config_fingerprint(_Outer(), ("no.such.key",)) == config_fingerprint(_Outer())


def _online_run_with(policy: PolicyConfig, critic: CriticConfig | None = None, bc_lr: float = 1e-3) -> RunConfig:
    model = ModelConfig(policy=policy, critic=critic or CriticConfig())
    return _run(ArcherConfig(), model=model, pretrain=BCConfig(actor_lr=bc_lr))


def test_the_pretrained_policy_cache_ignores_sampling_and_critic_settings_but_not_training_ones():
    _, base = pretraining_config(_online_run_with(PolicyConfig()))
    sampled_differently = PolicyConfig(temperature=0.7, top_k=0, top_p=0.9)
    assert pretraining_config(_online_run_with(sampled_differently))[1] == base
    assert pretraining_config(_online_run_with(PolicyConfig(share_prefixes=True)))[1] == base  # speed only
    assert pretraining_config(_online_run_with(PolicyConfig(), CriticConfig(q_input="joint")))[1] == base
    assert pretraining_config(_online_run_with(PolicyConfig(), bc_lr=1e-4))[1] != base
    assert pretraining_config(_online_run_with(PolicyConfig(max_new_tokens=7)))[1] != base
    # The pretraining run itself keeps the default sampling settings and the behaviour-cloning config.
    pretrain_cfg, _ = pretraining_config(_online_run_with(sampled_differently))
    assert pretrain_cfg.model.policy.temperature == PolicyConfig().temperature
    assert pretrain_cfg.algorithm == BCConfig(actor_lr=1e-3)


def test_pretraining_config_needs_a_pretrain_section():
    with pytest.raises(ValueError, match="no pretrain section"):
        pretraining_config(_run(ArcherConfig()))
