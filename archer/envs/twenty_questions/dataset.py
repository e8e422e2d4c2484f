"""The LMRL-Gym Twenty Questions offline data format (the references' JSON): load, check, convert, generate, save.

A dataset file is a JSON list of conversations::

    [{"lines": ["Is it alive? No.", "Is it a pen? Yes."], "correct": true, "word": ["pen"]}, ...]

Each line is a question followed by `` Yes.`` or `` No.``; a conversation has at most 20 lines. ``correct`` says the
last question guessed the word. The reference's SFT and offline RL code reads the same file.

Deliberate difference from the reference ([R2]): the zero reward of a correct conversation goes to the last line by
position. The reference finds "the last line" by string equality, so an earlier duplicate of the final line also got
reward 0.

Generate a file from scripted questioners and the knowledge-base oracle with::

    python -m archer.envs.twenty_questions.dataset --out data/twenty_questions.json --episodes 100000
"""

from __future__ import annotations

import argparse
import logging
import os
import random
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, NamedTuple

from archer.config import RunConfig
from archer.data.json_records import (
    DatasetError,
    dataset_file,
    read_checked_records,
    require_keys,
    require_lines,
    shorten,
    write_checked_records,
)
from archer.data.trajectory import Trajectory
from archer.envs.oracles import NO, YES, Oracle
from archer.envs.question_game import INITIAL_OBSERVATION, PlayedGame, play_scripted_games, question_game_rewards
from archer.envs.twenty_questions.config import TwentyQuestionsEnvConfig
from archer.envs.twenty_questions.questioners import Questioner, make_questioner, play_game
from archer.envs.twenty_questions.words import WORDS, Word, word_list

logger = logging.getLogger(__name__)

MAX_LINES = 20
ANSWER_SUFFIXES = (" " + YES, " " + NO)
DEFAULT_SKILL_MIX: tuple[tuple[float, float], ...] = ((0.0, 0.1), (0.25, 0.2), (0.5, 0.25), (0.75, 0.25), (1.0, 0.2))
"""(skill, weight) pairs: the share of generated games played at each ``make_questioner`` skill."""

_KEYS = ("lines", "correct", "word")
_KNOWN_ALIASES = frozenset(alias for word in WORDS for alias in word.aliases)


@dataclass
class Conversation:
    """One Twenty Questions game in the LMRL-Gym format.

    Attributes:
        lines: ``"<question> Yes."`` or ``"<question> No."``, one per turn, at most 20.
        correct: the last question guessed the hidden word.
        word: the hidden word's aliases, canonical name first.
    """

    lines: list[str]
    correct: bool
    word: list[str]

    @property
    def episode_return(self) -> float:
        """-1 per line, 0 for the last line of a correct conversation."""
        return float(sum(question_game_rewards(len(self.lines), self.correct)))


class OfflineTransition(NamedTuple):
    """One utterance-level step read from a conversation.

    Attributes:
        observation: ``"Questions:\\n"`` plus every earlier line followed by ``"\\n"``.
        action: this line's question (the line without its answer).
        reward: -1, or 0 on the last line of a correct conversation.
        next_observation: ``observation`` plus this line and ``"\\n"`` (the full history on the last step).
        done: this is the conversation's last line.
    """

    observation: str
    action: str
    reward: float
    next_observation: str
    done: bool


def _question_of(line: str) -> str:
    for suffix in ANSWER_SUFFIXES:
        if line.endswith(suffix):
            return line[: -len(suffix)]
    raise ValueError(f"line {line!r} ends with neither {ANSWER_SUFFIXES[0]!r} nor {ANSWER_SUFFIXES[1]!r}")


def conversation_to_transitions(conversation: Conversation) -> list[OfflineTransition]:
    """The conversation as (s, a, r, s', done) steps, as the references read it."""
    transitions = []
    observation = INITIAL_OBSERVATION
    last = len(conversation.lines) - 1
    rewards = question_game_rewards(len(conversation.lines), conversation.correct)
    for position, (line, reward) in enumerate(zip(conversation.lines, rewards, strict=True)):
        next_observation = observation + line + "\n"
        transitions.append(
            OfflineTransition(observation, _question_of(line), reward, next_observation, position == last)
        )
        observation = next_observation
    return transitions


