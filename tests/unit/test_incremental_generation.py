"""Incremental generation: reusing each game's KV cache across turns changes no action, and falls back to a full
re-encode exactly when the cached ids cannot be extended."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
import torch

from archer.algorithms.archer import ArcherAlgorithm
from archer.algorithms.chai import CHAIAlgorithm
from archer.algorithms.ppo import PPOAlgorithm
from archer.config import ConfigError, PolicyConfig
from archer.data.rollout import collect_trajectories
from archer.envs.base import BatchedTextEnv, StepResult
from archer.models.incremental import IncrementalActor, IncrementalSession, supports_kv_reuse
from archer.models.loading import load_policy_model
from archer.models.policy import LanguagePolicy

START = "Questions:\n"
OPENINGS = [START, START + "Is it alive? No.\n", START + "Is it made of metal? Yes.\nIs it a fruit? No.\n"]


class ScriptedEnv(BatchedTextEnv):
    """Game ``g`` starts from an opening of its own and lasts ``lengths[g]`` turns; each turn appends the action
    and an answer (Yes or No, by turn) to the history.

    With ``restart`` set to ``(game, turn)``, that game's observation after that turn is a new text that does not
    extend the old one.
    """

    def __init__(self, lengths: list[int], restart: tuple[int, int] | None = None) -> None:
        super().__init__(batch_size=len(lengths), seed=0)
        self.lengths = lengths
        self.restart = restart
        self._history: list[str] = []
        self._turn: list[int] = []
        self._game: list[int] = []

    @property
    def num_games(self) -> int:
        return len(self.lengths)

    def corpus(self) -> list[str]:
        return OPENINGS

    def _prepare_batch(self, num_games: int) -> None:
        self._history, self._turn, self._game = [""] * num_games, [0] * num_games, [0] * num_games

    def _reset_game(self, slot: int, game_id: int | None) -> str:
        self._game[slot] = slot if game_id is None else game_id
        self._history[slot] = OPENINGS[self._game[slot] % len(OPENINGS)]
        return self._history[slot]

    def _step_games(self, slots: list[int], actions: list[str]) -> list[StepResult]:
        results = []
        for slot, action in zip(slots, actions, strict=True):
            self._turn[slot] += 1
            game = self._game[slot]
            if self.restart == (game, self._turn[slot]):
                self._history[slot] = "Is it new? No.\n"
            else:
                self._history[slot] += f"{action} {'Yes' if (game + self._turn[slot]) % 2 else 'No'}.\n"
            done = self._turn[slot] >= self.lengths[game]
            results.append(StepResult(self._history[slot], 0.0, terminated=done, truncated=False, info={}))
        return results


@pytest.fixture
def make_policy(
    tiny_policy_config: PolicyConfig,
    tiny_corpus: list[str],
    model_cache_dir: str,
    tiny_policy_weights: dict[str, dict[str, torch.Tensor]],
) -> Callable[..., LanguagePolicy]:
    def make(kind: str = "trained", **changes: Any) -> LanguagePolicy:
        cfg = dataclasses.replace(tiny_policy_config, **changes)
        model, tokenizer = load_policy_model(cfg, model_cache_dir, lambda: tiny_corpus)
        model.load_state_dict(tiny_policy_weights[kind])
        return LanguagePolicy(model, tokenizer, cfg)

    return make


def _full(policy: LanguagePolicy) -> Callable[[list[str]], Any]:
    return lambda observations: policy.generate(observations, greedy=True)


def _uncached(policy: LanguagePolicy, rows: list[list[int]]) -> list[list[int]]:
    """Greedy actions from exactly these prompt ids, left-padded together and encoded from scratch."""
    input_ids, attention_mask = policy.left_pad(rows)
    return policy.decode_batch(input_ids, attention_mask, greedy=True)[0]


def _body(policy: LanguagePolicy, token_ids: list[int]) -> list[int]:
    """An action's ids without its terminator: what the environment's text follows in a game's ids."""
    return token_ids[:-1] if token_ids[-1] in policy.terminator_ids else token_ids


class Recording:
    """An ``IncrementalActor`` that keeps its sessions, to read their token counts."""

    def __init__(self, actor: IncrementalActor) -> None:
        self.actor = actor
        self.sessions: list[IncrementalSession] = []

    def start_batch(self) -> IncrementalSession:
        self.sessions.append(self.actor.start_batch())
        return self.sessions[-1]


def test_the_embedded_gpt2_policy_supports_cache_reuse(make_policy: Callable[..., LanguagePolicy]) -> None:
    assert supports_kv_reuse(make_policy())


