"""Does ArCHer's actor close the gap when its critic is exact? A run whose advantages are the game's own.

Usage (from ``scripts/``, with the config and overrides of the run it stands beside, e.g. a benchmark's
``archer_recipe`` on Sokoban, its cached start found through ``cache_dir``)::

    python ../dev/oracle_critic.py --config-name archer_sokoban env=sokoban run_dir=<folder> cache_dir=<cache> \
        <the recipe's switches> algorithm.num_iterations=20 algorithm.warmup_iters=0 eval.every_iters=2

The run is ``run.py``'s run of that config (its start, rollouts, replay buffer, actor schedule, KL and cloning
terms, evaluations, checkpoints, ``metrics.jsonl`` and learning curve; a killed run resumes), with one change: the
actor's advantage of a sampled move ``a~`` at a state ``s`` is

    A(s, a~) = Q*(s, a~) - b(s)

from the game's exact move values under the critic's discount (``algorithm.critic.gamma``), instead of the learned
critic's ``min Q - min V``; the critic is never trained and its diagnostic on new games is not logged. By default
(``--baseline policy``) ``b(s)`` is the policy's expected move value ``sum_a pi(a | s) Q*(s, a)``, ``pi`` its
probabilities of the four moves under the distribution it samples from, renormalised over them: ArCHer's
``V(s) = E_pi Q(s, a)`` with exact values. ``--baseline best`` subtracts the best move's value ``max_a Q*(s, a)``
instead (the optimal advantage ``A*``: never positive, the same gradient in expectation, a larger variance). The values
are read off the observation's grid and turns left: Sokoban's by dynamic programming over the positions reachable in
the turns left (``grid_games.sokoban.move_values``), FrozenLake's by finite-horizon value iteration over its slips
(``grid_games.frozen_lake.move_values``). An utterance naming no move is valued as the game plays it: the turn's
rewards (the step cost and ``invalid_action_penalty``), then the same position with one turn fewer.

On Twenty Questions over a small word list (the 10-word subset, the knowledge-base oracle) the values are
``OptimalValues.move_value`` at the words the observation's answers still allow (dynamic programming over the word
sets; the turn limit left out, as there). Its moves are open text, so ``--baseline policy`` there is the mean ``Q*``
of ``--baseline-samples`` moves the policy samples afresh at the state (an estimate of ``E_pi Q*``, independent of
the move it scores), and ``--baseline best`` is ``V*`` of the words still possible.

``--best-move-labels`` (grid games) asks whether the exact values pay as labels where they do not as advantages:
each sampled move's advantage is 1 when it is a best move (its ``Q*`` the highest of the four) and 0 otherwise, and 0
at states whose four moves are worth the same, so the actor raises the probability of its own samples that are best
moves where the move matters, and nothing else: cloning of the exact solver's moves at the states the policy visits,
by the actor's own gradient.

``--value-noise SD`` (Twenty Questions) asks how good a critic must be: every move's value gets an error of
standard deviation SD, fixed per (observation, utterance) as a learned critic's error is, and the run first logs how
well the noisy values order the moves at 100 script-played probe states (the figures ``probe_critic.py`` gives a
learned critic: ``optimal/pair_agreement``, ``optimal/best_move``, ``optimal/regret_mean``).

No critic trained on the run's play knows more than these values, so where this run does not close half the gap
within the budget, a critic that learned them exactly would not have made the same actor do so either: the limit is
then the actor's (its step, its start), not what the critic knows. Set ``algorithm.warmup_iters=0``: without a
critic to train, a critic-only warm-up only wastes games.
"""

from __future__ import annotations

import hashlib
import logging
import re
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import torch
from critic_probe import optimal_ranking, policy_scorer, twenty_questions_valued
from devkit import fit_built, parse_run, run_parser

from archer.config import RunConfig
from archer.envs.grid_games import frozen_lake, sokoban
from archer.envs.grid_games.grid import DIRECTIONS, GRID_HEADER, GridGameEnv, parse_direction
from archer.envs.grid_games.sokoban_rooms import SokobanRoom
from archer.envs.registry import make_env, make_oracle
from archer.envs.twenty_questions.config import TwentyQuestionsEnvConfig
from archer.envs.twenty_questions.env import TwentyQuestionsEnv
from archer.envs.twenty_questions.optimal import MAX_WORDS, OptimalValues
from archer.envs.twenty_questions.probe import history_turns, probe_states
from archer.envs.twenty_questions.words import word_list
from archer.models.prefix_generation import generate_at_states
from archer.trainer import Trainer, build_trainer