def _check_record(record: Any, index: int, path: str) -> Conversation:
    where = f"{path}: record {index}"
    require_keys(record, where, _KEYS, DatasetError)
    lines = require_lines(record, "lines", where, MAX_LINES, "line", "the format allows")
    correct, word = record["correct"], record["word"]
    for number, line in enumerate(lines):
        if not line.endswith(ANSWER_SUFFIXES):
            raise DatasetError(
                f"{where}: line {number} {shorten(line)} must end with ' Yes.' or ' No.' "
                "(a question, a space and the oracle's answer)"
            )
        if not _question_of(line).strip():
            raise DatasetError(f"{where}: line {number} {shorten(line)} has an answer but no question")
    if not isinstance(correct, bool):
        raise DatasetError(f"{where}: 'correct' must be true or false, got {shorten(correct)}")
    if not isinstance(word, list) or not all(isinstance(alias, str) and alias.strip() for alias in word):
        raise DatasetError(f"{where}: 'word' must be a list of non-empty alias strings, got {shorten(word)}")
    if not word:
        raise DatasetError(f"{where}: 'word' is empty; give the hidden word's aliases, canonical name first")
    if correct and not lines[-1].endswith(ANSWER_SUFFIXES[0]):
        raise DatasetError(
            f"{where}: 'correct' is true, but its last line {shorten(lines[-1])} was answered 'No.'; a won game ends "
            "with its guess answered 'Yes.'"
        )
    if not any(alias.strip().lower() in _KNOWN_ALIASES for alias in word):
        raise DatasetError(
            f"{where}: word {shorten(word)} is not one of the game's {len(WORDS)} words "
            "(archer/envs/twenty_questions/words.json)"
        )
    return Conversation(list(lines), correct, list(word))


def load_twenty_questions_dataset(path: str | os.PathLike[str]) -> list[Conversation]:
    """Read and check an LMRL-Gym Twenty Questions JSON file.

    Raises:
        DatasetError: if the file is missing, is not JSON, or any record breaks the format; the message names the
            file, the record and what is wrong.
    """
    path = os.fspath(path)
    return read_checked_records(
        path,
        f"{path}: Twenty Questions dataset not found. It is the LMRL-Gym conversation list (JSON) used for SFT "
        "and offline RL (the reference's twenty_questions.json / 20q_train.json). Point the config at your copy, "
        "or generate one with `python -m archer.envs.twenty_questions.dataset --out "
        f"{path} --episodes 100000` (scripted questioners against the knowledge-base oracle).",
        "conversations",
        _check_record,
        DatasetError,
    )


def save_twenty_questions_dataset(conversations: Sequence[Conversation], path: str | os.PathLike[str]) -> None:
    """Write ``conversations`` as JSON, one record per line; atomic (a crash never leaves a half-written file).

    Raises:
        DatasetError: if a conversation breaks the format (checked before anything is written).
    """
    write_checked_records([asdict(conversation) for conversation in conversations], path, _check_record)


