"""WebShop offline data: scripted games recorded, saved, checked, loaded as trajectories, generated and cached."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from archer.data.offline import load_offline_trajectories
from archer.envs.registry import GAMES
from archer.envs.webshop.dataset import (
    WebShopDatasetError,
    episode_to_trajectory,
    generate_webshop_dataset,
    load_webshop_dataset,
    save_webshop_dataset,
)
from archer.envs.webshop.env import WebShopEnv
from archer.envs.webshop.pages import LocalPageSource
from archer.envs.webshop.shop import build_site
from tests.conftest import TINY_RUN_OVERRIDES, compose_run


def small_env(batch_size: int = 4) -> WebShopEnv:
    return WebShopEnv(LocalPageSource(build_site(200, 0, 300)), 300, (200, 250), batch_size, max_turns=10, seed=0)


def test_generated_games_rebuild_the_observations_the_env_showed(tmp_path: Path) -> None:
    episodes = generate_webshop_dataset(small_env(), num_episodes=10, seed=1, instructions=(0, 100))
    assert len(episodes) == 10 and all(0 <= e.instruction < 100 for e in episodes)
    assert generate_webshop_dataset(small_env(), 10, 1, (0, 100)) == episodes
    assert any(e.score >= 1.0 for e in episodes) and all(e.terminated != e.truncated for e in episodes)

    path = tmp_path / "webshop.json"
    save_webshop_dataset(episodes, path)
    loaded = load_webshop_dataset(path)
    assert loaded == episodes
    for episode in loaded[:4]:
        trajectory = episode_to_trajectory(episode)
        replay = small_env(batch_size=1)
        shown = replay.reset(game_ids=[episode.instruction])
        for action in trajectory.actions:
            (result,) = replay.step([action])
            shown.append(result.observation)
        assert trajectory.observations == shown
        assert trajectory.episode_return == episode.score and trajectory.terminated == episode.terminated


def _records(tmp_path: Path) -> list[dict]:
    path = tmp_path / "good.json"
    save_webshop_dataset(generate_webshop_dataset(small_env(), 2, 0, (0, 50)), path)
    return json.loads(path.read_text())


@pytest.mark.parametrize(
    ("corrupt", "message"),
    [
        (lambda r: r.pop("steps"), "record 1 has no 'steps'"),
        (lambda r: r.update(terminated=True, truncated=True), "record 1: a game ends either"),
        (lambda r: r["steps"][0].update(reward=2.0), "record 1: step 0 'reward' must be a number in"),
        (lambda r: r["steps"][0].update(action="a\nb"), "record 1: step 0 'action' must be a non-empty one-line"),
        (lambda r: r.update(instruction="7"), "record 1: 'instruction' must be an integer"),
    ],
)
def test_malformed_records_are_named(tmp_path: Path, corrupt, message: str) -> None:
    records = _records(tmp_path)
    corrupt(records[1])
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(records))
    with pytest.raises(WebShopDatasetError, match=rf"bad\.json: {message}"):
        load_webshop_dataset(path)


def test_missing_or_unreadable_files_give_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(WebShopDatasetError, match="missing.json: WebShop dataset not found"):
        load_webshop_dataset(tmp_path / "missing.json")
    (tmp_path / "broken.json").write_text("[{")
    with pytest.raises(WebShopDatasetError, match="not valid JSON"):
        load_webshop_dataset(tmp_path / "broken.json")
    (tmp_path / "object.json").write_text("{}")
    with pytest.raises(WebShopDatasetError, match="expected a list"):
        load_webshop_dataset(tmp_path / "object.json")


def test_offline_loader_generates_once_then_loads_a_configured_path(tmp_path: Path) -> None:
    assert GAMES["webshop"].load_offline is not None
    overrides = [*TINY_RUN_OVERRIDES, "env.num_products=200", "env.num_instructions=300", "env.train_lower=200"]
    overrides += ["env.train_upper=250", "env.data_upper=100", "data.generate_episodes=6"]
    cfg = compose_run("bc_webshop", overrides)
    trajectories = load_offline_trajectories(cfg, tmp_path)
    (cached,) = (tmp_path / "datasets").glob("webshop-6-seed*.json")
    stamp = cached.stat().st_mtime_ns
    assert len(trajectories) == 6 and all(t.length <= 4 for t in trajectories)  # env.max_turns=4 from the overrides
    assert load_offline_trajectories(cfg, tmp_path) == trajectories and cached.stat().st_mtime_ns == stamp

    from_path = compose_run("bc_webshop", [*overrides, f"data.path={cached}"])
    assert load_offline_trajectories(from_path, tmp_path / "elsewhere") == trajectories
    missing = compose_run("bc_webshop", [*overrides, f"data.path={tmp_path / 'nope.json'}"])
    with pytest.raises(WebShopDatasetError, match="nope.json: WebShop dataset not found"):
        load_offline_trajectories(missing, tmp_path)