ActorAdvantages = Callable[[list[str], list[str]], torch.Tensor]
"""The actor's advantages of utterances at observations (``ArcherAlgorithm.actor_advantages``'s signature)."""

_TURNS_LEFT = re.compile(r"^Turns left: (\d+)$", re.MULTILINE)

NOISE_PROBE_STATES = 100
"""Script-played probe states at which a noisy oracle's ordering of the moves is measured and logged."""

log = logging.getLogger(__name__)


def read_grid(observation: str) -> tuple[tuple[tuple[str, ...], ...], int]:
    """The grid's rows of cell symbols and the turns left, as a grid game's observation shows them.

    Raises:
        ValueError: ``observation`` is not a grid game's (no ``Grid:`` block or no ``Turns left:`` line).
    """
    head, found, grid = observation.partition(GRID_HEADER)
    turns = _TURNS_LEFT.search(head)
    if not found or turns is None:
        raise ValueError(f"not a grid game's observation: {observation[:80]!r}")
    rows = tuple(tuple(line.split(" ")) for line in grid.strip("\n").splitlines())
    return rows, int(turns.group(1))


def sokoban_room(rows: Sequence[Sequence[str]]) -> SokobanRoom:
    """The position a Sokoban grid shows (``SokobanEnv.render``'s symbols)."""
    cells = {(r, c): symbol for r, row in enumerate(rows) for c, symbol in enumerate(row)}
    player = [cell for cell, symbol in cells.items() if symbol in "PS"]
    if len(player) != 1:
        raise ValueError(f"a Sokoban grid shows one player, this one {len(player)}")
    return SokobanRoom(
        height=len(rows),
        width=len(rows[0]),
        walls=frozenset(cell for cell, symbol in cells.items() if symbol == "#"),
        targets=frozenset(cell for cell, symbol in cells.items() if symbol in "O√S"),
        boxes=frozenset(cell for cell, symbol in cells.items() if symbol in "X√"),
        player=player[0],
    )


def frozen_lake_map(rows: Sequence[Sequence[str]]) -> tuple[tuple[str, ...], tuple[int, int]]:
    """The map and the player's cell a FrozenLake grid shows (``FrozenLakeEnv.render``'s symbols); the player must
    stand on ice (the game is over otherwise). The grid does not show where the game started, which no move's value
    depends on: the player's cell is written as the start, the other ice as ``F``."""
    letters = {"_": "F", "O": "H", "G": "G", "P": "S"}
    player = [(r, c) for r, row in enumerate(rows) for c, symbol in enumerate(row) if symbol in "PX√"]
    if len(player) != 1 or rows[player[0][0]][player[0][1]] != "P":
        raise ValueError("a FrozenLake grid in play shows the player once, on the ice")
    desc = tuple("".join(letters[symbol] for symbol in row) for row in rows)
    return desc, player[0]


