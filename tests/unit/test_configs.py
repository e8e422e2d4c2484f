"""Every shipped config composes and validates; bad keys, types and combinations fail with a clear message."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from hydra.errors import ConfigCompositionException

from archer.checkpointing import fingerprint_settings, settings_differences
from archer.cli import RUN_FOLDER_NAME_MAX, compose_run_config, run_folder_name
from archer.config import ArcherConfig, ConfigError, ModelConfig, RunConfig
from tests.conftest import CONFIG_DIR, compose_run

# kalm_*.yaml compose into archer.kalm.config.KalmRunConfig (tests/unit/test_kalm_offline.py), not RunConfig.
# experiments/ holds top-level configs the method benchmark needs (selected as experiments/<name>), not a group.
TOP_LEVEL = sorted(p.stem for p in CONFIG_DIR.glob("*.yaml") if p.stem != "common" and not p.stem.startswith("kalm_"))
TOP_LEVEL += sorted(f"experiments/{p.stem}" for p in (CONFIG_DIR / "experiments").glob("*.yaml"))
GROUPS = {
    group.name: sorted(p.stem for p in group.glob("*.yaml"))
    for group in CONFIG_DIR.iterdir()
    if group.is_dir() and group.name != "experiments"
}


# Keys some configs leave for the user to set (``???`` in YAML).
REQUIRED = {"eval_20q": ["model.policy.name_or_path=outputs/archer_20q/policy"]}
# Keys some group options leave for the user to set (composing does not import env.target).
OPTION_REQUIRED = {
    ("env", "external"): ["env.target=guess_the_number:GuessTheNumber"],
    ("env", "openenv"): ["env.server_url=http://127.0.0.1:8000"],
}


@pytest.mark.parametrize("name", TOP_LEVEL)
def test_every_top_level_config_composes_and_validates(name: str) -> None:
    cfg = compose_run(name, REQUIRED.get(name, []))
    assert isinstance(cfg, RunConfig)


def test_a_required_key_left_unset_is_named() -> None:
    with pytest.raises(ConfigError, match="model.policy.name_or_path"):
        compose_run("eval_20q")


@pytest.mark.parametrize(("group", "option"), [(g, o) for g, options in GROUPS.items() for o in options])
def test_every_group_option_composes_into_bc_20q(group: str, option: str) -> None:
    compose_run("bc_20q", [f"{group}={option}", *OPTION_REQUIRED.get((group, option), [])])


def test_shipped_yaml_has_no_absolute_paths_or_secrets() -> None:
    for path in CONFIG_DIR.rglob("*.yaml"):
        text = path.read_text()
        assert "/home/" not in text and "/nfs/" not in text and "/global/" not in text, path
        for secret_key in ("huggingface_token", "hf_token", "wandb_key", "api_key", "password"):
            assert secret_key not in text.lower(), (path, secret_key)


def test_unknown_key_is_named() -> None:
    with pytest.raises(ConfigCompositionException, match="algorithm.not_a_key"):
        compose_run("bc_20q", ["algorithm.not_a_key=1"])


def test_scripts_compose_a_relative_config_folder_with_overrides_as_run_py_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(CONFIG_DIR.parent)  # Hydra wants an absolute folder: the relative one must be resolved
    cfg = compose_run_config("config", "archer_20q", ["run_dir=unused", "algorithm.kl_coeff=0.5"])
    assert isinstance(cfg, RunConfig) and cfg.algorithm.kl_coeff == 0.5 and cfg.run_dir == "unused"
    with pytest.raises(ConfigCompositionException, match="algorithm.kl_coef"):
        compose_run_config("config", "archer_20q", ["run_dir=unused", "algorithm.kl_coef=0.5"])


def test_a_default_run_folder_too_long_for_a_file_name_is_cut_and_ends_with_a_digest_of_the_overrides() -> None:
    short = "algorithm.kl_coeff=0.5,seed=1"
    assert run_folder_name(short) == short and run_folder_name("") == ""
    # A path value makes pieces of the name, each of which is short here: kept as it was.
    assert run_folder_name("cache_dir=/tmp/cache,seed=1") == "cache_dir=/tmp/cache,seed=1"
    overrides = [f"model.critic.turns.option_number_{i}=true" for i in range(12)]
    joined = ",".join(overrides)
    name = run_folder_name(joined)
    assert len(name.encode()) == RUN_FOLDER_NAME_MAX and "/" not in name
    assert name.startswith(joined[:150]) and name == run_folder_name(joined)
    assert run_folder_name(joined.replace("true", "false")) != name
    # A piece too long between slashes is cut the same way, slashes made underscores.
    long_path = "cache_dir=/" + "x" * 250 + ",seed=1"
    assert "/" not in run_folder_name(long_path) and len(run_folder_name(long_path).encode()) == RUN_FOLDER_NAME_MAX
    # The run folder run.py uses for a long set of overrides: every name in it fits a file system.
    long_set = [
        "algorithm.rollout.explore_fraction=0.25",
        "algorithm.rollout.explore_sources=[repeat,past]",
        "algorithm.critic.lr=1e-4",
        "algorithm.critic.tau=0.01",
        "algorithm.kl_coeff=0.1",
        "algorithm.bc_coeff=0.3",
        "model.critic.name_or_path=minilm",
        "model.critic.pooling=mean",
        "model.critic.q_input=joint",
        "model.critic.freeze_encoder=true",
        "model.critic.history=turns",
        "model.critic.turns.action_similarity=true",
    ]
    run_dir = compose_run_config(CONFIG_DIR, "archer_20q", long_set).run_dir
    assert run_dir is not None and run_dir.startswith("outputs/archer_20q/algorithm.bc_coeff=0.3,")
    assert all(len(part.encode()) <= 255 for part in run_dir.split("/"))


def test_wrong_type_names_the_key() -> None:
    with pytest.raises(ConfigCompositionException) as info:
        compose_run("bc_20q", ["algorithm.batch_size=many"])
    assert "algorithm.batch_size" in str(info.value) + str(info.value.__cause__)


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("algorithm.batch_size=33", "algorithm.batch_size"),
        ("env.oracle=t5", "env.oracle_path"),
        ("env.oracle=chatgpt", "env.oracle"),
        ("env.success_check=substring", "env.success_check"),
        ("model.policy.dtype=int8", "model.policy.dtype"),
        ("model.policy.embedded.n_head=3", "model.policy.embedded.n_head"),
        ("model.critic.pooling=max", "model.critic.pooling"),
        ("model.critic.name_or_path=policy", "model.critic.pooling"),  # cls pooling on a causal body
        ("model.critic.embedding_cache_size=0", "model.critic.embedding_cache_size"),
        ("model.policy.max_prompt_tokens=4000", "model.policy.max_prompt_tokens"),
        ("eval.num_episodes=0", "eval.num_episodes"),
        ("eval.sampled_episodes=-1", "eval.sampled_episodes"),
        ("logging.wandb_mode=sometimes", "logging.wandb_mode"),
    ],
)
def test_impossible_values_name_the_key_and_the_fix(override: str, key: str) -> None:
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        compose_run("bc_20q", [override])


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("algorithm.kl_coeff=-1", "algorithm.kl_coeff"),
        ("algorithm.bc_coeff=-0.1", "algorithm.bc_coeff"),
        ("algorithm.kl_coeff=0.1 model.policy.shard=fsdp", "algorithm.kl_coeff"),
        ("algorithm.v_target_pool=0", "algorithm.v_target_pool"),
        ("algorithm.advantage_norm=mean", "algorithm.advantage_norm"),
    ],
)
def test_impossible_archer_values_name_the_key(override: str, key: str) -> None:
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        compose_run("archer_20q", override.split())


@pytest.mark.parametrize("name", ["archer_baseline_20q", "archer_ppo_20q"])
@pytest.mark.parametrize(("key", "value"), [("kl_coeff", "0.1"), ("bc_coeff", "0.1"), ("advantage_norm", "std_norm")])
def test_variants_with_their_own_actor_refuse_archers_actor_terms(name: str, key: str, value: str) -> None:
    with pytest.raises(ConfigError, match=rf"algorithm\.{key}"):
        compose_run(name, [f"algorithm.{key}={value}"])


@pytest.mark.parametrize(
    ("config", "key"),
    [
        ("bc_20q", "run_dir"),
        ("bc_20q", "cache_dir"),
        ("bc_20q", "init_from"),
        ("bc_20q", "data.path"),
        ("bc_20q", "model.policy.name_or_path"),
        ("bc_20q", "model.policy.reference_checkpoint"),
        ("archer_20q", "model.critic.name_or_path"),
        ("bc_20q", "env.oracle_path"),
        ("bc_city", "env.oracle_base_model"),
        ("bc_detective", "env.game_path"),
    ],
)
def test_an_empty_path_is_refused_naming_the_key(config: str, key: str) -> None:
    # Left empty, these keys used to mean the working directory (run_dir wrote into scripts/) or "not set".
    with pytest.raises(ConfigError, match=rf"^{key.replace('.', chr(92) + '.')}: is empty; give "):
        compose_run(config, [f"{key}=''"])


def test_a_blank_path_is_empty_too() -> None:
    with pytest.raises(ConfigError, match=r"^data\.path: is empty; give a dataset file, or null to generate one$"):
        compose_run("bc_20q", ["data.path='  '"])


# The off-paper switches of ArCHer's config and of the model config (speed-only settings and sizes aside).
OFF_PAPER_SWITCHES = (
    "algorithm.rollout.explore_fraction",
    "algorithm.rollout.explore_sources",
    "algorithm.critic.bootstrap_on_truncation",
    "algorithm.v_target_pool",
    "algorithm.kl_coeff",
    "algorithm.actor_states",
    "algorithm.bc_coeff",
    "model.policy.temperature",
    "model.critic.name_or_path",
    "model.critic.pooling",
    "model.critic.q_input",
    "model.critic.freeze_encoder",
    "model.critic.history",
    "model.critic.turns.reply_separator",
    "model.critic.turns.action_similarity",
    "model.critic.turns.repeat_similarity",
)


def test_archer_20q_is_the_benchmarks_archer_with_exactly_the_switches_its_header_lists() -> None:
    base, main = (fingerprint_settings(compose_run(name)) for name in ("experiments/archer_20q_base", "archer_20q"))
    assert settings_differences(base, main) == [
        "algorithm.actor_lr: 3e-05 -> 0.0001",
        "algorithm.actor_states: default -> 'policy'",
        "algorithm.bc_coeff: default -> 0.3",
        "algorithm.critic.lr: 0.001 -> 0.0001",
        "algorithm.critic.tau: default -> 0.01",  # the benchmark's ArCHer keeps the dataclass default, 0.1
        "algorithm.kl_coeff: default -> 0.1",
        "algorithm.num_iterations: 40 -> 50",
        "algorithm.rollout.explore_fraction: default -> 0.25",
        "algorithm.rollout.explore_sources: default -> ['repeat', 'past']",
        "algorithm.warmup_iters: 5 -> 15",
        "model.critic.turns.repeat_similarity: default -> True",
    ]
    header = (CONFIG_DIR / "archer_20q.yaml").read_text().split("defaults:")[0]
    for key in ("repeat_similarity", "critic.lr", "critic.tau", "explore_fraction", "actor_states", "kl_coeff"):
        assert key in header, key


def test_the_papers_archer_at_cpu_size_turns_no_switch_on() -> None:
    paper_cpu, paper = compose_run("archer_20q_paper_cpu"), compose_run("archer_20q_paper")
    defaults = SimpleNamespace(algorithm=ArcherConfig(), model=ModelConfig())  # the paper's, switch by switch
    for cfg in (paper_cpu, paper):
        for key in OFF_PAPER_SWITCHES:
            value = _get(cfg, key)
            if key == "model.critic.name_or_path":
                assert value in ("embedded", "roberta-base"), value  # an encoder trained with the critic
            elif key == "model.critic.pooling":
                assert value in ("cls", "pooler"), value  # the reference's (the first token's state)
            else:
                assert value == _get(defaults, key), (key, value)
    assert paper_cpu.model.critic.embedded.n_layer == 2 and paper_cpu.model.critic.embedded.n_embd == 128


def _get(cfg: Any, key: str) -> Any:
    value = cfg
    for part in key.split("."):
        value = getattr(value, part)
    return value