def generate_twenty_questions_dataset(
    num_episodes: int,
    seed: int,
    oracle: Oracle | None = None,
    words: Sequence[Word] | None = None,
    skill_mix: Sequence[tuple[float, float]] = DEFAULT_SKILL_MIX,
    max_turns: int = MAX_LINES,
    progress: bool | None = None,
    make_player: Callable[[float, Sequence[Word]], Questioner] = make_questioner,
) -> list[Conversation]:
    """Play scripted questioners of mixed skill against an oracle and record the games in the LMRL-Gym format.

    Args:
        num_episodes: number of conversations.
        seed: the same seed (and arguments) gives the same data.
        oracle: answers the questions; the knowledge-base oracle when None.
        words: hidden words, drawn uniformly, and the candidates the questioners consider; all 157 when None.
        skill_mix: (skill, weight) pairs; each game's questioner skill is drawn with these weights.
        max_turns: questions per game, at most 20 (the format's limit).
        progress: show a progress bar; by default only for 1,000 episodes or more.
        make_player: builds the questioner of a skill over ``words`` (``make_questioner``, the scripted players).

    Raises:
        RuntimeError: if the oracle answers a scripted question with anything but "Yes." or "No.".
    """
    if not 1 <= max_turns <= MAX_LINES:
        raise ValueError(f"max_turns must lie in [1, {MAX_LINES}], got {max_turns}")
    if oracle is None:
        from archer.envs.twenty_questions.oracle import KnowledgeBaseOracle

        oracle = KnowledgeBaseOracle()
    words = tuple(words) if words is not None else WORDS

    def play(questioner: Questioner, word: Word, rng: random.Random) -> PlayedGame:
        game = play_game(questioner, word, oracle, rng, max_turns)
        for question, answer in game.turns:
            if answer not in (YES, NO):
                raise RuntimeError(
                    f"the oracle answered {answer!r} to the scripted question {question!r} about {word.name!r}; "
                    "dataset lines must end in ' Yes.' or ' No.', so every scripted question must be answerable"
                )
        return game

    def questioner(skill: float) -> Questioner:
        return make_player(skill, words)

    games = play_scripted_games(
        num_episodes, seed, words, skill_mix, questioner, play, "Twenty Questions games", progress
    )
    return [
        Conversation([f"{q} {a}" for q, a in game.turns], game.success, list(word.aliases)) for word, game in games
    ]


def offline_trajectories(cfg: RunConfig, cache_dir: Path, progress: bool = False) -> list[Trajectory]:
    """The offline dataset of a Twenty Questions run: ``cfg.data.path``, or scripted games generated and cached."""
    from archer.envs.twenty_questions.oracle import KnowledgeBaseOracle

    assert isinstance(cfg.env, TwentyQuestionsEnvConfig)
    words, max_turns = cfg.env.words, min(cfg.env.max_turns, MAX_LINES)
    episodes, seed = cfg.data.generate_episodes, cfg.data.generate_seed
    skill_mix, skills = DEFAULT_SKILL_MIX, ""
    if cfg.env.data_skills is not None:
        skill_mix = tuple((skill, 1.0) for skill in cfg.env.data_skills)
        skills = "-skills" + "_".join(f"{skill:g}" for skill in cfg.env.data_skills)

    def generate(path: Path) -> None:
        oracle, hidden = KnowledgeBaseOracle(), word_list(words)
        games = generate_twenty_questions_dataset(
            episodes, seed, oracle, hidden, skill_mix=skill_mix, max_turns=max_turns, progress=progress
        )
        save_twenty_questions_dataset(games, path)

    cached = cache_dir / "datasets" / f"twenty_questions-{words}-{episodes}-t{max_turns}-seed{seed}{skills}.json"
    path = dataset_file(cfg.data.path, cached, generate, f"{episodes} Twenty Questions games")
    return [conversation_to_trajectory(c) for c in load_twenty_questions_dataset(path)]


def main(argv: Sequence[str] | None = None) -> None:
    """Command line: generate a dataset file."""
    parser = argparse.ArgumentParser(description="Generate an LMRL-Gym format Twenty Questions dataset.")
    parser.add_argument("--out", required=True, help="JSON file to write")
    parser.add_argument("--episodes", type=int, default=100_000, help="number of conversations (default 100000)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    save_twenty_questions_dataset(generate_twenty_questions_dataset(args.episodes, args.seed), args.out)
    logger.info("wrote %s", args.out)


if __name__ == "__main__":
    main()


def conversation_to_trajectory(conversation: Conversation) -> Trajectory:
    """One conversation as a trajectory: won games are terminated, the others cut by the turn limit."""
    transitions = conversation_to_transitions(conversation)
    return Trajectory(
        observations=[t.observation for t in transitions] + [transitions[-1].next_observation],
        actions=[t.action for t in transitions],
        rewards=[t.reward for t in transitions],
        terminated=conversation.correct,
        truncated=not conversation.correct,
        info={"success": conversation.correct, "word": conversation.word[0]},
    )
