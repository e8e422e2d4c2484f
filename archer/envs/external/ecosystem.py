"""The ecosystem's single-player text games through ``env=external``: GEM's (``gem-llm``, the ``gem`` extra) and
TextArena's (``textarena``, the ``textarena`` extra), each as a gymnasium-shaped game ``GymTextEnv`` plays.

``scripts/config/env/gem.yaml`` and ``textarena.yaml`` select them (``env=gem env.kwargs.game=Mastermind-v0-easy``).
Their reward conventions, mapped:

- GEM's games are gymnasium's shape already (``reset(seed) -> (obs, info)``, ``step(text) -> 5-tuple``). Each turn's
  observation is only the game's reply, so the option sets ``env.history=true``. GEM sets no ``success``; ``GEMGame``
  adds it: won when the game ends by its own rules with a positive last reward (1 for the solution; a malformed
  answer ends the game with -0.1), the project's default rule made explicit.
- TextArena's games step with ``step(text) -> (done, info)``, show their whole history in ``get_observation()``, and
  give their rewards only at ``close()`` (a reward per player). The adapter returns reward 0 on every turn but the
  last, which gets player 0's reward from ``close()``; the game is won when that reward is at least 1 (TextArena's
  single-player win) and ``close()``'s ``game_info`` says why it ended.

Games that download data at run time (NLTK's word lists: GEM's and TextArena's Wordle and Hangman, GEM's WordSearch),
need an API key (TextArena's TwentyQuestions asks a paid model on every turn) or an undeclared package (GEM's
Crosswords, pandas) are refused with the game's name and why.
"""

from __future__ import annotations

import importlib.util
from typing import Any

from archer.errors import ArcherError, MissingExtraError

#: NLTK corpora games load at run time (and download when absent), by the game's family name.
_NLTK_GAMES = {"Wordle": "words", "Hangman": "words", "WordSearch": "words"}
#: Games that cannot be played offline whatever is installed, and why.
_REFUSED = {
    "TwentyQuestions": "its answerer is a paid model reached through OpenRouter (OPENROUTER_API_KEY) on every turn; "
    "play the project's own env=twenty_questions instead",
}
#: Packages a game needs that its library does not declare.
_UNDECLARED = {"Crosswords": "pandas"}


class UnplayableGameError(ArcherError, ValueError):
    """A game of GEM or TextArena that cannot be played here; the message names it and says why."""


def _family(game: str) -> str:
    """``Wordle`` of ``game:Wordle-v0-easy`` or ``Wordle-v0``."""
    return game.rsplit(":", 1)[-1].split("-", 1)[0]


def _has_nltk_corpus(name: str) -> bool:
    if importlib.util.find_spec("nltk") is None:
        return False
    import nltk

    try:
        nltk.data.find(f"corpora/{name}")
    except LookupError:
        return False
    return True


def check_playable(library: str, game: str) -> None:
    """Refuse ``game`` of ``library`` (``GEM`` or ``TextArena``) when it needs the network, a key or a package.

    Raises:
        UnplayableGameError: naming the game and why.
    """
    family = _family(game)
    if family in _REFUSED:
        raise UnplayableGameError(f"{library}'s {game} cannot be played: {_REFUSED[family]}")
    corpus = _NLTK_GAMES.get(family)
    if corpus is not None and not _has_nltk_corpus(corpus):
        raise UnplayableGameError(
            f"{library}'s {game} loads NLTK's '{corpus}' corpus, which is not installed, and downloads it at run time "
            f"(no network here); run python -c \"import nltk; nltk.download('{corpus}')\" once where there is one"
        )
    package = _UNDECLARED.get(family)
    if package is not None and importlib.util.find_spec(package) is None:
        raise UnplayableGameError(
            f"{library}'s {game} needs {package}, which it does not declare: pip install {package}"
        )


def _require(module: str, extra: str) -> None:
    if importlib.util.find_spec(module) is None:
        raise MissingExtraError(f"this game needs {extra}: pip install -e '.[{extra}]'")