@dataclass(frozen=True)
class OptimalAdvantages:
    """Advantages ``Q*(s, a) - b(s)`` of a grid game's utterances from its exact move values, read off its
    observations.

    Args:
        game: ``"sokoban"`` or ``"frozenlake"``.
        gamma: the discount.
        step_reward: what every turn earns besides the move's own reward (Sokoban -0.1, FrozenLake 0).
        invalid_action_penalty: added to the turn's reward when the utterance names no move.
        is_slippery: FrozenLake's slips.
    """

    game: str
    gamma: float
    step_reward: float = 0.0
    invalid_action_penalty: float = 0.0
    is_slippery: bool = True

    @classmethod
    def of_env(cls, env: GridGameEnv, gamma: float) -> OptimalAdvantages:
        """The advantages of the game ``env`` plays, with its rewards and rules."""
        if isinstance(env, sokoban.SokobanEnv):
            return cls("sokoban", gamma, sokoban.STEP_REWARD, env.invalid_action_penalty)
        if isinstance(env, frozen_lake.FrozenLakeEnv):
            return cls("frozenlake", gamma, 0.0, env.invalid_action_penalty, env.is_slippery)
        raise ValueError(f"exact move values exist for Sokoban and FrozenLake, not {type(env).__name__}")

    def __call__(
        self, observations: Sequence[str], actions: Sequence[str], baselines: Sequence[float] | None = None
    ) -> torch.Tensor:
        """``Q*(s_i, a_i) - b_i`` of each ``actions[i]`` at ``observations[i]`` (float32), ``b_i`` being
        ``baselines[i]`` or, without them, the best move's value ``max_a Q*(s_i, a)``."""
        if baselines is None:
            baselines = [max(self.move_values(observation).values()) for observation in observations]
        pairs = zip(observations, actions, baselines, strict=True)
        return torch.tensor([self.action_value(o, a) - b for o, a, b in pairs])

    def best_move_labels(self, observations: Sequence[str], actions: Sequence[str]) -> torch.Tensor:
        """1.0 for each ``actions[i]`` worth the best move's ``Q*`` at ``observations[i]``, 0.0 for any other, and
        0.0 wherever the four moves are worth the same (a room lost or a map's goal out of reach): a label there
        would only reinforce whatever the policy sampled."""
        labels = []
        for observation, action in zip(observations, actions, strict=True):
            values = self.move_values(observation).values()
            best = max(values)
            labels.append(min(values) < best - 1e-9 and self.action_value(observation, action) >= best - 1e-9)
        return torch.tensor(labels, dtype=torch.float32)

    def action_value(self, observation: str, action: str) -> float:
        """``Q*`` of an utterance at ``observation``: its move's, or a wasted turn's when it names none."""
        direction = parse_direction(action)
        if direction is not None:
            return self.move_values(observation)[direction]
        rows, turns = read_grid(observation)
        stay = self.step_reward + self.invalid_action_penalty
        if turns > 1:
            stay += self.gamma * max(self._values(rows, turns - 1).values())
        return stay

    def policy_baseline(self, observation: str, move_logprobs: Sequence[float]) -> float:
        """``sum_a pi(a | s) Q*(s, a)`` over the four moves, ``pi`` being the policy's probabilities of the moves
        (``move_logprobs``, in ``DIRECTIONS`` order) renormalised over them: ArCHer's ``V(s) = E_pi Q(s, a)`` with
        the exact values in place of the critic's."""
        weights = torch.softmax(torch.tensor(move_logprobs, dtype=torch.float64), dim=0).tolist()
        values = self.move_values(observation)
        return float(sum(w * values[move] for w, move in zip(weights, DIRECTIONS, strict=True)))

    def move_values(self, observation: str) -> dict[str, float]:
        """``Q*`` of the four moves at ``observation``."""
        return self._values(*read_grid(observation))

    @lru_cache(maxsize=100_000)  # noqa: B019 (instances are few and live as long as a run)
    def _values(self, rows: tuple[tuple[str, ...], ...], turns: int) -> dict[str, float]:
        if self.game == "sokoban":
            return sokoban.move_values(sokoban_room(rows), turns, self.gamma)
        desc, cell = frozen_lake_map(rows)
        values = frozen_lake.move_values(desc, cell, turns, self.is_slippery, self.gamma)
        return {move: values[move] for move in DIRECTIONS}


@dataclass(frozen=True)
class TwentyQuestionsAdvantages:
    """Exact move values of Twenty Questions over a small word list, read off its observations: ``Q*`` of an
    utterance at the words the answers so far allow (``OptimalValues``)."""

    values: OptimalValues
    noise: float = 0.0
    noise_seed: int = 0

    @classmethod
    def of_config(
        cls, env_cfg: TwentyQuestionsEnvConfig, gamma: float, noise: float = 0.0, noise_seed: int = 0
    ) -> TwentyQuestionsAdvantages:
        """The values of the game ``env_cfg`` describes, read from its config alone (nothing is built).

        Raises:
            ValueError: an oracle other than the knowledge base (its answers are not the fact table's), or more
                than ``MAX_WORDS`` words (the table covers every subset of them).
        """
        if env_cfg.oracle != "knowledge_base":
            raise ValueError(f"exact values need the knowledge-base oracle, not {env_cfg.oracle}")
        words = word_list(env_cfg.words)
        if len(words) > MAX_WORDS:
            raise ValueError(f"exact values need at most {MAX_WORDS} words, got {len(words)}: play the subset")
        if noise < 0:
            raise ValueError(f"the values' noise is a standard deviation, >= 0, got {noise}")
        return cls(OptimalValues(words, gamma), noise, noise_seed)

    def possible(self, observation: str) -> int:
        """The words the observation's answers allow, as ``OptimalValues``' bit mask."""
        return self.values.possible(history_turns(observation))

    def action_value(self, observation: str, action: str) -> float:
        """``Q*`` of the utterance ``action`` at ``observation``, plus ``noise`` times a standard normal error that
        is the same every time this utterance is valued at this observation (``persistent_normal``), as a learned
        critic's error is: averaging repeated draws does not remove it."""
        value = self.values.move_value(self.possible(observation), action)
        if self.noise:
            value += self.noise * persistent_normal(observation, action, self.noise_seed)
        return value

    def best_value(self, observation: str) -> float:
        """``V*`` at ``observation``: the best move's value."""
        return self.values.state_value(self.possible(observation))


