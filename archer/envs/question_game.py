"""The mechanics Twenty Questions and Guess My City share: guess a hidden secret by asking an oracle.

The observation is the whole history, ``"Questions:\\n"`` followed by one ``"<question> <answer>\\n"`` line per
turn; the reward is -1 per turn and 0 on the winning turn; a game ends on a win (terminated) or after
``max_turns`` questions (truncated). Subclasses say how the oracle is addressed and how an answer is judged;
``PlayedGame`` records a game a scripted questioner played without an environment, and ``play_scripted_games`` plays a
dataset's worth of them.
"""

from __future__ import annotations

import logging
import random
import re
from abc import abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from tqdm import tqdm

from archer.envs.base import BatchedTextEnv, StepResult, encodable
from archer.envs.oracles import Oracle

log = logging.getLogger(__name__)

INITIAL_OBSERVATION = "Questions:\n"

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")

Secret = TypeVar("Secret")


def clean_question(question: str) -> str:
    """The question as written into the history: one line, no control characters, no outer spaces, encodable."""
    return _CONTROL.sub(" ", encodable(question)).strip()


class QuestionGameEnv(BatchedTextEnv, Generic[Secret]):
    """A batched question game over ``secrets``; game id ``i`` hides ``secrets[i]``.

    Args:
        secrets: what can be hidden.
        oracle: answers a batch of (``oracle_secret(secret)``, question) pairs.
        batch_size: games played at once.
        max_turns: questions per game (reference: 20).
        seed: seed of the generator that draws secrets.
    """

    def __init__(
        self, secrets: Sequence[Secret], oracle: Oracle, batch_size: int, max_turns: int, seed: int | None
    ) -> None:
        if not secrets:
            raise ValueError(f"{type(self).__name__} needs at least one secret to hide")
        if max_turns <= 0:
            raise ValueError(f"max_turns must be positive, got {max_turns}")
        self.secrets = tuple(secrets)
        self.oracle = oracle
        self.max_turns = max_turns
        self._hidden: list[Secret] = []
        self._history: list[str] = []
        self._turns: list[int] = []
        super().__init__(batch_size, seed)

    @property
    def num_games(self) -> int:
        return len(self.secrets)

    def hidden(self, slot: int) -> Secret:
        """The secret hidden in ``slot`` of the current batch (for analysis and scripted players)."""
        return self._hidden[slot]

    def oracle_secret(self, secret: Secret) -> Any:
        """What the oracle is told about ``secret`` (the secret itself by default)."""
        return secret

    @abstractmethod
    def judge(self, secret: Secret, question: str, raw_answer: str) -> tuple[str, bool, dict[str, Any]]:
        """The answer written into the history, whether the question wins, and env-specific info."""

    def _prepare_batch(self, num_games: int) -> None:
        self._hidden = [self.secrets[0]] * num_games
        self._history = [INITIAL_OBSERVATION] * num_games
        self._turns = [0] * num_games

    def _reset_game(self, slot: int, game_id: int | None) -> str:
        self._hidden[slot] = self.secrets[game_id if game_id is not None else self.draw_game_id()]
        return INITIAL_OBSERVATION

    def _step_games(self, slots: list[int], actions: list[str]) -> list[StepResult]:
        questions = [clean_question(action) for action in actions]
        answers = self.oracle.answer([self.oracle_secret(self._hidden[i]) for i in slots], questions)
        results = []
        for slot, question, raw_answer in zip(slots, questions, answers, strict=True):
            answer, success, info = self.judge(self._hidden[slot], question, raw_answer)
            self._turns[slot] += 1
            self._history[slot] += f"{question} {answer}\n"
            results.append(
                StepResult(
                    observation=self._history[slot],
                    reward=0.0 if success else -1.0,
                    terminated=success,
                    truncated=not success and self._turns[slot] >= self.max_turns,
                    info={"success": success, **info, "answer": answer},
                )
            )
        return results


def question_game_rewards(num_turns: int, won: bool) -> list[float]:
    """-1 per turn, 0 on the last turn of a won game: the reference's reward in both question games."""
    rewards = [-1.0] * num_turns
    if won and rewards:
        rewards[-1] = 0.0
    return rewards


@dataclass
class PlayedGame:
    """One scripted game.

    Attributes:
        turns: the (question, answer) pairs, in order.
        success: the last question named the secret and was answered "Yes.".
    """

    turns: list[tuple[str, str]]
    success: bool

    @property
    def rewards(self) -> list[float]:
        return question_game_rewards(len(self.turns), self.success)

    @property
    def episode_return(self) -> float:
        return sum(self.rewards)


