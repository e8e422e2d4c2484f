"""The online baselines and ArCHer variants: CHAI, online filtered BC, ArCHer with a token baseline or a PPO low
level, and token-level PPO. Each trains two iterations on tiny models, moving exactly the networks it should."""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from accelerate import Accelerator
from torch import nn

from archer.algorithms.base import by_length
from archer.algorithms.chai import CHAIAlgorithm
from archer.algorithms.filtered_bc import FilteredBCAlgorithm
from archer.algorithms.ppo import token_gae_over_games
from archer.config import CHAIConfig, ConfigError, FilteredBCConfig
from archer.data.replay_buffer import ReplayBuffer
from archer.data.rollout import collect_trajectories
from archer.data.trajectory import Trajectory
from archer.envs.registry import make_env
from archer.envs.twenty_questions.config import TwentyQuestionsEnvConfig
from archer.models.policy import Generation
from archer.trainer import Trainer, build_trainer
from tests.conftest import TINY_RUN_OVERRIDES, compose_run

pytestmark = pytest.mark.integration

PRETRAIN_TINY = [
    "pretrain.num_iterations=1",
    "pretrain.steps_per_iter=2",
    "pretrain.batch_size=8",
    "pretrain.actor_micro_batch_size=4",
    "eval.every_iters=2",
    "algorithm.num_iterations=2",
    "algorithm.rollout.episodes_per_iter=4",
]
CRITIC_TINY = [
    "algorithm.critic_steps_per_iter=2",
    "algorithm.critic_batch_size=8",
    "algorithm.critic.micro_batch_size=4",
    "algorithm.generation_batch_size=8",
]
# Two actor steps after one warm-up iteration: a value head initialised to zero passes no gradient to its trunk in
# its first step, so the second step is the one that moves every value-model weight.
ACTOR_TINY = [
    "algorithm.warmup_iters=1",
    "algorithm.actor_steps_per_iter=2",
    "algorithm.actor_batch_size=8",
    "algorithm.actor_micro_batch_size=4",
    "algorithm.actor_lr=1e-3",
]
TINY = {
    "chai_20q": [*CRITIC_TINY, "algorithm.num_candidates=2"],
    "online_filteredbc_20q": [
        "algorithm.steps_per_iter=2",
        "algorithm.batch_size=8",
        "algorithm.actor_micro_batch_size=4",
    ],
    "archer_baseline_20q": [*CRITIC_TINY, *ACTOR_TINY, "algorithm.value_lr=1e-3"],
    "archer_ppo_20q": [*CRITIC_TINY, *ACTOR_TINY, "algorithm.ppo_epochs=2"],
    "ppo_20q": [
        "algorithm.ppo_epochs=2",
        "algorithm.num_minibatches=2",
        "algorithm.actor_micro_batch_size=4",
        "algorithm.generation_batch_size=8",
        "algorithm.actor_lr=1e-3",
        "algorithm.value_lr=1e-3",
    ],
}


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One cache for the module: the tiny models, the BC dataset and the pretrained policy are built once."""
    return str(tmp_path_factory.mktemp("online_cache"))


def tiny_run(name: str, run_dir: Path, cache: str, *extra: str) -> Trainer:
    overrides = [*TINY_RUN_OVERRIDES, f"cache_dir={cache}", *PRETRAIN_TINY, *TINY[name], *extra]
    return build_trainer(compose_run(name, overrides), run_dir)


def snapshot(module: nn.Module) -> dict[str, torch.Tensor]:
    return {name: p.detach().clone() for name, p in module.named_parameters()}


def changed(before: dict[str, torch.Tensor], module: nn.Module) -> float:
    """Fraction of parameter tensors that moved."""
    after = dict(module.named_parameters())
    return sum(not torch.equal(before[n], after[n].detach()) for n in before) / len(before)


def read_records(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def assert_state_equal(actual: object, expected: object) -> None:
    """Nested state dicts are equal, tensors exactly."""
    if isinstance(expected, torch.Tensor):
        assert torch.equal(actual, expected)
    elif isinstance(expected, dict):
        assert actual.keys() == expected.keys()
        for key in expected:
            assert_state_equal(actual[key], expected[key])
    elif isinstance(expected, list | tuple):
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected, strict=True):
            assert_state_equal(a, e)
    else:
        assert actual == expected


def assert_resume_restores_state(name: str, run_dir: Path, cache: str, trainer: Trainer) -> None:
    """A trainer built on the finished run's folder holds exactly the algorithm state the run ended with."""
    resumed = tiny_run(name, run_dir, cache)
    assert resumed.start_iteration == 2
    assert_state_equal(resumed.algorithm.state_dict(), trainer.algorithm.state_dict())