@pytest.mark.parametrize(("kind", "lengths"), [("trained", [3, 1, 5, 2, 4, 2]), ("noisy", [2, 1, 3, 2, 1, 3])])
def test_greedy_incremental_play_equals_full_reencoding(
    make_policy: Callable[..., LanguagePolicy], kind: str, lengths: list[int]
) -> None:
    # Games ending after different turns, so finished games leave the cache at different turns, from openings of
    # different lengths. The noisy model's 12-token actions hit max_new_tokens (their last token is not cached
    # by generate) and their bytes re-tokenise differently (the cache is reused up to the first differing id).
    # Prompts are never truncated here: 116 prompt tokens plus 12 new ones fill the model's 128 positions.
    policy = make_policy(kind, max_prompt_tokens=116)
    env = ScriptedEnv(lengths)
    full = collect_trajectories(env, _full(policy), num_episodes=6)
    actor = Recording(IncrementalActor(policy, greedy=True))
    incremental = collect_trajectories(env, actor, num_episodes=6)
    assert [t.length for t in incremental] == lengths
    for a, b in zip(full, incremental, strict=True):
        assert a.actions == b.actions
        assert a.action_token_ids == b.action_token_ids
        assert a.observations == b.observations
    assert len({tuple(map(tuple, t.action_token_ids)) for t in full}) > 2  # the games did differ
    (session,) = actor.sessions
    assert session.stats.full_encodes == 6  # the first turns only
    # Most prompt tokens came from the cache (the noisy model's bytes re-tokenise differently after its actions).
    assert session.stats.reused_tokens > (session.stats.fed_tokens if kind == "trained" else 0)


def test_truncated_histories_are_re_encoded(make_policy: Callable[..., LanguagePolicy]) -> None:
    # 24 prompt tokens: from the second turn on the histories lose their oldest turns, which moves every later
    # token; the cache is reused for the ids the cut prompt still shares with the cached ones (its title) alone.
    policy = make_policy(max_prompt_tokens=24)
    env = ScriptedEnv([3, 1, 4])
    full = collect_trajectories(env, _full(policy), num_episodes=3)
    assert any(len(policy.tokenizer(o)["input_ids"]) > 24 for game in full for o in game.observations)
    actor = Recording(IncrementalActor(policy, greedy=True))
    incremental = collect_trajectories(env, actor, num_episodes=3)
    assert [g.action_token_ids for g in full] == [g.action_token_ids for g in incremental]
    assert actor.sessions[0].stats.full_encodes == 3


def test_a_restarted_history_is_re_encoded_and_matches_full_play(make_policy: Callable[..., LanguagePolicy]) -> None:
    policy = make_policy()
    env = ScriptedEnv([3, 4, 2], restart=(1, 2))
    full = collect_trajectories(env, _full(policy), num_episodes=3)
    actor = Recording(IncrementalActor(policy, greedy=True))
    incremental = collect_trajectories(env, actor, num_episodes=3)
    assert [g.action_token_ids for g in full] == [g.action_token_ids for g in incremental]
    assert actor.sessions[0].stats.full_encodes == 3 + 1


def test_the_last_turns_cache_is_dropped_before_decoding(make_policy: Callable[..., LanguagePolicy]) -> None:
    # Held through the decoding, the last turn's cache would be a third copy at the peak (rows', grown, compacted).
    policy = make_policy()
    actor = Recording(IncrementalActor(policy, greedy=True))
    held: list[bool] = []
    decode = policy.decode_batch

    def watched(*args: Any, **kwargs: Any) -> Any:
        held.append(actor.sessions[-1]._cache is not None)
        return decode(*args, **kwargs)

    policy.decode_batch = watched  # type: ignore[method-assign]
    full = collect_trajectories(ScriptedEnv([3, 1, 4]), _full(make_policy()), num_episodes=3)
    games = collect_trajectories(ScriptedEnv([3, 1, 4]), actor, num_episodes=3)
    assert held == [False] * 4  # one decoding per turn, 4 turns; none with the previous cache alive
    assert actor.sessions[0].stats.reused_tokens > 0  # the cache was reused all the same
    assert [g.action_token_ids for g in full] == [g.action_token_ids for g in games]


def test_sampled_rollouts_record_the_sampled_ids(make_policy: Callable[..., LanguagePolicy]) -> None:
    policy = make_policy()
    torch.manual_seed(0)
    games = collect_trajectories(ScriptedEnv([2, 3, 1]), IncrementalActor(policy, greedy=False), num_episodes=3)
    for game in games:
        assert game.action_token_ids is not None
        assert [policy.action_text(ids) for ids in game.action_token_ids] == game.actions


