"""The game registry: one ``GameSpec`` per game, each consistent with its config class and its YAML option.

A game is its package (``archer/envs/<game>/``, config class included), its YAML file and its line in ``GAMES``: the
``env`` group's schemas are stored from ``GAMES`` and from nowhere else."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest

from archer.cli import register_configs
from archer.config import EnvConfig, RunConfig
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
    with pytest.raises(ValueError, match="unknown environment 'chess'; choose one of adventure, external, frozenlake"):
        make_env(EnvConfig(name="chess"))
    cfg = cast(RunConfig, SimpleNamespace(env=EnvConfig(name="chess")))
    with pytest.raises(ValueError, match="'chess' has no offline dataset; environments with one: twenty_questions"):
        load_offline_trajectories(cfg, tmp_path)


@pytest.mark.parametrize("name", sorted(GAMES))
def test_every_game_config_lives_in_its_game_package(name: str) -> None:
    module = GAMES[name].config.__module__
    assert module.startswith("archer.envs.") and module.endswith(".config"), module
    assert module.count(".") == 3, module  # archer.envs.<game>.config


def test_the_env_group_stores_exactly_the_games_config_classes() -> None:
    """Each game's class as ``env/base_<game>``, and no other environment schema anywhere in the store."""
    from hydra.core.config_store import ConfigNode, ConfigStore
    from omegaconf import OmegaConf

    def schemas(repo: dict, prefix: str = "") -> dict[str, type]:
        found = {}
        for key, entry in repo.items():
            if isinstance(entry, dict):
                found.update(schemas(entry, f"{prefix}{key}/"))
            elif isinstance(entry, ConfigNode):
                found[f"{prefix}{key}"] = OmegaConf.get_type(entry.node)
        return found

    register_configs()
    stored = schemas(ConfigStore.instance().repo)
    env_schemas = {path: cls for path, cls in stored.items() if isinstance(cls, type) and issubclass(cls, EnvConfig)}
    assert env_schemas == {f"env/base_{name}.yaml": spec.config for name, spec in GAMES.items()}
    assert {path for path in stored if path.startswith("env/")} == set(env_schemas)
