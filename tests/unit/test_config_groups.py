"""Settings several algorithms share are declared once, in ``algorithm.rollout`` and ``algorithm.critic`` or, for
flat keys, in a mixin; which groups a config has says whether the algorithm plays and whether it trains a critic; old
key paths name the new."""

from __future__ import annotations

import dataclasses
import inspect

import pytest
from hydra.errors import ConfigCompositionException
from omegaconf import MISSING

from archer.config import (
    REMOVED_KEYS,
    RENAMED_KEYS,
    AlgorithmConfig,
    ArcherConfig,
    BCConfig,
    CHAIConfig,
    ConfigError,
    CriticTrainingConfig,
    RolloutConfig,
)
from archer.config import algorithm as algorithm_configs
from tests.conftest import compose_run

ALGORITHM_CONFIGS = sorted(
    (cls for cls in vars(algorithm_configs).values() if isinstance(cls, type) and issubclass(cls, AlgorithmConfig)),
    key=lambda cls: cls.__name__,
)
CONCRETE = {cls().name: cls for cls in ALGORITHM_CONFIGS if cls().name != MISSING}
MIXINS = sorted(
    (cls for cls in vars(algorithm_configs).values() if isinstance(cls, type) and cls.__name__.endswith("Mixin")),
    key=lambda cls: cls.__name__,
)
# name -> (online, trains a critic)
IDENTITY = {
    "bc": (False, False),
    "offline_filtered_bc": (False, False),
    "offline_archer": (False, True),
    "iql_reinforce": (False, True),
    "archer": (True, True),
    "archer_baseline": (True, True),
    "archer_ppo": (True, True),
    "chai": (True, True),
    "filtered_bc": (True, False),
    "ppo": (True, False),
    "grpo": (True, False),
    "gigpo": (True, False),
}


def _introduced(cls: type) -> set[str]:
    """The fields ``cls`` declares that no base class of it declares (a changed default is not a new field)."""
    inherited = {
        f.name for base in cls.__mro__[1:] if dataclasses.is_dataclass(base) for f in dataclasses.fields(base)
    }
    return {f.name for f in dataclasses.fields(cls)} - inherited


def test_shared_settings_are_declared_only_in_their_group() -> None:
    owners: dict[str, list[str]] = {}
    for cls in ALGORITHM_CONFIGS + MIXINS:
        for name in _introduced(cls):
            owners.setdefault(name, []).append(cls.__name__)
    for old in RENAMED_KEYS:
        # PPO's discount is its GAE's, between utterances; it trains no utterance critic.
        assert owners.get(old.split(".")[1], ["PPOConfig"]) == ["PPOConfig"], old
    repeated = {name: sorted(classes) for name, classes in owners.items() if len(classes) > 1}
    # Names still declared by several classes: each group field holds one group type (its default differs per
    # algorithm), and the KL terms are four different terms (ArCHer's penalty on the advantage, IQL's mixing
    # weight, PPO's per-token reward, GRPO's k3 loss term). A new repeat fails here: give the field a mixin instead.
    assert repeated == {
        "rollout": ["ArcherConfig", "FilteredBCConfig", "GRPOConfig", "PPOConfig"],
        "critic": ["ArcherConfig", "OfflineCriticConfig"],
        "kl_coeff": ["ArcherConfig", "GRPOConfig", "IQLReinforceConfig", "PPOConfig"],
        # Each normalises its own advantages (ArCHer's actor batch, GRPO's group), with the same names for the
        # same arithmetic (mean_std_norm) and each algorithm's own choices.
        "advantage_norm": ["ArcherConfig", "GRPOConfig"],
    }


def test_every_config_takes_each_default_from_its_nearest_declaration() -> None:
    # A dataclass takes a field's default from the last base along the reversed MRO that has the field; a mixin
    # that carried AlgorithmConfig's fields would silently reset, say, ArcherBaselineConfig's num_iterations.
    for cls in ALGORITHM_CONFIGS:
        for f in dataclasses.fields(cls):
            nearest = next(base for base in cls.__mro__ if f.name in inspect.get_annotations(base))
            declared = nearest.__dataclass_fields__[f.name]
            assert (f.default, f.default_factory) == (declared.default, declared.default_factory), (cls, f.name)


MIXIN_FIELDS = [
    (cls, f.name) for cls in CONCRETE.values() for m in MIXINS if issubclass(cls, m) for f in dataclasses.fields(m)
]


@pytest.mark.parametrize(("cls", "key"), MIXIN_FIELDS, ids=[f"{cls.__name__}-{key}" for cls, key in MIXIN_FIELDS])
def test_a_mixins_checks_run_in_every_config_that_has_it(cls: type, key: str) -> None:
    # A mixin listed after AlgorithmConfig would have its validate skipped (AlgorithmConfig's calls no super()).
    bad = -1 if key == "warmup_iters" else 0
    with pytest.raises(ConfigError, match=rf"^algorithm\.{key}: must be"):
        dataclasses.replace(cls(), **{key: bad}).validate()