# ------------------------------------------------------------------------------------------------------------ GEM


def gem_game(game: str = "game:GuessTheNumber-v0-easy", **kwargs: Any) -> Any:
    """GEM's game ``game`` (``gem.make(game, **kwargs)``), gymnasium-shaped as it is; ``game:`` may be left out.

    Raises:
        MissingExtraError: gem-llm is not installed.
        UnplayableGameError: not one of GEM's multi-turn games (``game:...``), or it cannot be played offline.
    """
    _require("gem", "gem")
    game = game if game.startswith("game:") else f"game:{game}"
    import gem
    from gem.envs.registration import ENV_REGISTRY

    if game not in ENV_REGISTRY:
        families = sorted({_family(name) for name in ENV_REGISTRY if name.startswith("game:")})
        raise UnplayableGameError(
            f"GEM has no game {game!r}; its multi-turn games are {', '.join(families)}, each -v0-easy, -v0-hard or "
            "-v0-random (its math:, code:, qa: and eval: tasks are single-turn datasets it downloads)"
        )
    check_playable("GEM", game)
    return GEMGame(gem.make(game, **kwargs))


class GEMGame:
    """A GEM game with ``info["success"]``: won when it ends by its own rules with a positive last reward (GEM pays 1
    for the solution and ends a game on a malformed answer with -0.1)."""

    def __init__(self, env: Any) -> None:
        self.env = env

    def reset(self, seed: int | None = None) -> tuple[str, dict]:
        return self.env.reset(seed=seed)

    def step(self, action: str) -> tuple[str, float, bool, bool, dict]:
        observation, reward, terminated, truncated, info = self.env.step(action)
        return observation, reward, terminated, truncated, {**info, "success": bool(terminated and reward > 0)}


# ------------------------------------------------------------------------------------------------------ TextArena


class TextArenaGame:
    """One of TextArena's single-player games, gymnasium-shaped: ``step`` returns the reward of ``close()`` on the
    game's last turn and 0 before it.

    Args:
        game: the TextArena id (``GuessTheNumber-v0``).
        **kwargs: passed to ``textarena.make``.
    """

    def __init__(self, game: str = "GuessTheNumber-v0", **kwargs: Any) -> None:
        _require("textarena", "textarena")
        import textarena
        from textarena.envs.registration import ENV_REGISTRY

        if game not in ENV_REGISTRY:
            raise UnplayableGameError(f"TextArena has no game {game!r} (its ids look like GuessTheNumber-v0)")
        check_playable("TextArena", game)
        self.game = game
        self._make = lambda: textarena.make(env_id=game, **kwargs)
        self.env = self._make()
        self._observation = ""

    def reset(self, seed: int | None = None) -> tuple[str, dict]:
        # A fresh TextArena env per game: its observation wrapper keeps the messages of earlier games.
        self.env = self._make()
        try:
            self.env.reset(num_players=1, seed=seed)
        except (AssertionError, ValueError) as error:  # a game for two or more players
            raise UnplayableGameError(f"TextArena's {self.game} is not a single-player game: {error}") from None
        _, self._observation = self.env.get_observation()
        return str(self._observation), {}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict]:
        done, _ = self.env.step(action=action)
        if not done:
            _, self._observation = self.env.get_observation()
            return str(self._observation), 0.0, False, False, {"success": False}
        rewards, game_info = self.env.close()
        reward = float((rewards or {}).get(0, 0.0))
        info = {key: value for key, value in game_info.get(0, {}).items() if isinstance(value, str | int | float)}
        return str(self._observation), reward, True, False, {**info, "success": reward >= 1.0}


def textarena_game(game: str = "GuessTheNumber-v0", **kwargs: Any) -> TextArenaGame:
    """TextArena's single-player game ``game`` (``TextArenaGame``)."""
    return TextArenaGame(game, **kwargs)
