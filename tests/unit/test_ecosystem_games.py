"""The ecosystem's games through env=external (archer/envs/external/ecosystem.py): GEM's (the ``gem`` extra) and
TextArena's (the ``textarena`` extra) single-player games, their reward conventions mapped, and the games that
cannot be played offline refused with their name and why. Each library's tests skip without it."""

from __future__ import annotations

import importlib.util

import pytest

from archer.config import ConfigError
from archer.envs.checker import check_text_game
from archer.envs.external.ecosystem import UnplayableGameError, _has_nltk_corpus, check_playable
from archer.envs.registry import make_env
from tests.conftest import compose_run

needs_gem = pytest.mark.skipif(importlib.util.find_spec("gem") is None, reason="needs gem-llm (the gem extra)")
needs_textarena = pytest.mark.skipif(
    importlib.util.find_spec("textarena") is None, reason="needs textarena (the textarena extra)"
)


def test_games_that_need_a_key_a_download_or_an_undeclared_package_are_refused_by_name() -> None:
    with pytest.raises(UnplayableGameError, match="^TextArena's TwentyQuestions-v0 cannot be played: its answerer is"):
        check_playable("TextArena", "TwentyQuestions-v0")
    if not _has_nltk_corpus("words"):
        with pytest.raises(UnplayableGameError, match="^GEM's game:Wordle-v0-easy loads NLTK's 'words' corpus"):
            check_playable("GEM", "game:Wordle-v0-easy")
    if importlib.util.find_spec("pandas") is None:
        with pytest.raises(UnplayableGameError, match="Crosswords-v0-easy needs pandas, which it does not declare"):
            check_playable("GEM", "game:Crosswords-v0-easy")
    check_playable("GEM", "game:Mastermind-v0-easy")  # nothing to refuse


@needs_gem
def test_gem_guess_the_number_is_won_with_the_secret_and_lost_on_a_malformed_answer() -> None:
    env = make_env(compose_run("bc_20q", ["env=gem", "env.batch_size=2"]).env, seed=0)
    first = env.reset(game_ids=[5, 5])
    assert first[0] == first[1] and "Guess The Number" in first[0]
    secret = env.games[0].env.game_number
    won, malformed = env.step([f"\\boxed{{{secret}}}", "no box here"])
    assert won.terminated and won.reward == 1.0 and won.info["success"] is True
    assert malformed.terminated and malformed.reward == -0.1 and malformed.info["success"] is False
    # history=true: the observation holds the first one, the answer and GEM's reply.
    assert won.observation.startswith(first[0] + f"\n> \\boxed{{{secret}}}\n")


@needs_gem
def test_gem_refuses_an_unknown_game_and_its_offline_games_pass_the_checker() -> None:
    cfg = compose_run("bc_20q", ["env=gem", "env.kwargs.game=math:GSM8K"]).env
    with pytest.raises(ConfigError, match=r"GEM has no game 'game:math:GSM8K'; its multi-turn games are Crosswords,"):
        make_env(cfg)
    from archer.envs.external.ecosystem import gem_game

    for game in ("GuessTheNumber-v0-easy", "Mastermind-v0-easy", "Sokoban-v0-easy", "TowerofHanoi-v0-easy"):
        report = check_text_game(lambda game=game: gem_game(game), num_games=2, max_turns=5)
        assert report.ok and report.warnings == [], (game, report.lines())


@needs_textarena
def test_textarena_pays_at_close_on_the_last_turn_only() -> None:
    env = make_env(compose_run("bc_20q", ["env=textarena", "env.batch_size=1", "env.max_turns=10"]).env, seed=0)
    env.reset(game_ids=[3])
    game = env.games[0]

    def secret() -> int:
        inner = game.env
        while hasattr(inner, "env"):
            inner = inner.env
        return inner.state.game_state["game_number"]

    wrong = 1 if secret() != 1 else 2
    first = env.step([f"[{wrong}]"])[0]
    assert not first.done and first.reward == 0.0 and first.info["success"] is False
    assert f"[{wrong}]" in first.observation  # TextArena's observation keeps the whole game
    last = env.step([f"I guess [{secret()}]"])[0]
    assert last.terminated and last.reward >= 1.0 and last.info["success"] is True


@needs_textarena
def test_textarena_games_are_replayed_alike_and_two_player_games_are_refused() -> None:
    from archer.envs.external.ecosystem import textarena_game

    for game in ("GuessTheNumber-v0", "Minesweeper-v0", "FrozenLake-v0"):
        report = check_text_game(lambda game=game: textarena_game(game), num_games=2, max_turns=5)
        assert report.ok and report.warnings == [], (game, report.lines())
    report = check_text_game(lambda: textarena_game("TicTacToe-v0"), num_games=1)
    assert report.errors == [
        "TextArena's TicTacToe-v0 is not a single-player game: The number of players has to be 2, received 1"
    ]
