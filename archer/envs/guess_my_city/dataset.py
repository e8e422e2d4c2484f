"""The reference's Guess My City offline data format (its JSON files): load, check, convert, generate, save.

A dataset file is a JSON list of games::

    [{"conversation": ["Is your city in Asia? Yes, it is in Asia.", ...], "done": true, "word": "bombay,india"}]

Each utterance is a question followed by the oracle's free-form answer; ``done`` says the game was won (the last
question named the city); ``word`` is ``"city,country"``. The reference ships one such file,
``dataset/guess_my_city.json`` (950 games), in its GitHub repository YifeiZhou02/ArCHer.

Splitting an utterance into question and answer:

- the question is the text up to and including the first ``"?"``; the answer is the rest, stripped;
- if the question contains line breaks, only its last line is kept: in the reference file (934 utterances with
  line breaks, all inside the question) the earlier lines are lead-ins such as "Based on the information provided,
  my next question would be:", which a policy that stops at a newline could never produce;
- control characters in the answer become spaces, so each turn stays one line of the history;
- an utterance without ``"?"``, or with nothing after it, is malformed (``DatasetError`` names the file, the
  record and the utterance); the reference file has none.

Generate a file from scripted questioners and the built-in oracle with::

    python -m archer.envs.guess_my_city.dataset --out data/guess_my_city_generated.json --episodes 2000
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

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
from archer.envs.guess_my_city.config import GuessMyCityEnvConfig
from archer.envs.guess_my_city.facts import CITIES, City
from archer.envs.guess_my_city.questioners import CityQuestioner, make_city_questioner, play_city_game
from archer.envs.oracles import Oracle
from archer.envs.question_game import INITIAL_OBSERVATION, PlayedGame, play_scripted_games, question_game_rewards

logger = logging.getLogger(__name__)

MAX_TURNS = 20
DEFAULT_SKILL_MIX: tuple[tuple[float, float], ...] = ((0.0, 0.15), (0.25, 0.3), (0.5, 0.3), (0.75, 0.15), (1.0, 0.1))
"""(skill, weight) pairs: the share of generated games played at each ``make_city_questioner`` skill."""

MISSING_DATASET = (
    "{path}: Guess My City dataset not found. The reference's dataset is the raw file dataset/guess_my_city.json in "
    "the public GitHub repository YifeiZhou02/ArCHer (github.com/YifeiZhou02/ArCHer); download it and set "
    "data.path to where you saved it, or set data.path=null to generate games with scripted questioners against the "
    "built-in oracle."
)

_KEYS = ("conversation", "done", "word")
_LINE_BREAKS = re.compile(r"[\n\r\u2028\u2029]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")


@dataclass
class CityConversation:
    """One Guess My City game in the reference's format.

    Attributes:
        conversation: ``"<question>? <answer>"`` utterances, one per turn, at most 20.
        done: the last question named the city.
        word: ``"city,country"`` in lower case, as the reference writes it (``"bombay,india"``).
    """

    conversation: list[str]
    done: bool
    word: str

    @property
    def episode_return(self) -> float:
        """-1 per turn, 0 for the last turn of a won game."""
        return float(sum(question_game_rewards(len(self.conversation), self.done)))


def split_utterance(utterance: str) -> tuple[str, str]:
    """``(question, answer)`` of one utterance, following the module's rules.

    Raises:
        ValueError: the utterance has no ``"?"`` or no answer after it.
    """
    end = utterance.find("?")
    if end < 0:
        raise ValueError("it has no '?'; an utterance is '<question>? <answer>'")
    lines = [line for line in _LINE_BREAKS.split(utterance[: end + 1]) if line.strip()]
    question = lines[-1].strip()
    answer = _CONTROL.sub(" ", utterance[end + 1 :]).strip()
    if not answer:
        raise ValueError("it has no answer after the question's '?'")
    return question, answer


def _check_record(record: Any, index: int, path: str) -> CityConversation:
    where = f"{path}: record {index}"
    require_keys(record, where, _KEYS, DatasetError)
    conversation = require_lines(record, "conversation", where, MAX_TURNS, "utterance", "the game allows")
    done, word = record["done"], record["word"]
    for number, utterance in enumerate(conversation):
        try:
            split_utterance(utterance)
        except ValueError as error:
            raise DatasetError(f"{where}: utterance {number} {shorten(utterance)} is malformed: {error}") from None
    if not isinstance(done, bool):
        raise DatasetError(f"{where}: 'done' must be true or false, got {shorten(done)}")
    if not isinstance(word, str) or not word.strip():
        raise DatasetError(f"{where}: 'word' must be a non-empty 'city,country' string, got {shorten(word)}")
    return CityConversation(list(conversation), done, word)


def load_guess_my_city_dataset(path: str | os.PathLike[str]) -> list[CityConversation]:
    """Read and check a Guess My City JSON file in the reference's format.

    Raises:
        DatasetError: if the file is missing (the message says where to get the reference's file), is not JSON, or
            any record breaks the format; the message names the file, the record and what is wrong.
    """
    path = os.fspath(path)
    return read_checked_records(path, MISSING_DATASET.format(path=path), "games", _check_record, DatasetError)


def save_guess_my_city_dataset(conversations: Sequence[CityConversation], path: str | os.PathLike[str]) -> None:
    """Write ``conversations`` as JSON, one record per line; atomic (a crash never leaves a half-written file).

    Raises:
        DatasetError: if a conversation breaks the format (checked before anything is written).
    """
    write_checked_records([asdict(conversation) for conversation in conversations], path, _check_record)


def conversation_to_trajectory(conversation: CityConversation) -> Trajectory:
    """One game as a trajectory: -1 per turn, 0 on the last turn of a won game; won games are terminated, the
    others truncated. Observations are the environment's history: ``"Questions:\\n"`` plus one
    ``"<question> <answer>\\n"`` line per earlier turn."""
    observations = [INITIAL_OBSERVATION]
    actions: list[str] = []
    for utterance in conversation.conversation:
        question, answer = split_utterance(utterance)
        actions.append(question)
        observations.append(observations[-1] + f"{question} {answer}\n")
    return Trajectory(
        observations=observations,
        actions=actions,
        rewards=question_game_rewards(len(actions), conversation.done),
        terminated=conversation.done,
        truncated=not conversation.done,
        info={"success": conversation.done, "city": conversation.word},
    )


def reference_word(city: City) -> str:
    """``"city,country"`` as the reference's dataset writes it (lower case, no space)."""
    return f"{city.key.lower()},{city.country_ref.lower()}"


def generate_guess_my_city_dataset(
    num_episodes: int,
    seed: int,
    oracle: Oracle | None = None,
    cities: Sequence[City] = CITIES,
    skill_mix: Sequence[tuple[float, float]] = DEFAULT_SKILL_MIX,
    max_turns: int = MAX_TURNS,
    match: str = "reference",
    progress: bool | None = None,
) -> list[CityConversation]:
    """Play scripted questioners of mixed skill against an oracle and record the games in the reference's format.

    Args:
        num_episodes: number of games.
        seed: the same seed (and arguments) gives the same data.
        oracle: answers the questions; the built-in knowledge-base oracle when None.
        cities: hidden cities, drawn uniformly, and the candidates the questioners consider.
        skill_mix: (skill, weight) pairs; each game's questioner skill is drawn with these weights.
        max_turns: questions per game, at most 20 (the format's limit).
        match: the environment's win and leak checks (``reference`` or ``word``).
        progress: show a progress bar; by default only for 1,000 episodes or more.
    """
    if not 1 <= max_turns <= MAX_TURNS:
        raise ValueError(f"max_turns must lie in [1, {MAX_TURNS}], got {max_turns}")
    if oracle is None:
        from archer.envs.guess_my_city.oracle import CityKnowledgeOracle

        oracle = CityKnowledgeOracle()
    cities = tuple(cities)

    def play(questioner: CityQuestioner, city: City, rng: random.Random) -> PlayedGame:
        return play_city_game(questioner, city, oracle, rng, max_turns, match)

    def questioner(skill: float) -> CityQuestioner:
        return make_city_questioner(skill, cities)

    games = play_scripted_games(
        num_episodes, seed, cities, skill_mix, questioner, play, "Guess My City games", progress
    )
    return [
        CityConversation(
            [f"{question} {answer}" for question, answer in game.turns], game.success, reference_word(city)
        )
        for city, game in games
    ]


def offline_trajectories(cfg: RunConfig, cache_dir: Path, progress: bool = False) -> list[Trajectory]:
    """The offline dataset of a Guess My City run: ``cfg.data.path``, or scripted games generated once and cached."""
    assert isinstance(cfg.env, GuessMyCityEnvConfig)
    match, max_turns = cfg.env.match, min(cfg.env.max_turns, MAX_TURNS)
    episodes, seed = cfg.data.generate_episodes, cfg.data.generate_seed

    def generate(path: Path) -> None:
        games = generate_guess_my_city_dataset(episodes, seed, max_turns=max_turns, match=match, progress=progress)
        save_guess_my_city_dataset(games, path)

    cached = cache_dir / "datasets" / f"guess_my_city-{match}-{episodes}-t{max_turns}-seed{seed}.json"
    path = dataset_file(cfg.data.path, cached, generate, f"{episodes} Guess My City games")
    return [conversation_to_trajectory(c) for c in load_guess_my_city_dataset(path)]


def main(argv: Sequence[str] | None = None) -> None:
    """Command line: generate a dataset file."""
    parser = argparse.ArgumentParser(description="Generate a Guess My City dataset in the reference's format.")
    parser.add_argument("--out", required=True, help="JSON file to write")
    parser.add_argument("--episodes", type=int, default=2000, help="number of games (default 2000)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--match", choices=("reference", "word"), default="reference", help="win and leak checks")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    games = generate_guess_my_city_dataset(args.episodes, args.seed, match=args.match)
    save_guess_my_city_dataset(games, args.out)
    logger.info("wrote %s", args.out)


if __name__ == "__main__":
    main()
