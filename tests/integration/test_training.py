"""End-to-end training on tiny models: parameters move, outputs are written, runs resume and repeat exactly."""

from __future__ import annotations

import json
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from archer.checkpointing import CheckpointError
from archer.envs.registry import GAMES
from archer.trainer import PROCESS_CPU_KEY, build_trainer
from tests.conftest import TINY_RUN_OVERRIDES, compose_run

pytestmark = pytest.mark.integration


def tiny_bc(run_dir: Path, cache: str, *extra: str):
    overrides = [*TINY_RUN_OVERRIDES, f"cache_dir={cache}", "algorithm.num_iterations=2", "algorithm.steps_per_iter=3"]
    overrides += ["algorithm.batch_size=8", "algorithm.actor_micro_batch_size=4", *extra]
    cfg = compose_run("bc_20q", overrides)
    return build_trainer(cfg, run_dir)


def tiny_archer(run_dir: Path, cache: str, *extra: str, config: str = "archer_20q"):
    overrides = [*TINY_RUN_OVERRIDES, f"cache_dir={cache}", "algorithm.num_iterations=2", *extra]
    cfg = compose_run(config, overrides)
    return build_trainer(cfg, run_dir)


def snapshot(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {name: p.detach().clone() for name, p in module.named_parameters()}


def changed(before: dict[str, torch.Tensor], module: torch.nn.Module, names: set[str] | None = None) -> float:
    """Fraction of parameter tensors (of ``names``; all by default) that moved."""
    after = dict(module.named_parameters())
    names = set(before) if names is None else names
    return sum(not torch.equal(before[n], after[n].detach()) for n in names) / len(names)


def trained(module: torch.nn.Module) -> set[str]:
    """Names of the parameters an optimiser updates (a frozen critic encoder's are left out)."""
    return {name for name, p in module.named_parameters() if p.requires_grad}


def read_records(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def without_times(records: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if not k.startswith("time/")} for r in records]


def test_bc_trains_the_policy_and_writes_its_outputs(tmp_path: Path) -> None:
    trainer = tiny_bc(tmp_path / "run", str(tmp_path / "cache"))
    before = snapshot(trainer.policy.model)
    trainer.fit()
    assert changed(before, trainer.policy.model) > 0.9
    records = read_records(tmp_path / "run")
    assert [r["iteration"] for r in records] == [0, 1, 2]
    assert all("eval/return_mean" in r for r in records)
    assert "actor/bc_loss" in records[-1]
    # Every record carries the process's CPU seconds since the previous one; the first also counts the build.
    cpu = [r[PROCESS_CPU_KEY] for r in records]
    assert all(seconds > 0 for seconds in cpu)
    # The best achievable figures on the run's evaluation games, once, beside the start's evaluation.
    best = GAMES["twenty_questions"].best(trainer.cfg.env, trainer.eval_game_ids)
    assert (records[0]["eval/best_return_mean"], records[0]["eval/best_success_rate"]) == (
        best.return_mean,
        best.success_rate,
    )
    assert not any("eval/best_return_mean" in r for r in records[1:])
    assert trainer.title == "bc on twenty_questions (seed 0)"
    assert (tmp_path / "run" / "learning_curve.png").stat().st_size > 1000
    # The saved policy is a plain Hugging Face folder: loadable without project code.
    folder = tmp_path / "run" / "policy"
    model = AutoModelForCausalLM.from_pretrained(folder)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    assert tokenizer("Is it alive?")["input_ids"]
    for name, param in trainer.policy.model.state_dict().items():
        torch.testing.assert_close(model.state_dict()[name], param)


def test_bc_is_deterministic_for_a_seed(tmp_path: Path) -> None:
    cache = str(tmp_path / "cache")
    tiny_bc(tmp_path / "a", cache).fit()
    tiny_bc(tmp_path / "b", cache).fit()
    first, second = (without_times(read_records(tmp_path / name)) for name in ("a", "b"))
    assert len(first) == 3 and first == second


def test_resume_continues_and_a_different_config_is_refused(tmp_path: Path) -> None:
    cache, run = str(tmp_path / "cache"), tmp_path / "run"
    tiny_bc(run, cache).fit()
    resumed = tiny_bc(run, cache, "algorithm.num_iterations=3")
    assert resumed.start_iteration == 2
    resumed.fit()
    assert [r["iteration"] for r in read_records(run)] == [0, 1, 2, 3]
    with pytest.raises(CheckpointError, match="different configuration") as refused:
        tiny_bc(run, cache, "algorithm.actor_lr=0.5", "seed=3")
    # The refusal names each changed key with both values; keys that may change (num_iterations) are not listed.
    assert "these keys differ (checkpoint -> now): algorithm.actor_lr: 0.001 -> 0.5; seed: default -> 3." in str(
        refused.value
    )
    assert "num_iterations" not in str(refused.value)
    # Starting over in the same folder starts the record over too.
    tiny_bc(run, cache, "resume=false").fit()
    assert [r["iteration"] for r in read_records(run)] == [0, 1, 2]


def test_starting_over_keeps_the_old_run_until_the_new_one_has_its_own_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache, run = str(tmp_path / "cache"), tmp_path / "run"
    tiny_bc(run, cache).fit()
    old_records = (run / "metrics.jsonl").read_text()
    old_checkpoint = (run / "checkpoint.pt").read_bytes()

    # resume=false under a changed config, killed in its first iteration: before any checkpoint of its own.
    restarted = tiny_bc(run, cache, "resume=false", "algorithm.actor_lr=0.5")
    monkeypatch.setattr(restarted.algorithm, "update", lambda *args: (_ for _ in ()).throw(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        restarted.fit()
    (previous,) = run.glob("previous-*")
    assert (previous / "metrics.jsonl").read_text() == old_records
    assert (previous / "checkpoint.pt").read_bytes() == old_checkpoint
    assert {p.name for p in previous.iterdir()} >= {"config.json", "policy", "learning_curve.png"}
    # The folder now holds the new run alone: its config and its record, and no checkpoint to "resume" from.
    assert not (run / "checkpoint.pt").exists()
    assert json.loads((run / "config.json").read_text())["algorithm"]["actor_lr"] == 0.5
    assert [r["iteration"] for r in read_records(run)] == [0]
    # Rerunning the original command starts over too (its record moves aside again) instead of resuming.
    again = tiny_bc(run, cache)
    assert again.start_iteration == 0 and len(list(run.glob("previous-*"))) == 2


def test_corrupt_checkpoint_gives_a_clear_error(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "checkpoint.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match="corrupt") as garbage:
        tiny_bc(run, str(tmp_path / "cache"))
    # A pickled object: torch's safe loader refuses it and advises an unsafe load, which is never passed on.
    torch.save({"format_version": 1, "payload": Fraction(1, 3)}, run / "checkpoint.pt")
    with pytest.raises(CheckpointError, match="corrupt") as pickled:
        tiny_bc(run, str(tmp_path / "cache"))
    for refused in (garbage, pickled):
        assert "weights_only" not in str(refused.value) and "trust" not in str(refused.value)
    assert "Unsupported global" in str(pickled.value)


ARCHER_TINY = [
    "pretrain.num_iterations=1",
    "pretrain.steps_per_iter=2",
    "pretrain.batch_size=8",
    "pretrain.actor_micro_batch_size=4",
    "algorithm.warmup_iters=1",
    "algorithm.rollout.episodes_per_iter=4",
    "algorithm.critic_steps_per_iter=2",
    "algorithm.critic_batch_size=8",
    "algorithm.critic.micro_batch_size=4",
    "algorithm.actor_steps_per_iter=1",
    "algorithm.actor_batch_size=8",
    "algorithm.actor_micro_batch_size=4",
    "algorithm.generation_batch_size=8",
    "algorithm.v_target_pool=16",  # archer_20q's 512 fresh samples per critic phase would be most of a tiny run
    "algorithm.actor_lr=1e-3",
    "eval.every_iters=2",
]


# The paper's ArCHer, with none of the switches archer_20q turns on: a fresh encoder reading whole texts, trained.
PAPER_ARCHER = [
    "model.critic.name_or_path=embedded",
    "model.critic.pooling=cls",
    "model.critic.q_input=separate",
    "model.critic.freeze_encoder=false",
    "model.critic.history=text",
    "model.policy.temperature=1.0",
    "algorithm.kl_coeff=0.0",
]


@pytest.mark.parametrize("variant", [[], PAPER_ARCHER], ids=["archer_20q", "paper"])
def test_archer_two_iterations_train_every_network(tmp_path: Path, variant: list[str]) -> None:
    trainer = tiny_archer(tmp_path / "run", str(tmp_path / "cache"), *ARCHER_TINY, *variant)
    algorithm = trainer.algorithm
    policy, critic, target = (snapshot(m) for m in (trainer.policy.model, algorithm.critic, algorithm.target_critic))
    frozen = set(critic) - trained(algorithm.critic)
    assert bool(frozen) == (not variant)  # archer_20q freezes the critic's encoder, the paper trains it
    trainer.fit()
    assert changed(policy, trainer.policy.model) > 0.9
    assert changed(critic, algorithm.critic, trained(algorithm.critic)) > 0.9
    assert changed(target, algorithm.target_critic, trained(algorithm.critic)) > 0.9
    if frozen:
        assert changed(critic, algorithm.critic, frozen) == 0.0
    records = read_records(tmp_path / "run")
    assert [r["iteration"] for r in records] == [0, 1, 2]
    assert "actor/pg_loss" not in records[1] and "actor/pg_loss" in records[2]  # one warm-up iteration
    assert records[2]["env/trajectories"] == 8 and records[2]["buffer/transitions"] > 8
    assert (tmp_path / "run" / "policy" / "config.json").exists()


def test_exploring_rollouts_replace_moves_and_the_critic_still_trains(tmp_path: Path) -> None:
    explore = "algorithm.rollout.explore_fraction=0.5"
    trainer = tiny_archer(tmp_path / "run", str(tmp_path / "cache"), *ARCHER_TINY, explore)
    critic = snapshot(trainer.algorithm.critic)
    trainer.fit()
    assert changed(critic, trainer.algorithm.critic, trained(trainer.algorithm.critic)) > 0.9
    fractions = [r["rollout/replaced_move_fraction"] for r in read_records(tmp_path / "run")[1:]]
    assert len(fractions) == 2 and all(0 < f < 1 for f in fractions), fractions  # 4 games a turn: a coarse share


def test_past_exploration_replays_moves_from_the_replay_buffer(tmp_path: Path) -> None:
    explore = ["algorithm.rollout.explore_fraction=1.0", "algorithm.rollout.explore_sources=[past]"]
    trainer = tiny_archer(tmp_path / "run", str(tmp_path / "cache"), *ARCHER_TINY, *explore)
    first = trainer.collect(1)
    assert first["rollout/replaced_move_fraction"] == 0.0  # the buffer was empty: nothing to draw from
    seen = trainer.buffer.distinct_actions()
    assert seen
    assert trainer.collect(2)["rollout/replaced_move_fraction"] == 1.0
    second = trainer.buffer.get(list(range(int(first["buffer/transitions"]), len(trainer.buffer))))
    assert second.actions and set(second.actions) <= set(seen)  # every move of the second batch is an old one


def test_past_exploration_leaves_out_moves_the_policy_cannot_play_whole(tmp_path: Path) -> None:
    explore = ["algorithm.rollout.explore_fraction=1.0", "algorithm.rollout.explore_sources=[past]"]
    trainer = tiny_archer(tmp_path / "run", str(tmp_path / "cache"), *ARCHER_TINY, *explore)
    trainer.collect(1)
    seen = trainer.buffer.distinct_actions()
    too_long = " ".join(["word"] * (trainer.cfg.model.policy.max_new_tokens + 5))  # cut on re-encoding
    trainer.buffer.distinct_actions = lambda: sorted([*seen, too_long])
    games: list = []
    observe = trainer.algorithm.observe
    trainer.algorithm.observe = lambda trajectories, iteration: (
        games.extend(trajectories) or observe(trajectories, iteration)
    )
    assert trainer.collect(2)["rollout/replaced_move_fraction"] == 1.0
    moves = [move for game in games for move in game.actions]
    assert moves and set(moves) <= set(seen)
    for game in games:
        assert [trainer.policy.action_text(ids) for ids in game.action_token_ids] == game.actions


def test_the_actor_samples_only_the_policys_own_states_when_asked(tmp_path: Path) -> None:
    # Every move replaced (4 games, each with partners): only the games' first states are the policy's own.
    explore = ["algorithm.rollout.explore_fraction=1.0", "algorithm.actor_states=policy"]
    trainer = tiny_archer(tmp_path / "run", str(tmp_path / "cache"), *ARCHER_TINY, *explore)
    trainer.collect(1)
    firsts = {state for state in trainer.buffer.get(list(range(len(trainer.buffer)))).observations if "?" not in state}
    seen: list[str] = []
    trainer.algorithm.actor_step = lambda observations, iteration, step, *cloned: seen.extend(observations) or {}
    metrics = trainer.algorithm.actor_phase(trainer.buffer, 2, trainer.rng)
    assert len(seen) == 8 and set(seen) <= firsts
    assert 0 < metrics["actor/policy_state_fraction"] < 1


def test_archer_phases_touch_only_their_network_and_target_moves_by_tau(tmp_path: Path) -> None:
    trainer = tiny_archer(tmp_path / "run", str(tmp_path / "cache"), *ARCHER_TINY)
    algorithm = trainer.algorithm
    trainer.collect(1)
    rng = trainer.rng

    policy_before, critic_before = snapshot(trainer.policy.model), snapshot(algorithm.critic)
    target_before = snapshot(algorithm.target_critic)
    batch = trainer.buffer.sample(8, rng)
    algorithm.critic_step(batch, trainer.policy.generate(batch.observations, greedy=False).texts, 1, 0)
    assert changed(policy_before, trainer.policy.model) == 0.0
    assert changed(critic_before, algorithm.critic, trained(algorithm.critic)) > 0.9
    # Polyak: target <- (1 - tau) * target + tau * critic, with tau = 0.1.
    for name, param in algorithm.target_critic.named_parameters():
        expected = 0.9 * target_before[name] + 0.1 * dict(algorithm.critic.named_parameters())[name].detach()
        torch.testing.assert_close(param.detach(), expected)
    assert all(p.grad is None for p in algorithm.critic.parameters())

    critic_before = snapshot(algorithm.critic)
    algorithm.actor_phase(trainer.buffer, 2, rng)
    assert changed(critic_before, algorithm.critic) == 0.0
    assert changed(policy_before, trainer.policy.model) > 0.9
    assert all(p.grad is None for p in trainer.policy.model.parameters())


def test_a_critic_on_the_starting_policys_frozen_body_trains_its_heads_only(tmp_path: Path) -> None:
    frozen_body = [
        "model.critic.name_or_path=policy",
        "model.critic.pooling=last",
        "model.critic.freeze_encoder=true",
        "model.critic.history=text",
    ]
    trainer = tiny_archer(tmp_path / "run", str(tmp_path / "cache"), *ARCHER_TINY, *frozen_body)
    algorithm = trainer.algorithm
    # The encoder is the pretrained starting policy's transformer, not a fresh encoder.
    body = trainer.policy.model.transformer.state_dict()
    encoder = algorithm.critic.encoder.encoder.state_dict()
    assert body.keys() == encoder.keys()
    assert all(torch.equal(body[k], encoder[k]) for k in body)
    critic_before = snapshot(algorithm.critic)
    trainer.fit()
    moved = {n for n, p in algorithm.critic.named_parameters() if not torch.equal(critic_before[n], p.detach())}
    assert moved == {n for n in critic_before if not n.startswith("encoder.")}
    # The policy trained on; the critic's copy of its starting body did not.
    assert not torch.equal(trainer.policy.model.transformer.h[0].mlp.c_fc.weight, encoder["h.0.mlp.c_fc.weight"])
    assert algorithm.target_critic.encoder is algorithm.critic.encoder


@pytest.mark.parametrize("body", ["minilm", "policy"])
def test_archer_20qs_critic_reads_turns_on_a_frozen_body_and_trains_its_reader_and_heads(
    tmp_path: Path, body: str
) -> None:
    # MiniLM read turn by turn, frozen (archer_20q and its base); the policy's own body is the other frozen reader.
    # On experiments/archer_20q_base, whose tiny games put answered questions in the critic's batches: the reply
    # projection trains only on lines with a reply, which the tiny garbage-playing policy may not produce otherwise.
    small_reader = ["model.critic.turns.n_embd=16", "model.critic.turns.n_head=2", f"model.critic.name_or_path={body}"]
    trainer = tiny_archer(
        tmp_path / "run", str(tmp_path / "cache"), *ARCHER_TINY, *small_reader, config="experiments/archer_20q_base"
    )
    algorithm = trainer.algorithm
    critic_cfg = trainer.cfg.model.critic
    assert (critic_cfg.name_or_path, critic_cfg.history, critic_cfg.freeze_encoder) == (body, "turns", True)
    critic_before = snapshot(algorithm.critic)
    target_before = snapshot(algorithm.target_critic)
    trainer.fit()
    moved = {n for n, p in algorithm.critic.named_parameters() if not torch.equal(critic_before[n], p.detach())}
    assert moved == {n for n in critic_before if not n.startswith("encoder.line_encoder.")}
    assert any(n.startswith("encoder.transformer.") for n in moved)
    assert changed(target_before, algorithm.target_critic) > 0
    assert algorithm.target_critic.text_encoder is algorithm.critic.text_encoder
    # The critic's encoder folder is the body the lines were read with.
    assert (trainer.run_dir / "critic_encoder" / "config.json").is_file()


def test_actor_micro_batches_grouped_by_length_change_no_result(tmp_path: Path) -> None:
    """One actor step in micro-batches of 1 (no padding) and of 4 grouped by length: same loss, same weights."""
    results = []
    for micro_batch in (1, 4):
        trainer = tiny_archer(
            tmp_path / f"mb{micro_batch}", str(tmp_path / "cache"), *ARCHER_TINY, "algorithm.kl_coeff=0.5"
        )
        algorithm = trainer.algorithm
        algorithm.cfg = replace(algorithm.cfg, actor_micro_batch_size=micro_batch)
        trainer.collect(1)
        states = trainer.buffer.sample(8, np.random.default_rng(0)).observations
        torch.manual_seed(0)  # the same fresh samples in both runs
        metrics = algorithm.actor_step(states, iteration=2, step=0)
        results.append((states, metrics, snapshot(trainer.policy.model)))
    (states_1, metrics_1, policy_1), (states_4, metrics_4, policy_4) = results
    assert states_1 == states_4 and len({len(s) for s in states_1}) > 1  # rows of different lengths
    for key in ("actor/pg_loss", "actor/kl_start", "actor/advantage_mean"):
        assert metrics_1[key] == pytest.approx(metrics_4[key], rel=1e-4, abs=1e-6), key
    # Adam divides by each gradient's running scale, so rounding in a near-zero gradient can move a weight by up to
    # a step (lr 1e-3) once in a while (seen: 2 of 16,384 weights by 4e-5). A row paired with the wrong advantage
    # moves a large share of the weights by a step's order.
    for name in policy_1:
        gap = (policy_1[name] - policy_4[name]).abs()
        assert gap.max() < 5e-4, name
        assert (gap > 2e-5).float().mean() < 1e-3, name


def test_kl_penalty_measures_the_drift_from_a_frozen_copy_of_the_start(tmp_path: Path) -> None:
    trainer = tiny_archer(tmp_path / "run", str(tmp_path / "cache"), *ARCHER_TINY, "algorithm.kl_coeff=0.5")
    algorithm = trainer.algorithm
    reference = algorithm.reference
    assert reference is not None and reference.model is not trainer.policy.model
    start = snapshot(trainer.policy.model)
    assert not any(p.requires_grad for p in reference.model.parameters())
    trainer.collect(1)
    states = trainer.buffer.sample(8, trainer.rng).observations
    first = algorithm.actor_step(states, iteration=2, step=0)
    assert first["actor/kl_start"] == 0.0  # nothing has moved yet: pi = pi_start on every sample
    second = algorithm.actor_step(states, iteration=2, step=1)
    assert second["actor/kl_start"] != 0.0
    assert changed(start, trainer.policy.model) > 0.9
    ref_now = dict(reference.model.named_parameters())
    assert all(torch.equal(start[n], ref_now[n]) for n in start)  # the reference stays at the start
    plain = tiny_archer(tmp_path / "plain", str(tmp_path / "cache"), *ARCHER_TINY, "algorithm.kl_coeff=0.0")
    assert plain.algorithm.reference is None


def test_the_cloning_term_adds_bc_coeff_times_the_datasets_likelihood_gradient(tmp_path: Path) -> None:
    trainer = tiny_archer(tmp_path / "run", str(tmp_path / "cache"), *ARCHER_TINY, "algorithm.bc_coeff=0.5")
    algorithm = trainer.algorithm
    dataset = algorithm.demonstrations
    assert dataset is not None and len(dataset) > 0
    plain = tiny_archer(tmp_path / "plain", str(tmp_path / "cache"), *ARCHER_TINY, config="archer_20q_paper_cpu")
    assert plain.algorithm.demonstrations is None  # bc_coeff=0 loads no dataset
    cloned = dataset.sample(6, np.random.default_rng(0))
    params = [p for p in trainer.policy.model.parameters() if p.requires_grad]

    # The expected gradient, built without the code under test: 0.5 * -mean_b log pi(a_b | s_b), scored one row
    # at a time (no padding) as the sum of the action tokens' log-probabilities.
    trainer.policy.model.zero_grad()
    expected_loss = 0.0
    for observation, action in zip(cloned.observations, cloned.actions, strict=True):
        ids = trainer.policy.encode_actions([action])
        row = -trainer.policy.sequence_logprobs([observation], ids, as_sampled=False)[0] / len(cloned)
        (0.5 * row).backward()
        expected_loss += row.item()
    expected = [p.grad.clone() for p in params]
    trainer.policy.model.zero_grad()

    # Micro-batches of 4 and 2 rows (actor_micro_batch_size): the weighting makes them one batch's mean.
    loss = algorithm._accumulate_cloning_loss(cloned, iteration=2, step=0)
    assert loss == pytest.approx(expected_loss, rel=1e-5)
    for param, grad in zip(params, expected, strict=True):
        torch.testing.assert_close(param.grad, grad, rtol=1e-4, atol=1e-6)
    trainer.policy.model.zero_grad()


def test_the_actor_phase_hands_each_step_a_batch_of_dataset_transitions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trainer = tiny_archer(tmp_path / "run", str(tmp_path / "cache"), *ARCHER_TINY, "algorithm.bc_coeff=0.5")
    algorithm = trainer.algorithm
    trainer.collect(1)
    dataset = algorithm.demonstrations.get(list(range(len(algorithm.demonstrations))))
    pairs = set(zip(dataset.observations, dataset.actions, strict=True))
    seen = []
    monkeypatch.setattr(
        algorithm, "actor_step", lambda observations, iteration, step, cloned: seen.append(cloned) or {}
    )
    algorithm.actor_phase(trainer.buffer, 2, np.random.default_rng(0))
    assert len(seen) == algorithm.cfg.actor_steps_per_iter
    for cloned in seen:
        assert len(cloned) == algorithm.cfg.actor_batch_size
        assert set(zip(cloned.observations, cloned.actions, strict=True)) <= pairs

    second = tiny_archer(tmp_path / "run2", str(tmp_path / "cache"), *ARCHER_TINY, "algorithm.bc_coeff=0.5")
    second.collect(1)
    states = second.buffer.sample(8, second.rng).observations
    start = snapshot(second.policy.model)
    record = second.algorithm.actor_step(states, 2, 0, second.algorithm.demonstrations.sample(8, second.rng))
    assert record["actor/bc_loss"] > 0
    assert changed(start, second.policy.model) > 0.9
    second.algorithm.demonstrations = None
    with pytest.raises(RuntimeError, match="bc_coeff"):
        second.algorithm.actor_phase(second.buffer, 2, second.rng)


def test_a_v_target_pool_samples_once_per_pool_transition_and_batches_draw_from_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    overrides = [*ARCHER_TINY, "algorithm.v_target_pool=5"]
    trainer = tiny_archer(tmp_path / "run", str(tmp_path / "cache"), *overrides)
    algorithm = trainer.algorithm
    trainer.collect(1)
    sampled_at: list[list[str]] = []

    def numbered_samples(states: list[str]) -> list[str]:
        sampled_at.append(list(states))
        return [f"sample {i}" for i in range(len(states))]

    seen: list[tuple[list[str], list[str]]] = []

    def record_step(batch, v_target_actions, *args):
        seen.append((batch.observations, v_target_actions))
        return {"critic/loss": 0.0}

    monkeypatch.setattr(algorithm, "_sample_at", numbered_samples)
    monkeypatch.setattr(algorithm, "critic_step", record_step)
    algorithm.critic_phase(trainer.buffer, 1, np.random.default_rng(0))
    # One generation call for the 5 pool states; 2 steps of 8 rows, each row a pool transition with its sample.
    assert len(sampled_at) == 1 and len(sampled_at[0]) == 5
    assert [len(rows) for rows, _ in seen] == [8, 8]
    for observations, actions in seen:
        for observation, action in zip(observations, actions, strict=True):
            assert observation == sampled_at[0][int(action.split()[1])]


def test_advantage_check_compares_the_critic_with_the_returns_of_unseen_games(tmp_path: Path) -> None:
    from archer.data.trajectory import Trajectory
    from archer.models.critic import CriticOutput

    trainer = tiny_archer(tmp_path / "run", str(tmp_path / "cache"), *ARCHER_TINY)
    algorithm = trainer.algorithm
    # One game of three moves, rewards -1, -1, 0: with gamma 0.95 the returns are -1.95, -1, 0.
    game = Trajectory(["s0", "s1", "s2", "s3"], ["a0", "a1", "a2"], [-1.0, -1.0, 0.0], terminated=True)
    q_table = {"a0": -2.0, "a1": -0.5, "a2": 0.0}
    v_table = {"s0": -1.0, "s1": -1.0, "s2": 0.5}

    class TableCritic:
        def __call__(self, observations: list[str], actions: list[str]) -> CriticOutput:
            q = torch.tensor([q_table[a] for a in actions])
            v = torch.tensor([v_table[o] for o in observations])
            return CriticOutput(q1=q, q2=q + 1.0, v1=v + 1.0, v2=v)  # the minima are the tables

    algorithm.learner.critic = TableCritic()  # the critic the algorithm reads its values from
    metrics = algorithm.advantage_check([game])
    # Critic advantages [-1, 0.5, -0.5] against observed ones [-0.95, 0, -0.5]: deviations [-2/3, 5/6, -1/6] and
    # [-0.4667, 0.4833, -0.0167], products summing to 0.71667, squares to 7/6 and 0.45167: 0.98727.
    assert metrics["critic/advantage_return_corr"] == pytest.approx(0.9872674, abs=1e-6)
    # Values [-1, -1, 0.5] against returns: deviations [-0.5, -0.5, 1] and [-0.9667, -0.0167, 0.9833], products
    # summing to 1.475, squares to 1.5 and 1.90167: 0.87333.
    assert metrics["critic/value_return_corr"] == pytest.approx(0.8733316, abs=1e-6)
    assert algorithm.advantage_check([]) == {}
    # With the switch on (off by default), the games observe() keeps are checked once, by update(); with it off none
    # are kept.
    algorithm.cfg = replace(algorithm.cfg, log_advantage_check=True)
    algorithm.observe([game], iteration=1)
    assert algorithm.check_new_games() == metrics and algorithm.check_new_games() == {}
    algorithm.cfg = replace(algorithm.cfg, log_advantage_check=False)
    algorithm.observe([game], iteration=2)
    assert algorithm.check_new_games() == {}
    # A critic with one value everywhere has no defined correlation with anything: nothing is logged.
    q_table.update(dict.fromkeys(q_table, 0.0))
    v_table.update(dict.fromkeys(v_table, 0.0))
    assert algorithm.advantage_check([game]) == {}


def test_archer_resumes_with_its_buffer_and_repeats_for_a_seed(tmp_path: Path) -> None:
    cache = str(tmp_path / "cache")
    tiny_archer(tmp_path / "a", cache, *ARCHER_TINY).fit()
    tiny_archer(tmp_path / "b", cache, *ARCHER_TINY).fit()
    assert without_times(read_records(tmp_path / "a")) == without_times(read_records(tmp_path / "b"))

    first = tiny_archer(tmp_path / "a", cache, *ARCHER_TINY, "algorithm.num_iterations=3")
    assert first.start_iteration == 2 and len(first.buffer) == read_records(tmp_path / "a")[-1]["buffer/transitions"]
    first.fit()
    # A run of 3 iterations straight through gives the same records as 2 + resume + 1.
    tiny_archer(tmp_path / "c", cache, *ARCHER_TINY, "algorithm.num_iterations=3").fit()
    assert without_times(read_records(tmp_path / "a")) == without_times(read_records(tmp_path / "c"))


def test_wandb_offline_mode_writes_a_local_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_SILENT", "true")
    run = tmp_path / "run"
    tiny_bc(run, str(tmp_path / "cache"), "logging.use_wandb=true", "logging.wandb_mode=offline").fit()
    offline_runs = list((run / "wandb").glob("offline-run-*"))
    assert len(offline_runs) == 1 and any(offline_runs[0].glob("*.wandb"))


def test_a_non_finite_loss_stops_the_run_naming_the_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import archer.algorithms.bc as bc_module

    monkeypatch.setattr(bc_module, "bc_loss", lambda *args, **kwargs: torch.tensor(float("nan"), requires_grad=True))
    trainer = tiny_bc(tmp_path / "run", str(tmp_path / "cache"), "eval.before_training=false")
    with pytest.raises(FloatingPointError, match="bc loss is nan at iteration 1, step 0"):
        trainer.fit()
