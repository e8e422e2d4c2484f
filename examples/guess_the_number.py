"""Guess the number: a text game of gymnasium's shape, to copy when you bring your own task to archer.

Train on it without changing the package (from the repository root)::

    cd scripts && PYTHONPATH=../examples python run.py --config-name grpo_20q pretrain=null \
        env=external env.target=guess_the_number:GuessTheNumber env.kwargs.high=20

and check it first: ``PYTHONPATH=examples python -m archer.check_env env.target=guess_the_number:GuessTheNumber``.
The contract (docs/add_an_environment.md): ``reset(seed=None) -> (observation, info)`` and ``step(text) ->
(observation, reward, terminated, truncated, info)``, observations are strings, rewards numbers, and
``info["success"]`` says whether the game was won. The same seed must give the same game.
"""

from __future__ import annotations

import random
import re


class GuessTheNumber:
    """Find a secret whole number between 1 and ``high``; each wrong guess is answered "higher" or "lower".

    Reward: 1 for the right guess (the game ends), 0 for a wrong one, -0.1 for an answer with no number in it.
    """

    def __init__(self, high: int = 20) -> None:
        self.high = high
        self._rng = random.Random()
        self.secret = 0

    def reset(self, seed: int | None = None) -> tuple[str, dict]:
        if seed is not None:
            self._rng.seed(seed)  # the same seed, the same secret: archer replays games by seed
        self.secret = self._rng.randint(1, self.high)
        return f"I am thinking of a number between 1 and {self.high}. Your guess?", {}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict]:
        found = re.search(r"-?\d+", action)
        if found is None:
            return "Answer with a number. Your guess?", -0.1, False, False, {"success": False}
        guess = int(found.group())
        if guess == self.secret:
            return f"{guess} is right!", 1.0, True, False, {"success": True}
        hint = "higher" if guess < self.secret else "lower"
        return f"{guess}? No, {hint}. Your guess?", 0.0, False, False, {"success": False}

    def corpus(self) -> list[str]:
        """Text for the tokenizer of archer's built-in models (optional: without it archer plays a few games)."""
        lines = [f"I am thinking of a number between 1 and {self.high}. Your guess?", "Answer with a number."]
        return lines + [f"{n}? No, higher. {n}? No, lower. {n} is right!" for n in range(1, self.high + 1)]
