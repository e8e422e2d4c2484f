"""The game registry: one ``GameSpec`` per game, each consistent with its config class and its YAML option."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest

from archer.config import EnvConfig, RunConfig, register_configs
from archer.data.offline import load_offline_trajectories
from archer.envs.registry import GAMES, make_env, make_oracle

CONFIG_DIR = Path(__file__).resolve().parents[2] / "scripts" / "config" / "env"


@pytest.mark.parametrize("name", sorted(GAMES))
def test_every_game_is_registered_under_its_config_name_and_has_a_yaml_file(name: str) -> None:
    spec = GAMES[name]
    assert spec.name == name == spec.config().name
    assert issubclass(spec.config, EnvConfig)
    assert any(f"- base_{name}\n" in path.read_text() for path in CONFIG_DIR.glob("*.yaml"))


def test_the_question_games_have_oracles_and_every_game_has_offline_data() -> None:
    assert {name for name, spec in GAMES.items() if spec.build_oracle} == {"twenty_questions", "guess_my_city"}
    assert all(spec.load_offline is not None for spec in GAMES.values())
    assert make_oracle(GAMES["sokoban"].config()) is None


def test_an_unknown_game_is_refused_with_the_known_names(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown environment 'chess'; choose one of adventure, frozenlake"):
        make_env(EnvConfig(name="chess"))
    cfg = cast(RunConfig, SimpleNamespace(env=EnvConfig(name="chess")))
    with pytest.raises(ValueError, match="'chess' has no offline dataset; environments with one: twenty_questions"):
        load_offline_trajectories(cfg, tmp_path)


@pytest.mark.parametrize("name", sorted(GAMES))
def test_every_game_config_is_stored_for_its_yaml_file(name: str) -> None:
    from hydra.core.config_store import ConfigStore
    from omegaconf import OmegaConf

    register_configs()
    stored = ConfigStore.instance().repo["env"][f"base_{name}.yaml"].node
    assert OmegaConf.get_type(stored) is GAMES[name].config