@pytest.mark.parametrize("name", sorted(IDENTITY))
def test_the_groups_a_config_has_say_whether_it_plays_and_trains_a_critic(name: str) -> None:
    cfg = CONCRETE[name]()
    assert (cfg.online, cfg.uses_critic) == IDENTITY[name]
    assert cfg.online == isinstance(getattr(cfg, "rollout", None), RolloutConfig)
    assert cfg.uses_critic == isinstance(getattr(cfg, "critic", None), CriticTrainingConfig)


def test_every_algorithm_config_has_its_identity_checked() -> None:
    assert set(CONCRETE) == set(IDENTITY)


def test_algorithm_classes_do_not_restate_whether_they_are_online() -> None:
    from archer.algorithms.base import Algorithm

    assert not hasattr(Algorithm, "online")


def test_group_defaults_are_each_algorithms_own() -> None:
    assert ArcherConfig().critic == CriticTrainingConfig(lr=2e-5, gamma=0.95, tau=0.1, micro_batch_size=8)
    assert CHAIConfig().critic.lr == 1e-5 and CHAIConfig().rollout == RolloutConfig(128, 10_000)
    assert not hasattr(BCConfig(), "critic") and not hasattr(BCConfig(), "rollout")


def test_the_groups_compose_and_validate_under_their_new_keys() -> None:
    algorithm = compose_run(
        "archer_20q", ["algorithm.critic.lr=3e-4", "algorithm.rollout.episodes_per_iter=8"]
    ).algorithm
    assert (algorithm.critic.lr, algorithm.rollout.episodes_per_iter) == (3e-4, 8)
    with pytest.raises(ConfigError, match=r"^algorithm\.critic\.gamma: must be in \(0, 1\]"):
        compose_run("archer_20q", ["algorithm.critic.gamma=1.5"])
    with pytest.raises(ConfigError, match=r"^algorithm\.rollout\.replay_capacity: must be positive"):
        compose_run("online_filteredbc_20q", ["algorithm.rollout.replay_capacity=0"])


def test_a_frozen_chai_may_warm_up_for_the_whole_run_but_not_one_that_trains_its_policy() -> None:
    CHAIConfig(num_iterations=3, warmup_iters=5).validate()
    with pytest.raises(ConfigError, match=r"^algorithm\.warmup_iters"):
        CHAIConfig(num_iterations=3, warmup_iters=5, update_policy=True).validate()


@pytest.mark.parametrize(("old", "new"), sorted(RENAMED_KEYS.items()))
def test_an_old_key_on_the_command_line_names_its_new_key(old: str, new: str) -> None:
    with pytest.raises(ConfigError, match=rf"^{old.replace('.', chr(92) + '.')}: this key is now {new}"):
        compose_run("archer_20q", [f"{old}=1"])


@pytest.mark.parametrize("key", sorted(REMOVED_KEYS))
def test_a_removed_key_is_refused_saying_it_was_removed_and_what_runs_instead(key: str) -> None:
    with pytest.raises(ConfigError, match=rf"^{key.replace('.', chr(92) + '.')}: this setting was removed") as refused:
        compose_run("archer_20q", [f"{key}=1"])
    assert REMOVED_KEYS[key] in str(refused.value)


def test_an_old_key_in_a_yaml_file_names_its_new_key(tmp_path) -> None:
    from archer.cli import compose_run_config, register_configs
    from tests.conftest import CONFIG_DIR

    (tmp_path / "mine.yaml").write_text(
        "defaults:\n  - base_run\n  - /algorithm: archer\n  - /env: twenty_questions_subset\n  - /model: tiny\n"
        "  - _self_\nalgorithm:\n  critic_lr: 1.0e-3\n"
    )
    register_configs()
    with pytest.raises(ConfigError, match=r"^algorithm\.critic_lr: this key is now algorithm\.critic\.lr"):
        compose_run_config(tmp_path, "mine", ["run_dir=unused", f"hydra.searchpath=[file://{CONFIG_DIR}]"])


def test_a_key_unknown_for_another_reason_keeps_hydras_message() -> None:
    # PPO's own discount keeps its key; filtered BC, with no critic, has none: the message points at the group.
    assert compose_run("ppo_20q", ["algorithm.gamma=0.9"]).algorithm.gamma == 0.9
    with pytest.raises(ConfigError, match="an algorithm without the group has no such setting"):
        compose_run("online_filteredbc_20q", ["algorithm.gamma=0.9"])
    with pytest.raises(ConfigCompositionException, match="algorithm.critic_lrr"):
        compose_run("archer_20q", ["algorithm.critic_lrr=1"])