def persistent_normal(observation: str, action: str, seed: int) -> float:
    """A standard normal draw fixed by ``(seed, observation, action)``: the same pair always gets the same error."""
    digest = hashlib.blake2b(f"{seed}\0{observation}\0{action}".encode(), digest_size=8).digest()
    return float(np.random.default_rng(int.from_bytes(digest, "little")).standard_normal())


def noisy_ranking(values: TwentyQuestionsAdvantages, env_cfg: TwentyQuestionsEnvConfig, states: int) -> dict:
    """How well ``values`` (exact, plus their noise) order the moves at ``states`` script-played probe states
    (``critic_probe.optimal_ranking``: ``optimal/pair_agreement`` and the rest), to set the noise beside a learned
    critic's figures from ``probe_critic.py``."""
    env = make_env(env_cfg, seed=0, oracle=make_oracle(env_cfg))
    assert isinstance(env, TwentyQuestionsEnv)
    valued = twenty_questions_valued(probe_states(env, states, seed=0), values.values)
    return optimal_ranking(lambda observation, moves: [values.action_value(observation, m) for m in moves], valued)


GRID_GAMES = ("sokoban", "frozenlake")


def grid_advantages(trainer: Trainer, baseline: str, best_move_labels: bool = False) -> ActorAdvantages:
    """The actor's advantages from a grid game's exact values (``OptimalAdvantages``), ``b`` by ``baseline``; with
    ``best_move_labels`` 1 for a best move and 0 for any other instead."""
    advantages = OptimalAdvantages.of_env(trainer.env, trainer.cfg.algorithm.critic.gamma)
    score_moves = policy_scorer(trainer.policy)

    def actor_advantages(observations: list[str], actions: list[str]) -> torch.Tensor:
        if best_move_labels:
            return advantages.best_move_labels(observations, actions)
        baselines = None
        if baseline == "policy":
            baselines = [advantages.policy_baseline(o, score_moves(o, DIRECTIONS)) for o in observations]
        return advantages(observations, actions, baselines)

    return actor_advantages


def twenty_questions_advantages(
    trainer: Trainer, values: TwentyQuestionsAdvantages, baseline: str, samples: int
) -> ActorAdvantages:
    """The actor's advantages from Twenty Questions' exact ``values``: ``b`` the mean ``Q*`` of ``samples`` fresh
    policy moves per state (``policy``) or ``V*`` (``best``)."""
    cfg = trainer.cfg

    def actor_advantages(observations: list[str], actions: list[str]) -> torch.Tensor:
        if baseline == "policy":
            states = [o for o in observations for _ in range(samples)]
            moves = generate_at_states(
                trainer.policy, states, greedy=False, batch_size=cfg.algorithm.generation_batch_size
            ).texts
            sampled = [values.action_value(o, m) for o, m in zip(states, moves, strict=True)]
            baselines = [statistics.fmean(sampled[i * samples : (i + 1) * samples]) for i in range(len(observations))]
        else:
            baselines = [values.best_value(o) for o in observations]
        pairs = zip(observations, actions, baselines, strict=True)
        return torch.tensor([values.action_value(o, a) - b for o, a, b in pairs], dtype=torch.float32)

    return actor_advantages