def set_greedy_settings(questioner: Any, epsilon: float, top_k: int, guess_threshold: int, memory: int | None) -> None:
    """Check the four settings of a greedy scripted questioner (the same knobs in every question game; see
    ``greedy_settings``) and set them as its attributes.

    Raises:
        ValueError: a setting is impossible.
    """
    if not 0.0 <= epsilon <= 1.0:
        raise ValueError(f"epsilon must lie in [0, 1], got {epsilon}")
    if top_k < 1 or guess_threshold < 1:
        raise ValueError(f"top_k and guess_threshold must be at least 1, got {top_k} and {guess_threshold}")
    if memory is not None and memory < 0:
        raise ValueError(f"memory must be None or non-negative, got {memory}")
    questioner.epsilon, questioner.top_k, questioner.guess_threshold, questioner.memory = (
        epsilon,
        top_k,
        guess_threshold,
        memory,
    )


def remembered_turns(history: Sequence[tuple[str, str]], memory: int | None) -> Sequence[tuple[str, str]]:
    """The turns a questioner that remembers only its last ``memory`` turns still knows (all of them for None)."""
    if memory is None:
        return history
    return history[len(history) - memory :] if memory else []


def greedy_settings(skill: float, top_k_scale: int) -> dict[str, Any]:
    """The settings of a greedy scripted questioner of ``skill`` in [0, 1] (1 plays best; 0 is a random player's
    skill, which uses none of them): how often it plays carelessly (``epsilon``), how many of the best questions it
    picks among (``top_k``: 1 + ``top_k_scale`` (1 - skill)^2), how early it guesses and how many turns it remembers.
    """
    if not 0.0 <= skill <= 1.0:
        raise ValueError(f"skill must lie in [0, 1], got {skill}")
    slack = 1.0 - skill
    return {
        "epsilon": 0.7 * slack,
        "top_k": 1 + round(top_k_scale * slack**2),
        "guess_threshold": 1 + round(3 * slack),
        "memory": None if skill >= 0.8 else 2 + round(12 * skill),
    }


def check_skill_mix(skill_mix: Sequence[tuple[float, float]]) -> None:
    """Refuse a mix of scripted questioners' skills that cannot be drawn from."""
    if not skill_mix:
        raise ValueError("skill_mix is empty; give (skill, weight) pairs such as ((0.0, 1.0), (1.0, 1.0))")
    for skill, weight in skill_mix:
        if not 0.0 <= skill <= 1.0 or weight < 0:
            raise ValueError(f"skill_mix entry ({skill}, {weight}): skills lie in [0, 1] and weights are >= 0")
    if sum(weight for _, weight in skill_mix) <= 0:
        raise ValueError("skill_mix weights sum to zero; give at least one positive weight")


Questioner = TypeVar("Questioner")

#: A dataset shows a progress bar from this many games on.
PROGRESS_BAR_FROM = 1000


def play_scripted_games(
    num_episodes: int,
    seed: int,
    secrets: Sequence[Secret],
    skill_mix: Sequence[tuple[float, float]],
    make_questioner: Callable[[float], Questioner],
    play: Callable[[Questioner, Secret, random.Random], PlayedGame],
    name: str,
    progress: bool | None = None,
) -> list[tuple[Secret, PlayedGame]]:
    """Games of scripted questioners of mixed skill, for a dataset: each game draws its secret uniformly, then its
    questioner's skill with ``skill_mix``'s weights, then plays with a random stream of its own, all from one
    ``random.Random(seed)``, so the same seed gives the same games. Logs the games' success rate and mean return.

    Args:
        num_episodes: number of games.
        seed: the seed of the draws.
        secrets: the hidden secrets drawn from.
        skill_mix: (skill, weight) pairs.
        make_questioner: the questioner of a skill (one per skill, reused across games).
        play: plays one game with a questioner, a secret and a random stream.
        name: what the games are, for the progress bar and the log.
        progress: show a progress bar; by default only for ``PROGRESS_BAR_FROM`` games or more.
    """
    if num_episodes < 0:
        raise ValueError(f"num_episodes must be non-negative, got {num_episodes}")
    check_skill_mix(skill_mix)
    secrets = tuple(secrets)
    if not secrets:
        raise ValueError(f"no hidden secret to play {name} with")
    skills = [skill for skill, _ in skill_mix]
    weights = [weight for _, weight in skill_mix]
    questioners = {skill: make_questioner(skill) for skill in skills}
    rng = random.Random(seed)
    show = progress if progress is not None else num_episodes >= PROGRESS_BAR_FROM
    games = []
    for _ in tqdm(range(num_episodes), desc=name, unit="game", disable=not show):
        secret = rng.choice(secrets)
        skill = rng.choices(skills, weights)[0]
        games.append((secret, play(questioners[skill], secret, random.Random(rng.getrandbits(64)))))
    if games:
        log.info(
            "generated %d %s: success rate %.3f, mean return %.2f",
            len(games),
            name,
            sum(game.success for _, game in games) / len(games),
            sum(game.episode_return for _, game in games) / len(games),
        )
    return games