@pytest.mark.parametrize("kind", ["trained", "noisy"])
def test_token_in_token_out_conditions_on_the_appended_ids(
    make_policy: Callable[..., LanguagePolicy], kind: str
) -> None:
    policy = make_policy(kind, max_prompt_tokens=100)
    session = IncrementalActor(policy, greedy=True, append_token_ids=True).start_batch()
    observations = list(OPENINGS)
    ids = policy.encode_prompts(observations)
    answer = policy.tokenizer(" Yes.\n", add_special_tokens=False)["input_ids"]
    slots = [0, 1, 2]
    while slots:
        generation = session(observations, slots)
        assert generation.token_ids == _uncached(policy, ids)
        # The next prompt: the game's ids, its action's body as sampled, then the tokens of the new text alone.
        keep = range(1, len(slots))  # the first live game ends each turn
        ids = [ids[k] + _body(policy, generation.token_ids[k]) + answer for k in keep]
        observations = [observations[k] + generation.texts[k] + " Yes.\n" for k in keep]
        slots = slots[1:]
    assert session.stats.full_encodes == 3


def test_token_in_falls_back_to_a_full_encode_when_the_prefix_check_fails(
    make_policy: Callable[..., LanguagePolicy],
) -> None:
    policy = make_policy(max_prompt_tokens=40)
    session = IncrementalActor(policy, greedy=True, append_token_ids=True).start_batch()
    first = session([START, START, START], [0, 1, 2])
    assert session.stats.full_encodes == 3
    extended = START + first.texts[0] + " Yes.\n"
    unrelated = "Is it new? No.\n"  # does not start with game 1's history
    long = START + first.texts[2] + " Yes.\n" + "Is it a dog? No.\n" * 4  # more than max_prompt_tokens
    second = session([extended, unrelated, long], [0, 1, 2])
    # The unrelated game is encoded afresh; the long one, cut to its newest turns, reuses the title it shares.
    assert session.stats.full_encodes == 3 + 1
    appended = policy.encode_prompts([START])[0] + _body(policy, first.token_ids[0])
    appended += policy.tokenizer(" Yes.\n", add_special_tokens=False)["input_ids"]
    assert second.token_ids[0] == _uncached(policy, [appended])[0]
    # The re-encoded games get exactly what full re-encoding (with its cut of the oldest turns) gives.
    assert second.token_ids[1:] == policy.generate([unrelated, long], greedy=True).token_ids


def test_append_token_ids_needs_reuse_kv_cache() -> None:
    with pytest.raises(ConfigError, match="model.policy.append_token_ids"):
        PolicyConfig(reuse_kv_cache=False, append_token_ids=True).validate()
    PolicyConfig(append_token_ids=True).validate()  # reuse_kv_cache is on by default


def test_rollouts_reuse_the_cache_only_where_act_is_one_policy_sample(
    make_policy: Callable[..., LanguagePolicy],
) -> None:
    for reuse in (False, True):
        policy = make_policy(reuse_kv_cache=reuse)
        for cls, expected in ((ArcherAlgorithm, reuse), (PPOAlgorithm, reuse), (CHAIAlgorithm, False)):
            algorithm = cls.__new__(cls)  # rollout_actor reads only the policy
            algorithm.policy = policy
            assert isinstance(algorithm.rollout_actor(greedy=False), IncrementalActor) == expected, cls


@pytest.mark.parametrize("kind", ["trained", "noisy"])
def test_sampled_incremental_play_equals_full_reencoding_with_a_fixed_seed(
    make_policy: Callable[..., LanguagePolicy], kind: str
) -> None:
    # The switch's default (model.policy.reuse_kv_cache) rests on this: with the same seed, sampled rollouts pick the
    # same actions with and without the kept cache. Each turn is one generate call over the live games in slot order
    # either way, so torch's generator is drawn in the same order, and the distributions agree up to summation order.
    policy = make_policy(kind, max_prompt_tokens=116)
    lengths = [3, 1, 5, 2, 4, 2]
    env = ScriptedEnv(lengths)
    torch.manual_seed(123)
    full = collect_trajectories(env, lambda observations: policy.generate(observations, greedy=False), num_episodes=6)
    torch.manual_seed(123)
    incremental = collect_trajectories(env, IncrementalActor(policy, greedy=False), num_episodes=6)
    for a, b in zip(full, incremental, strict=True):
        assert a.actions == b.actions
        assert a.action_token_ids == b.action_token_ids
    assert len({tuple(map(tuple, t.action_token_ids)) for t in full}) > 2  # the games did differ