def build_oracle_trainer(
    cfg: RunConfig,
    baseline: str = "policy",
    baseline_samples: int = 4,
    value_noise: float = 0.0,
    best_move_labels: bool = False,
) -> Trainer:
    """``run.py``'s trainer of ``cfg`` (online ArCHer on Sokoban, FrozenLake or Twenty Questions over a small word
    list), its actor's advantages replaced by its game's exact ones (``baseline``: ``policy`` or ``best``, see the
    module docstring; ``baseline_samples``: Twenty Questions' policy moves per state) and its critic phase by
    nothing. ``value_noise`` (Twenty Questions only) adds a persistent error of that standard deviation to every
    move's value (``TwentyQuestionsAdvantages.action_value``), seeded by the run's seed: an exact critic made as
    imperfect as a learned one. ``best_move_labels`` (grid games only) makes each sampled move's advantage 1 when
    it is a best move and 0 otherwise (``OptimalAdvantages.best_move_labels``).

    Raises:
        ValueError: an unknown ``baseline``, fewer than one sample, ``cfg`` not online ArCHer on one of the games,
            a Twenty Questions setting without exact values, noise on a grid game or below 0, or best-move labels
            on Twenty Questions (all before anything is built).
    """
    if baseline not in ("policy", "best"):
        raise ValueError(f"baseline must be 'policy' or 'best', got {baseline!r}")
    if baseline_samples < 1:
        raise ValueError(f"baseline_samples must be at least 1, got {baseline_samples}")
    if cfg.algorithm.name != "archer" or cfg.env.name not in (*GRID_GAMES, "twenty_questions"):
        raise ValueError(
            f"needs online ArCHer on Sokoban, FrozenLake or Twenty Questions' subset (archer_sokoban, "
            f"archer_frozenlake, archer_20q_paper_cpu env=twenty_questions_subset), got {cfg.algorithm.name} on "
            f"{cfg.env.name}"
        )
    if cfg.env.name in GRID_GAMES:
        if value_noise:
            raise ValueError("value noise is Twenty Questions' only")
        trainer = build_trainer(cfg)
        advantages = grid_advantages(trainer, baseline, best_move_labels)
    else:
        if best_move_labels:
            raise ValueError("best-move labels are the grid games' only (Twenty Questions' moves are open text)")
        assert isinstance(cfg.env, TwentyQuestionsEnvConfig)
        values = TwentyQuestionsAdvantages.of_config(cfg.env, cfg.algorithm.critic.gamma, value_noise, cfg.seed)
        if value_noise:
            ranking = noisy_ranking(values, cfg.env, NOISE_PROBE_STATES)
            log.info("exact values plus noise %g at %d probe states: %s", value_noise, NOISE_PROBE_STATES, ranking)
        trainer = build_trainer(cfg)
        advantages = twenty_questions_advantages(trainer, values, baseline, baseline_samples)
    algorithm = trainer.algorithm

    # The instance's own methods are replaced: the run is otherwise exactly run.py's.
    algorithm.actor_advantages = lambda observations, actions: advantages(observations, actions).to(
        trainer.policy.device
    )
    algorithm.critic_phase = lambda buffer, iteration, rng: {}
    algorithm.check_new_games = lambda: {}
    return trainer


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    parser = run_parser(__doc__.split("\n\n")[0], default_config="archer_sokoban")
    parser.add_argument(
        "--baseline",
        choices=("policy", "best"),
        default="policy",
        help="subtract the policy's expected move value (policy, ArCHer's V) or the best move's (best)",
    )
    parser.add_argument(
        "--baseline-samples",
        type=int,
        default=4,
        help="Twenty Questions: policy moves sampled per state for --baseline policy (default 4)",
    )
    parser.add_argument(
        "--value-noise",
        type=float,
        default=0.0,
        help="Twenty Questions: standard deviation of a persistent error added to every move's exact value (0)",
    )
    parser.add_argument(
        "--best-move-labels",
        action="store_true",
        help="grid games: advantage 1 for a sampled best move and 0 for any other, instead of Q* - b",
    )
    args, cfg = parse_run(parser, argv)
    return fit_built(
        parser,
        args,
        lambda: build_oracle_trainer(
            cfg, args.baseline, args.baseline_samples, args.value_noise, args.best_move_labels
        ),
    )


if __name__ == "__main__":
    main(sys.argv[1:])
