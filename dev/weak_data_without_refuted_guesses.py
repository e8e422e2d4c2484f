"""Weak Twenty Questions data whose players never guess a word already refuted in the game.

The weak start of the ``twenty_questions_weak`` benchmark task is cloned on scripted questioners of skills 0 and
0.1, which guess at random and so guess a refuted word again (12% of their guesses). Does a start cloned on the same
players, kept from those repeats, read its refutations (and loop less when it plays greedily)? This script writes
that data as an LMRL-Gym dataset file, for ``run.py ... data.path=<file>``: every question a player draws that
guesses a word an earlier guess of the game got "No." for is drawn again (up to ``--redraws`` times; after that it
is asked anyway and counted). Everything else is the task's generator: the same skills, words, seed and turn limit.

    python dev/weak_data_without_refuted_guesses.py --out weak_no_repeats.json
    cd scripts && python run.py --config-name archer_20q_paper_cpu env=twenty_questions_subset \\
      'env.data_skills=[0.0,0.1]' pretrain.num_iterations=30 data.path=../weak_no_repeats.json ...
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Sequence

from archer.envs.oracles import NO
from archer.envs.twenty_questions.dataset import generate_twenty_questions_dataset, save_twenty_questions_dataset
from archer.envs.twenty_questions.oracle import KnowledgeBaseOracle, parse_question
from archer.envs.twenty_questions.questioners import History, Questioner, make_questioner
from archer.envs.twenty_questions.words import Word, word_list


def refuted_words(history: History) -> set[str]:
    """The words named by the game's guesses that the oracle answered "No." to."""
    refuted: set[str] = set()
    for question, answer in history:
        intent = parse_question(question)
        if intent.kind == "guess" and answer == NO:
            refuted |= set(intent.words)
    return refuted


def guesses_refuted_word(question: str, refuted: set[str]) -> bool:
    """Whether ``question`` guesses one of the ``refuted`` words."""
    intent = parse_question(question)
    return intent.kind == "guess" and bool(set(intent.words) & refuted)


class WithoutRefutedGuesses(Questioner):
    """A scripted questioner whose guesses of refuted words are drawn again.

    Attributes:
        player: the questioner whose questions are asked.
        redraws: draws per turn before a refuted guess is asked anyway.
        redrawn: turns whose first draw guessed a refuted word.
        kept: turns that asked a refuted guess because every draw was one.
    """

    def __init__(self, player: Questioner, redraws: int = 100) -> None:
        self.player = player
        self.redraws = redraws
        self.redrawn = 0
        self.kept = 0

    def ask(self, history: History, rng: random.Random) -> str:
        refuted = refuted_words(history)
        for draw in range(self.redraws):
            question = self.player.ask(history, rng)
            if not guesses_refuted_word(question, refuted):
                self.redrawn += draw > 0
                return question
        self.redrawn += 1
        self.kept += 1
        return question


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="the dataset file to write (JSON, LMRL-Gym format)")
    parser.add_argument("--episodes", type=int, default=2000, help="games (the task's data.generate_episodes: 2000)")
    parser.add_argument("--seed", type=int, default=1234, help="the task's data.generate_seed (1234)")
    parser.add_argument("--skills", type=float, nargs="+", default=[0.0, 0.1], help="the task's env.data_skills")
    parser.add_argument("--words", default="subset10", help="the task's env.words (subset10)")
    parser.add_argument("--max-turns", type=int, default=20, help="questions per game (20)")
    parser.add_argument("--redraws", type=int, default=100, help="draws per turn before a refuted guess is kept")
    args = parser.parse_args(argv)
    players: list[WithoutRefutedGuesses] = []

    def make_player(skill: float, words: Sequence[Word]) -> Questioner:
        players.append(WithoutRefutedGuesses(make_questioner(skill, words), args.redraws))
        return players[-1]

    games = generate_twenty_questions_dataset(
        args.episodes,
        args.seed,
        KnowledgeBaseOracle(),
        word_list(args.words),
        skill_mix=tuple((skill, 1.0) for skill in args.skills),
        max_turns=args.max_turns,
        make_player=make_player,
    )
    save_twenty_questions_dataset(games, args.out)
    turns = sum(len(game.lines) for game in games)
    redrawn, kept = sum(p.redrawn for p in players), sum(p.kept for p in players)
    print(f"{len(games)} games ({turns} turns) written to {args.out}; turns whose first draw guessed a refuted word:")
    print(f"{redrawn} (redrawn), of which asked anyway after {args.redraws} draws: {kept}")


if __name__ == "__main__":
    main()
