"""States and moves that a Twenty Questions critic must rank as the game's rules rank them.

Each probe state is played in the environment: a hidden word, zero to two property questions that split the
words still possible, then a wrong guess the oracle refutes. At that state three kinds of move are listed:

- ``repeat``: asking the refuted guess again (a certain "No." that rules nothing out: a wasted turn);
- ``other_wrong_guesses``: guessing each other word the history still allows, other than the hidden one (each
  is also answered "No." but rules a candidate out, and from the questioner's side it might have won);
- ``splitting_questions``: property questions whose answer divides the words still possible into two non-empty
  groups, the most even split first.

A critic that has learnt the game scores the repeat below every other possible guess and below a splitting
question. Words the answers have already ruled out are left out of ``other_wrong_guesses``: guessing one of them
is as certain a waste as the repeat, so no ranking between the two is right. Guesses use each word's canonical
phrasing (``"Is it a dog?"``), the refuted guess included, so the moves differ only in what they ask.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from archer.data.scripted_questioners import GreedyQuestioner, guess_phrasings
from archer.envs.oracles import NO
from archer.envs.twenty_questions import TwentyQuestionsEnv
from archer.envs.twenty_questions_facts import PROPERTIES, PROPERTY_PHRASINGS


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
    knowledge = GreedyQuestioner(words=words)
    index = {word.name: i for i, word in enumerate(words)}
    rng = random.Random(seed)
    states: list[ProbeState] = []
    attempts = 0
    while len(states) < num_states:
        attempts += 1
        if attempts > 20 * num_states:
            raise ValueError("could not build probe states: does the environment use the knowledge-base oracle?")
        game_id = len(states) % len(words)
        secret = words[game_id]
        observation = env.reset(game_ids=[game_id])[0]
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
            observation = result.observation
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
        observation = result.observation
        possible = knowledge.consistent(history)
        others = [word for i, word in enumerate(words) if possible >> i & 1 and word is not secret]
        splitting = _splitting_properties(knowledge, possible, asked)
        if not others or not splitting or not possible >> index[secret.name] & 1:
            continue
        states.append(
            ProbeState(
                observation=observation,
                secret=secret.name,
                repeat=guess,
                other_wrong_guesses=tuple(guess_phrasings(word)[0] for word in others),
                splitting_questions=tuple(PROPERTY_PHRASINGS[prop][0].text for prop in splitting),
            )
        )
    return states