# ---- CHAI ----------------------------------------------------------------------------------------------------------


def test_chai_trains_the_critic_and_keeps_the_policy_frozen(tmp_path: Path, cache: str) -> None:
    trainer = tiny_run("chai_20q", tmp_path / "run", cache)
    algorithm = trainer.algorithm
    assert isinstance(algorithm, CHAIAlgorithm)
    policy, critic, target = (snapshot(m) for m in (trainer.policy.model, algorithm.critic, algorithm.target_critic))
    trainer.fit()
    assert changed(policy, trainer.policy.model) == 0.0
    assert changed(critic, algorithm.critic) > 0.9
    assert changed(target, algorithm.target_critic) > 0.9
    records = read_records(tmp_path / "run")
    assert "critic/chosen_min_q_mean" in records[2] and "actor/pg_loss" not in records[2]
    # The environment received the reranked actions without their terminator (the reference kept its "\n").
    actions = trainer.buffer.sample(32, np.random.default_rng(0)).actions
    assert all("\n" not in action for action in actions)
    assert_resume_restores_state("chai_20q", tmp_path / "run", cache, trainer)


def test_chai_update_policy_also_runs_archers_actor_phase(tmp_path: Path, cache: str) -> None:
    trainer = tiny_run("chai_20q", tmp_path / "run", cache, "algorithm.update_policy=true", *ACTOR_TINY)
    trainer.collect(1)
    policy = snapshot(trainer.policy.model)
    metrics = trainer.algorithm.update(trainer.buffer, 1, trainer.rng)  # warm-up: critic only
    assert "actor/pg_loss" not in metrics and changed(policy, trainer.policy.model) == 0.0
    metrics = trainer.algorithm.update(trainer.buffer, 2, trainer.rng)
    assert "actor/pg_loss" in metrics and changed(policy, trainer.policy.model) > 0.9


class _CandidatePolicy:
    """Samples ``{obs}-{j}`` for the j-th of k consecutive copies of an observation; greedy: ``{obs}-greedy``."""

    def __init__(self, k: int) -> None:
        self.k = k
        self.model = nn.Linear(1, 1)
        # Without prefix sharing, generate_at_states passes states of equal length to generate in their order.
        self.cfg = SimpleNamespace(share_prefixes=False, engine="hf")
        self.calls: list[tuple[int, bool]] = []

    def generate(self, observations: list[str], greedy: bool, batch_size: int | None = None) -> Generation:
        self.calls.append((len(observations), greedy))
        if greedy:
            texts = [f"{obs}-greedy" for obs in observations]
        else:
            texts = [f"{obs}-{i % self.k}" for i, obs in enumerate(observations)]
        return Generation(texts=texts, token_ids=[[i] for i in range(len(texts))])


