"""States and moves that a Twenty Questions critic must rank as the game's rules rank them.

A probe state is a history that ends with a wrong guess the oracle just refuted, played in the environment either
by a script (``probe_states``: a hidden word, zero to two property questions that split the words still possible,
then a wrong guess among them) or by a policy (``probe_states_from_games``: every such moment of its games). At
that state three kinds of move are listed:

- ``repeat``: asking the refuted guess again (a certain "No." that rules nothing out: a wasted turn);
- ``other_wrong_guesses``: guessing each other word the history still allows, other than the hidden one (each
  is also answered "No." but rules a candidate out, and from the questioner's side it might have won);
- ``splitting_questions``: property questions whose answer divides the words still possible into two non-empty
  groups, the most even split first.

A critic that has learnt the game scores the repeat below every other possible guess and below a splitting
question. Words the answers have already ruled out are left out of ``other_wrong_guesses``: guessing one of them
is as certain a waste as the repeat, so no ranking between the two is right. Guesses use each word's canonical
phrasing (``"Is it a dog?"``), and the repeat is the refuted guess as it was asked.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from tqdm.auto import tqdm

from archer.data.rollout import ActFn, TurnFn, play_batch
from archer.data.trajectory import Trajectory
from archer.envs.oracles import INVALID, NO, YES
from archer.envs.twenty_questions.env import TwentyQuestionsEnv
from archer.envs.twenty_questions.facts import PROPERTIES, PROPERTY_PHRASINGS
from archer.envs.twenty_questions.oracle import parse_question
from archer.envs.twenty_questions.questioners import GreedyQuestioner, guess_phrasings
from archer.envs.twenty_questions.words import Word

_ANSWERS = (YES, NO, INVALID)


@dataclass(frozen=True)
class ProbeState:
    """One state of the probe and the moves to rank at it.

    Attributes:
        observation: the history as the environment shows it, ending with the refuted guess's line.
        secret: the hidden word's name.
        repeat: the refuted guess, as asked.
        other_wrong_guesses: a guess of every other word still possible, the hidden one excepted (at least one).
        splitting_questions: property questions not yet asked that split the words still possible (at least one),
            the most even split first.
    """

    observation: str
    secret: str
    repeat: str
    other_wrong_guesses: tuple[str, ...]
    splitting_questions: tuple[str, ...]


def _splitting_properties(knowledge: GreedyQuestioner, mask: int, asked: set[str]) -> list[str]:
    """Properties not in ``asked`` that split the words in ``mask``, most even split first (table order on ties)."""
    count = mask.bit_count()
    scored = []
    for order, prop in enumerate(PROPERTIES):
        yes = (mask & knowledge._masks[prop]).bit_count()
        if 0 < yes < count and prop not in asked:
            scored.append((-min(yes, count - yes), order, prop))
    return [prop for _, _, prop in sorted(scored)]


def splitting_questions(history: Sequence[tuple[str, str]], words: Sequence[Word]) -> list[str]:
    """Property questions not asked in ``history`` that split the words it still allows, most even split first."""
    knowledge = _knowledge(tuple(words))
    asked = {parse_question(question).prop for question, _ in history}
    props = _splitting_properties(knowledge, knowledge.consistent(history), asked)
    return [PROPERTY_PHRASINGS[prop][0].text for prop in props]


def probe_state(
    observation: str, history: Sequence[tuple[str, str]], secret: Word, words: Sequence[Word]
) -> ProbeState | None:
    """The probe state at ``observation`` (whose turns are ``history``), or ``None`` if it is not one.

    It is one when the last turn is a guess of one word answered "No.", the hidden ``secret`` is still possible
    (the answers follow the fact table), and at least one other word and one splitting question remain.
    """
    if not history or history[-1][1] != NO:
        return None
    guess = parse_question(history[-1][0])
    if guess.kind != "guess" or len(guess.words) != 1:
        return None
    knowledge = _knowledge(tuple(words))
    possible = knowledge.consistent(history)
    names = [word.name for word in words]
    if secret.name not in names or not possible >> names.index(secret.name) & 1:
        return None
    others = [word for i, word in enumerate(words) if possible >> i & 1 and word.name != secret.name]
    splitting = splitting_questions(history, words)
    if not others or not splitting:
        return None
    return ProbeState(
        observation=observation,
        secret=secret.name,
        repeat=history[-1][0],
        other_wrong_guesses=tuple(guess_phrasings(word)[0] for word in others),
        splitting_questions=tuple(splitting),
    )


def history_turns(observation: str) -> list[tuple[str, str]]:
    """The (question, answer) turns of a Twenty Questions history (the ``"Questions:"`` line skipped)."""
    turns = []
    for line in observation.splitlines()[1:]:
        answer = next((a for a in _ANSWERS if line.endswith(" " + a)), None)
        if answer is not None:
            turns.append((line[: -len(answer) - 1], answer))
    return turns


def probe_states_from_games(
    games: Sequence[Trajectory], secrets: Sequence[Word], words: Sequence[Word], max_states: int | None = None
) -> list[ProbeState]:
    """Every probe state (``probe_state``) met in ``games``, in order, at most ``max_states``.

    Args:
        games: played games (from the environment, so their answers are the oracle's).
        secrets: the word hidden in each game.
        words: the words the game is played over.
        max_states: stop after this many.
    """
    states: list[ProbeState] = []
    for game, secret in zip(games, secrets, strict=True):
        for observation in game.observations[1:]:
            state = probe_state(observation, history_turns(observation), secret, words)
            if state is not None:
                states.append(state)
                if max_states is not None and len(states) >= max_states:
                    return states
    return states


_KNOWLEDGE: dict[tuple[Word, ...], GreedyQuestioner] = {}


def _knowledge(words: tuple[Word, ...]) -> GreedyQuestioner:
    """The fact-table bookkeeping of ``words`` (built once per word list)."""
    if words not in _KNOWLEDGE:
        _KNOWLEDGE[words] = GreedyQuestioner(words=words)
    return _KNOWLEDGE[words]


def probe_states(env: TwentyQuestionsEnv, num_states: int, seed: int = 0) -> list[ProbeState]:
    """Play ``num_states`` probe states in ``env`` (module docstring), hidden words taken in turn.

    Args:
        env: a Twenty Questions environment with the built-in knowledge-base oracle (its answers must follow the
            fact table the moves are chosen from).
        num_states: how many states to return.
        seed: seed of the choice of questions and guesses.

    Returns:
        ``num_states`` states; deterministic for a given environment word list and ``seed``.

    Raises:
        ValueError: ``num_states`` is not positive, the environment has fewer than three words, or its oracle
            does not answer as the fact table says (no state could be built).
    """
    if num_states <= 0:
        raise ValueError(f"num_states must be positive, got {num_states}")
    words = env.words
    if len(words) < 3:
        raise ValueError(f"the probe needs at least three words to leave a wrong guess to compare; got {len(words)}")
    knowledge = _knowledge(tuple(words))
    rng = random.Random(seed)
    states: list[ProbeState] = []
    attempts = 0
    while len(states) < num_states:
        attempts += 1
        if attempts > 20 * num_states:
            raise ValueError("could not build probe states: does the environment use the knowledge-base oracle?")
        game_id = len(states) % len(words)
        secret = words[game_id]
        env.reset(game_ids=[game_id])
        history: list[tuple[str, str]] = []
        asked: set[str] = set()
        for _ in range(rng.randint(0, 2)):
            options = _splitting_properties(knowledge, knowledge.consistent(history), asked)
            if not options:
                break
            prop = rng.choice(options)
            asked.add(prop)
            question = PROPERTY_PHRASINGS[prop][0].text
            result = env.step([question])[0]
            history.append((question, result.info["answer"]))
        possible = knowledge.consistent(history)
        wrong = [word for i, word in enumerate(words) if possible >> i & 1 and word is not secret]
        if not wrong:
            continue
        refuted = rng.choice(wrong)
        guess = guess_phrasings(refuted)[0]
        result = env.step([guess])[0]
        if result.info["answer"] != NO:
            continue
        history.append((guess, NO))
        state = probe_state(result.observation, history, secret, words)
        if state is not None:
            states.append(state)
    return states


class _ScriptedOpening:
    """A ``BatchActor`` whose game in slot ``i`` first plays ``openings[i]`` move by move, then ``act``'s moves."""

    def __init__(self, openings: Sequence[Sequence[str]], act: ActFn) -> None:
        self.openings = openings
        self.act = act

    def start_batch(self) -> TurnFn:
        played = [0] * len(self.openings)

        def turn(observations: list[str], slots: list[int]) -> list[str]:
            moves = [""] * len(slots)  # every slot is filled below: from its opening or by the policy
            free = []
            for k, slot in enumerate(slots):
                if played[slot] < len(self.openings[slot]):
                    moves[k] = self.openings[slot][played[slot]]
                else:
                    free.append(k)
                played[slot] += 1
            if free:
                chosen = self.act([observations[k] for k in free])
                texts = chosen.texts if hasattr(chosen, "texts") else chosen
                for k, text in zip(free, texts, strict=True):
                    moves[k] = text
            return moves

        return turn


def possible_words(observation: str, words: Sequence[Word]) -> list[Word]:
    """The words of ``words`` that every answer in ``observation``'s history allows (the fact table's answers)."""
    mask = _knowledge(tuple(words)).consistent(history_turns(observation))
    return [word for i, word in enumerate(words) if mask >> i & 1]


def policy_move_returns(
    env: TwentyQuestionsEnv,
    act: ActFn,
    states: Sequence[ProbeState],
    games_per_move: int,
    gamma: float,
) -> dict[tuple[str, str], float]:
    """Monte Carlo ``Q^pi(state, move)`` of every probe move: the mean discounted return from the move on.

    The critic sees the history, not the hidden word, so the value it estimates averages over every word the
    history still allows, each as likely as the others (words are hidden uniformly, and the knowledge-base oracle's
    answers are the fact table's): a guess of a word still possible wins when that word is the hidden one. So each
    move is played ``games_per_move`` times *for every word still possible* as the hidden word, not only for the
    state's own: each game replays the state's questions in ``env`` (every possible word draws the same answers),
    plays the move, then lets ``act`` (the policy) finish the game. A perfect critic of that policy would score the
    moves so; the probe's rankings of these returns say how much of the game's ordering the policy's values carry.

    Returns:
        ``{(observation, move): mean of sum_k gamma^k r_k over the move's games}``.

    Raises:
        ValueError: ``games_per_move`` is not positive, or a replayed answer differs from the state's history
            (the environment's oracle is not the one the states were played with).
    """
    if games_per_move <= 0:
        raise ValueError(f"games_per_move must be positive, got {games_per_move}")
    names = [word.name for word in env.words]
    jobs = []  # (observation, move, game id, opening)
    for state in states:
        questions = [question for question, _ in history_turns(state.observation)]
        game_ids = [names.index(word.name) for word in possible_words(state.observation, env.words)]
        for move in (state.repeat, *state.other_wrong_guesses, *state.splitting_questions):
            opening = (*questions, move)
            jobs.extend((state.observation, move, game_id, opening) for game_id in game_ids * games_per_move)
    returns: dict[tuple[str, str], list[float]] = {}
    for start in tqdm(range(0, len(jobs), env.batch_size), desc="probe move returns", unit="batch", leave=False):
        batch = jobs[start : start + env.batch_size]
        observations = env.reset(game_ids=[game_id for _, _, game_id, _ in batch])
        games = play_batch(env, _ScriptedOpening([opening for *_, opening in batch], act), observations)
        for (observation, move, _, opening), game in zip(batch, games, strict=True):
            if len(game.observations) > len(opening) - 1 and game.observations[len(opening) - 1] != observation:
                raise ValueError("a replayed history differs from its probe state: is the oracle the same?")
            tail = game.rewards[len(opening) - 1 :]
            returns.setdefault((observation, move), []).append(sum(gamma**k * r for k, r in enumerate(tail)))
    return {key: statistics.fmean(values) for key, values in returns.items()}
