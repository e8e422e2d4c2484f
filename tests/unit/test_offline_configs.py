"""The offline methods' configs: defaults follow OfflineArcher, impossible values name the key."""

from __future__ import annotations

import pytest

from archer.config import ConfigError, IQLReinforceConfig, OfflineArcherConfig, OfflineFilteredBCConfig
from tests.conftest import compose_run


def test_defaults_are_offline_archers_settings() -> None:
    cfg = OfflineArcherConfig()
    assert (cfg.critic.gamma, cfg.critic.tau, cfg.critic.lr, cfg.actor_lr) == (0.99, 0.05, 1e-5, 1e-4)
    assert (cfg.batch_size, cfg.critic.micro_batch_size, cfg.critic_expectile, cfg.inv_temp) == (128, 32, 0.9, 1.0)
    assert cfg.max_weight == 100.0 and cfg.critic_warmup_steps == 0 and cfg.uses_critic and not cfg.online
    assert IQLReinforceConfig().kl_coeff == 0.0 and IQLReinforceConfig().uses_critic
    fbc = OfflineFilteredBCConfig()
    assert (fbc.filter_fraction, fbc.actor_lr, fbc.batch_size) == (0.1, 1e-4, 128) and not fbc.uses_critic


def test_top_level_configs_pick_their_algorithm() -> None:
    assert compose_run("offline_archer_20q").algorithm.name == "offline_archer"
    assert compose_run("iql_reinforce_20q").algorithm.name == "iql_reinforce"
    assert compose_run("offline_filteredbc_20q").algorithm.name == "offline_filtered_bc"
    offline_bc = compose_run("offline_bc_20q").algorithm
    assert (offline_bc.name, offline_bc.actor_lr) == ("bc", 1e-4)
    # The group option carries OfflineArcher's BC settings: batches of 32 with 4 accumulated.
    offline_bc = compose_run("bc_20q", ["algorithm=offline_bc"]).algorithm
    assert (offline_bc.actor_lr, offline_bc.batch_size, offline_bc.actor_micro_batch_size) == (1e-4, 128, 32)
    assert compose_run("offline_archer_20q", ["algorithm.max_weight=null"]).algorithm.max_weight is None


@pytest.mark.parametrize(
    ("name", "override", "key"),
    [
        ("offline_archer_20q", "algorithm.critic_expectile=1.0", "algorithm.critic_expectile"),
        ("offline_archer_20q", "algorithm.max_weight=0", "algorithm.max_weight"),
        ("offline_archer_20q", "algorithm.inv_temp=-1", "algorithm.inv_temp"),
        ("offline_archer_20q", "algorithm.critic.tau=0", "algorithm.critic.tau"),
        ("offline_archer_20q", "algorithm.critic.gamma=1.5", "algorithm.critic.gamma"),
        ("offline_archer_20q", "algorithm.critic.micro_batch_size=0", "algorithm.critic.micro_batch_size"),
        ("offline_archer_20q", "algorithm.critic_warmup_steps=50", "algorithm.critic_warmup_steps"),
        ("iql_reinforce_20q", "algorithm.kl_coeff=1.5", "algorithm.kl_coeff"),
        ("iql_reinforce_20q", "algorithm.generation_batch_size=0", "algorithm.generation_batch_size"),
        ("offline_filteredbc_20q", "algorithm.filter_fraction=0", "algorithm.filter_fraction"),
        ("offline_filteredbc_20q", "algorithm.batch_size=100", "algorithm.batch_size"),
    ],
)
def test_impossible_values_name_the_key(name: str, override: str, key: str) -> None:
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        compose_run(name, [override])