class _TableCritic(nn.Module):
    """Q heads read from per-action tables: a text is embedded as its index in ``texts`` (-1 if absent)."""

    def __init__(self, q: dict[str, tuple[float, float]]) -> None:
        super().__init__()
        self.texts = list(q)
        self.register_buffer("q1_table", torch.tensor([q1 for q1, _ in q.values()]))
        self.register_buffer("q2_table", torch.tensor([q2 for _, q2 in q.values()]))
        self.unused = nn.Parameter(torch.zeros(()))  # the algorithm's critic optimiser needs one parameter

    def embed(self, texts: list[str]) -> torch.Tensor:
        return torch.tensor([[float(self.texts.index(t)) if t in self.texts else -1.0] for t in texts])

    def q_from_embeddings(self, obs_emb: torch.Tensor, act_emb: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        index = act_emb[:, 0].long()
        return self.q1_table[index], self.q2_table[index]

    def q_values(
        self, observations: list[str], actions: list[str], obs_emb: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        return self.q_from_embeddings(obs_emb, self.embed(actions))


# (Qbar1, Qbar2) per candidate. For "x", Qbar1 alone would pick x-0 and Qbar2 alone x-1; min(Qbar1, Qbar2) picks x-2
# (min values 0, 1, 3). For "y" the mins are 2, -1, 0: y-0, although y-1 has the largest Qbar1 and y-2 Qbar2.
Q_TABLE = {
    "x-0": (5.0, 0.0),
    "x-1": (1.0, 9.0),
    "x-2": (3.0, 4.0),
    "y-0": (2.0, 2.0),
    "y-1": (9.0, -1.0),
    "y-2": (0.0, 8.0),
}
BEST = {"x": "x-2", "y": "y-0"}


def stub_chai(rerank_at_eval: bool = False) -> tuple[CHAIAlgorithm, _CandidatePolicy]:
    cfg = CHAIConfig(
        num_candidates=3,
        critic_steps_per_iter=2,
        critic_batch_size=5,
        generation_batch_size=4,
        rerank_at_eval=rerank_at_eval,
    )
    policy = _CandidatePolicy(k=3)
    algorithm = CHAIAlgorithm(cfg, policy, Accelerator(cpu=True), critic=_TableCritic(Q_TABLE), progress=False)
    # The online critic prefers other candidates: acting must follow the target critic.
    algorithm.critic.q1_table.neg_()
    algorithm.critic.q2_table.neg_()
    return algorithm, policy


def test_chai_act_picks_the_highest_target_min_q_and_evaluates_by_one_greedy_decode() -> None:
    algorithm, policy = stub_chai()
    # generation_batch_size 4 with k = 3 scores one state per target-critic pass: chunking is exercised too.
    assert algorithm.act(["x", "y", "x"], greedy=False) == ["x-2", "y-0", "x-2"]
    assert policy.calls == [(9, False)]
    _, scores = algorithm.rerank(["x"], algorithm.candidates(["x"]))
    torch.testing.assert_close(scores, torch.tensor([[0.0, 1.0, 3.0]]))
    policy.calls.clear()
    # Greedy evaluation, as for every method: one greedy decode per state, no samples, no critic.
    assert algorithm.act(["x", "y"], greedy=True) == ["x-greedy", "y-greedy"]
    assert policy.calls == [(2, True)]


def test_chai_rerank_at_eval_reranks_the_greedy_decode_and_k_minus_1_samples() -> None:
    algorithm, policy = stub_chai(rerank_at_eval=True)
    assert algorithm.act(["x", "y", "x"], greedy=False) == ["x-2", "y-0", "x-2"]  # rollouts are unchanged
    policy.calls.clear()
    # Greedy evaluation: per state the greedy decode and k - 1 = 2 samples. The stub numbers samples by row (i % 3),
    # so x gets [x-greedy, x-0, x-1] and y gets [y-greedy, y-2, y-0]. A text missing from the table embeds as -1, the
    # last row (y-2, min 0). Target mins: x -> (0, 0, 1) picks x-1; y -> (0, 0, 2) picks y-0.
    assert algorithm.act(["x", "y"], greedy=True) == ["x-1", "y-0"]
    assert policy.calls == [(4, False), (2, True)]


def test_chai_v_target_uses_the_reranked_action() -> None:
    algorithm, _ = stub_chai()
    buffer = ReplayBuffer(capacity=10, gamma_mc=0.95)
    buffer.add_trajectories(
        [Trajectory(["x", "x?"], ["a"], [-1.0], terminated=True), Trajectory(["y", "y?"], ["b"], [-1.0], True)]
    )
    seen: list[tuple[list[str], list[str]]] = []

    def record(batch, sampled_actions, iteration, step):
        seen.append((list(batch.observations), list(sampled_actions)))
        return {"critic/loss": 0.0}

    algorithm.critic_step = record
    algorithm.critic_phase(buffer, 1, np.random.default_rng(0))
    assert len(seen) == 2
    for observations, sampled in seen:
        assert sampled == [BEST[obs] for obs in observations]


# ---- online filtered BC --------------------------------------------------------------------------------------------


def test_filtered_bc_trains_the_policy_without_a_critic(tmp_path: Path, cache: str) -> None:
    trainer = tiny_run("online_filteredbc_20q", tmp_path / "run", cache)
    algorithm = trainer.algorithm
    assert isinstance(algorithm, FilteredBCAlgorithm) and not trainer.cfg.algorithm.uses_critic
    assert not hasattr(algorithm, "critic")
    policy = snapshot(trainer.policy.model)
    trainer.fit()
    assert changed(policy, trainer.policy.model) > 0.9
    records = read_records(tmp_path / "run")
    # 4 games per iteration; top 10% of 8 is max(1, int(0.8)) = 1 game.
    assert records[2]["actor/window_episodes"] == 8 and records[2]["actor/filtered_episodes"] == 1
    assert "actor/bc_loss" in records[1]


def _game(episode_return: float, tag: str) -> Trajectory:
    return Trajectory([f"{tag}", f"{tag}!"], [tag], [episode_return], terminated=True)


def stub_filtered_bc(**overrides) -> FilteredBCAlgorithm:
    cfg = FilteredBCConfig(**overrides)
    return FilteredBCAlgorithm(cfg, SimpleNamespace(model=nn.Linear(1, 1)), Accelerator(cpu=True), progress=False)


def test_filtered_bc_window_keeps_the_last_iterations() -> None:
    algorithm = stub_filtered_bc(window_iters=2)
    for iteration in (1, 2, 3):
        algorithm.observe([_game(-iteration, f"i{iteration}a"), _game(-10.0, f"i{iteration}b")], iteration)
    assert [played for played, _ in algorithm.window] == [2, 2, 3, 3]
    assert algorithm.filtered()[0].actions == ["i2a"]  # return -2, the best of iterations 2 and 3
    everything = stub_filtered_bc(window_iters=None)
    for iteration in (1, 2, 3):
        everything.observe([_game(-iteration, f"i{iteration}")], iteration)
    assert len(everything.window) == 3 and everything.filtered()[0].actions == ["i1"]


def test_filtered_bc_ties_at_the_cutoff_do_not_admit_everything() -> None:
    algorithm = stub_filtered_bc(filter_fraction=0.1, window_iters=None)
    # 20 games, 19 at the minimum return -20: the reference's cutoff (0.9 quantile = -20, kept if >= cutoff) kept
    # all 20. A count keeps int(0.1 * 20) = 2: the -5 game and the first of the tied ones.
    algorithm.observe([_game(-20.0, f"g{i}") for i in range(19)] + [_game(-5.0, "best")], 1)
    assert [game.actions[0] for game in algorithm.filtered()] == ["best", "g0"]
    algorithm.window.clear()
    algorithm.observe([_game(-20.0, f"g{i}") for i in range(10)], 2)
    assert len(algorithm.filtered()) == 1  # all tied: max(1, int(0.1 * 10)) = 1, not 10


def test_filtered_bc_resume_restores_its_window(tmp_path: Path, cache: str) -> None:
    run = tmp_path / "run"
    first = tiny_run("online_filteredbc_20q", run, cache, "algorithm.window_iters=5")
    first.fit()
    window = [(played, asdict(game)) for played, game in first.algorithm.window]
    assert [played for played, _ in window] == [1] * 4 + [2] * 4
    resumed = tiny_run("online_filteredbc_20q", run, cache, "algorithm.window_iters=5", "algorithm.num_iterations=3")
    assert resumed.start_iteration == 2
    assert [(played, asdict(game)) for played, game in resumed.algorithm.window] == window
    assert_state_equal(resumed.algorithm.state_dict(), first.algorithm.state_dict())
    resumed.fit()
    assert [played for played, _ in resumed.algorithm.window] == [1] * 4 + [2] * 4 + [3] * 4


# ---- ArCHer with a token baseline, ArCHer with a PPO low level ---------------------------------------------------


def test_archer_baseline_trains_policy_critic_and_a_separate_value_model(tmp_path: Path, cache: str) -> None:
    trainer = tiny_run("archer_baseline_20q", tmp_path / "run", cache)
    algorithm = trainer.algorithm
    value = algorithm.value_model
    assert {p.data_ptr() for p in value.parameters()}.isdisjoint(
        p.data_ptr() for p in trainer.policy.model.parameters()
    )
    networks = (trainer.policy.model, algorithm.critic, algorithm.target_critic, value)
    before = [snapshot(m) for m in networks]
    trainer.fit()
    for snap, module in zip(before, networks, strict=True):
        assert changed(snap, module) > 0.9
    records = read_records(tmp_path / "run")
    assert "value/loss" in records[2] and "actor/residual_advantage_mean" in records[2]
    assert "value/loss" not in records[1]  # the warm-up iteration has no actor phase
    assert {"value_model", "value_optimizer"} <= set(algorithm.state_dict())
    assert_resume_restores_state("archer_baseline_20q", tmp_path / "run", cache, trainer)


def test_archer_ppo_trains_policy_and_critic_with_the_clipped_objective(tmp_path: Path, cache: str) -> None:
    trainer = tiny_run("archer_ppo_20q", tmp_path / "run", cache)
    algorithm = trainer.algorithm
    networks = (trainer.policy.model, algorithm.critic, algorithm.target_critic)
    before = [snapshot(m) for m in networks]
    trainer.fit()
    for snap, module in zip(before, networks, strict=True):
        assert changed(snap, module) > 0.9
    record = read_records(tmp_path / "run")[2]
    assert {"actor/ppo_loss", "actor/clip_fraction", "actor/approx_kl_old"} <= set(record)
    assert 0.0 <= record["actor/clip_fraction"] <= 1.0


# ---- token-level PPO -----------------------------------------------------------------------------------------------


def test_ppo_trains_policy_and_value_model_on_its_own_games(tmp_path: Path, cache: str) -> None:
    trainer = tiny_run("ppo_20q", tmp_path / "run", cache)
    algorithm = trainer.algorithm
    assert not trainer.cfg.algorithm.uses_critic and not hasattr(algorithm, "critic")
    policy, value, reference = (
        snapshot(m) for m in (trainer.policy.model, algorithm.value_model, algorithm.reference.model)
    )
    trainer.fit()
    assert changed(policy, trainer.policy.model) > 0.9
    assert changed(value, algorithm.value_model) > 0.9
    assert changed(reference, algorithm.reference.model) == 0.0
    records = read_records(tmp_path / "run")
    # In iteration 1 the policy that played is the reference itself: the sampled KL is exactly 0.
    assert records[1]["actor/kl_ref"] == 0.0 and records[2]["actor/kl_ref"] != 0.0
    assert {"actor/ppo_loss", "value/loss", "value/explained_variance"} <= set(records[2])
    assert algorithm._new_games == []  # on-policy: nothing is kept after the update
    # The games carry the exact sampled ids PPO scores, one non-empty list per action.
    trainer.collect(3)
    for game in algorithm._new_games:
        assert game.action_token_ids is not None and len(game.action_token_ids) == game.length
        assert all(len(ids) > 0 for ids in game.action_token_ids)
    assert set(algorithm.state_dict()) == {
        "policy",
        "reference_policy",
        "value_model",
        "actor_optimizer",
        "value_optimizer",
    }
    assert_resume_restores_state("ppo_20q", tmp_path / "run", cache, trainer)


def test_ppo_scores_the_same_packed_grouped_or_alone_and_micro_batches_change_no_update(
    tmp_path: Path, cache: str
) -> None:
    """Scoring each utterance alone, in length-grouped micro-batches, or with each game's turns packed into one row
    gives the same numbers; with either minibatch layout, the micro-batch size changes no update."""
    trainer = tiny_run("ppo_20q", tmp_path / "run", cache)
    # Readable questions encoded as the policy encodes them, ending with the stop token as a trained policy's samples
    # do (the tiny policy's own samples are noise the game rewrites, which can never be packed).
    questions = iter(["Is it alive?", "Does it make noise?", "Is it a dog?", "Can you ride it?", "Is it red?"] * 20)

    def ask(observations: list[str]) -> Generation:
        texts = [next(questions) for _ in observations]
        return Generation(texts=texts, token_ids=trainer.policy.encode_actions(texts))

    env = make_env(TwentyQuestionsEnvConfig(batch_size=4, max_turns=4), seed=0)
    games = collect_trajectories(env, ask, num_episodes=4)
    # A sample cut at max_new_tokens has no terminator: that turn is scored alone.
    games[0].action_token_ids[0] = games[0].action_token_ids[0][:-1]
    observations = [o for g in games for o in g.observations[: g.length]]
    action_ids = [i for g in games for i in g.action_token_ids]
    actions = [a for g in games for a in g.actions]
    packing = trainer.policy.pack_turns(observations, actions, action_ids)
    assert len(packing.rows) < len(packing.members) and packing.alone  # turns share rows, and some are alone
    rollouts, weights = {}, {}
    for pack in (False, True):
        for micro_batch in (1, 4):
            algorithm = tiny_run("ppo_20q", tmp_path / f"{pack}{micro_batch}", cache).algorithm
            algorithm.cfg = replace(algorithm.cfg, actor_micro_batch_size=micro_batch, pack_games=pack)
            rollout = algorithm.score(games)
            # Rows come back at their utterances' places, in play order, whatever order they were scored in.
            assert rollout.observations == observations
            assert [len(v) for v in rollout.values] == [len(i) for i in action_ids]
            algorithm.observe(games, 1)
            algorithm.update(trainer.buffer, 1, np.random.default_rng(0))
            rollouts[pack, micro_batch] = rollout
            weights[pack, micro_batch] = (snapshot(algorithm.policy.model), snapshot(algorithm.value_model))
    alone = rollouts[False, 1]
    for other in ((False, 4), (True, 1), (True, 4)):
        for key in ("old_logprobs", "ref_logprobs", "values", "rewards"):
            for a, b in zip(getattr(alone, key), getattr(rollouts[other], key), strict=True):
                torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    # Adam divides each gradient by its running scale, so rounding in near-zero gradients shows up to about 1e-6 in
    # the weights after steps of lr 1e-3; a misplaced row or a wrong token weight moves them by a step's order.
    for pack in (False, True):
        for one, four in zip(weights[pack, 1], weights[pack, 4], strict=True):
            for name in one:
                torch.testing.assert_close(one[name], four[name], rtol=0, atol=2e-5)
    start = snapshot(trainer.policy.model)
    assert any(not torch.equal(start[n], p) for n, p in weights[True, 4][0].items())


def test_by_length_puts_the_longest_rows_first_and_keeps_ties_in_order() -> None:
    assert by_length([0, 1, 2, 3, 4], [3, 9, 3, 1, 9]) == [1, 4, 0, 2, 3]
    assert by_length([3, 0], [3, 9, 3, 1, 9]) == [0, 3]


def test_token_gae_over_games_respects_utterance_and_game_boundaries() -> None:
    t = torch.tensor
    # Game A: utterances 0 (two tokens) and 1 (one token); game B: utterance 2 (one token).
    rewards = [t([0.0, -1.0]), t([-1.0]), t([2.0])]
    values = [t([0.5, 0.5]), t([0.2]), t([1.0])]
    advantages, returns = token_gae_over_games(rewards, values, [range(0, 2), range(2, 3)], gamma=0.9, lam=1.0)
    # Game A as one sequence: r = [0, -1, -1], discounts [1 (inside), 0.9 (to the next utterance), 0 (end)].
    # lam = 1 gives discounted returns: R_2 = -1;  R_1 = -1 + 0.9 * -1 = -1.9;  R_0 = 0 + 1 * -1.9 = -1.9.
    # A = R - V = [-2.4, -2.4, -1.2]. Game B: R = 2, A = 2 - 1 = 1 (no bootstrap into game A's padding).
    expected_returns = [[-1.9, -1.9], [-1.0], [2.0]]
    expected_advantages = [[-2.4, -2.4], [-1.2], [1.0]]
    for got, want in zip(returns, expected_returns, strict=True):
        torch.testing.assert_close(got, t(want))
    for got, want in zip(advantages, expected_advantages, strict=True):
        torch.testing.assert_close(got, t(want))


# ---- rollouts with token ids; config validation --------------------------------------------------------------------


def test_rollout_records_token_ids_only_when_the_acting_function_gives_them() -> None:
    env = make_env(TwentyQuestionsEnvConfig(batch_size=2, max_turns=2), seed=0)

    def with_ids(observations: list[str]) -> Generation:
        return Generation(texts=["Is it alive?"] * len(observations), token_ids=[[7, 8]] * len(observations))

    games = collect_trajectories(env, with_ids, num_episodes=2)
    assert all(game.action_token_ids == [[7, 8]] * game.length for game in games)
    games = collect_trajectories(env, lambda observations: ["Is it alive?"] * len(observations), num_episodes=2)
    assert all(game.action_token_ids is None for game in games)
    turns = iter([True, False])

    def mixed(observations: list[str]) -> list[str] | Generation:
        return with_ids(observations) if next(turns) else ["Is it alive?"] * len(observations)

    with pytest.raises(ValueError, match="every turn"):
        collect_trajectories(env, mixed, num_episodes=2)
    with pytest.raises(ValueError, match="token-id lists"):
        Trajectory(["a", "b"], ["x"], [0.0], action_token_ids=[[1], [2]])


@pytest.mark.parametrize(
    ("name", "override", "key"),
    [
        ("chai_20q", "algorithm.num_candidates=1", "algorithm.num_candidates"),
        ("online_filteredbc_20q", "algorithm.window_iters=0", "algorithm.window_iters"),
        ("online_filteredbc_20q", "algorithm.filter_fraction=0", "algorithm.filter_fraction"),
        ("archer_baseline_20q", "algorithm.value_lr=0", "algorithm.value_lr"),
        ("archer_ppo_20q", "algorithm.ppo_epochs=0", "algorithm.ppo_epochs"),
        ("ppo_20q", "algorithm.gae_lambda=1.5", "algorithm.gae_lambda"),
        ("ppo_20q", "algorithm.value_clip_range=-1", "algorithm.value_clip_range"),
    ],
)
def test_impossible_values_name_the_key(name: str, override: str, key: str) -> None:
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        compose_run(name, [override])


def test_frozen_chai_accepts_a_warmup_longer_than_the_run() -> None:
    # Without an actor phase the warm-up is irrelevant; with update_policy it must end before the run does.
    compose_run("chai_20q", ["algorithm.num_iterations=3", "algorithm.warmup_iters=10"])
    with pytest.raises(ConfigError, match=r"algorithm\.warmup_iters"):
        compose_run(
            "chai_20q", ["algorithm.num_iterations=3", "algorithm.warmup_iters=10", "algorithm.update_policy=true"]
        )
