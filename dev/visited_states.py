"""Where does a grid game's player spend its turns? The exact move values at every state it plays.

Plays the run's evaluation games (Sokoban's fixed rooms or FrozenLake's fixed maps) ``--repeats`` times each, seeded
from ``eval.seed`` as ``evaluate_run.py`` plays them, by the run's policy (``--acting greedy``: its evaluation's
decode; ``sampled``: as its rollouts act; ``--untrained`` for the start) or by the cloning data's noisy solver
(``--acting solver``: the BFS solver's move, a random one with probability epsilon, drawn per game from
``--epsilons``, default ``env.data_epsilons``). Before each move it reads the exact values of the four moves there
(``GridGameEnv.move_values`` under ``algorithm.critic.gamma``) and reports:

- ``visited/lost_share``: the share of turns played at a state whose four moves are worth the same (a room that
  can no longer be solved in the turns left, a goal out of reach). Exact labels say nothing there
  (``oracle_critic.py --best-move-labels`` gives every move 0), and no critic's advantage can be right but zero;
- ``visited/best_share``: of the other turns, the share whose move is a best one (the moves such labels reinforce);
- ``visited/dead_share``: of those lost turns, the share at a position that no number of turns would solve (a box
  pushed where it cannot reach a target; a goal cut off by holes), the others being lost to the turn limit;
- ``visited/games_lost``: the share of games that reach a lost state, and ``visited/turn_lost_mean`` the turn
  (1-based) at which they first do;
- ``visited/turns_mean`` (turns per game) and ``eval/success_rate`` as the play scored it.

A cloned policy and the solver its data came from can be set side by side this way: does the policy lose its rooms
early, so that most of what it plays afterwards carries no signal?

Usage (from ``scripts/``, with the run's config name and overrides, so its cached start or run folder is found)::

    python ../dev/visited_states.py --config-name archer_sokoban env=sokoban eval.num_episodes=256 --untrained \\
        --acting sampled --repeats 4
    python ../dev/visited_states.py --config-name archer_sokoban env=sokoban eval.num_episodes=256 --acting solver
"""

from __future__ import annotations

import logging
import random
import statistics
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from critic_probe import TIE_TOLERANCE
from devkit import parse_run, run_parser, write_records

from archer.data.rollout import ActFn, BatchActor, TurnFn, split_actions
from archer.envs.grid_games.grid import GridGameEnv, parse_direction
from archer.envs.grid_games.players import NoisySolver
from archer.evaluation import play_seeded
from archer.trainer import CHECKPOINT_FILE, build_trainer

log = logging.getLogger("visited_states")


@dataclass
class TurnTally:
    """Counts over the turns played: how many, how many at a lost state (and of those, at a dead one), how many best
    moves at the others, and for each game the turn at which it first stood in a lost state."""

    turns: int = 0
    lost: int = 0
    dead: int = 0
    best: int = 0
    games: int = 0
    first_lost_turns: list[int] = field(default_factory=list)

    @staticmethod
    def is_lost(values: dict[str, float]) -> bool:
        """Whether the four moves' ``values`` are the same: nothing the player does there matters any more."""
        return max(values.values()) - min(values.values()) <= TIE_TOLERANCE

    def add(self, values: dict[str, float], action: str, first_loss: bool, turn: int, dead: bool = False) -> bool:
        """Count one turn: ``values`` of the four moves before it, the ``action`` played; ``first_loss`` says whether
        the game has not been at a lost state before, ``dead`` whether a lost state's position cannot be solved in
        any number of turns. Returns whether this state is lost."""
        self.turns += 1
        best = max(values.values())
        if self.is_lost(values):
            self.lost += 1
            self.dead += dead
            if first_loss:
                self.first_lost_turns.append(turn)
            return True
        move = parse_direction(action)
        self.best += move is not None and values[move] >= best - TIE_TOLERANCE
        return False

    def figures(self) -> dict[str, float]:
        """The ``visited/*`` figures of the module docstring (NaN where nothing was counted)."""
        live = self.turns - self.lost
        return {
            "visited/turns": float(self.turns),
            "visited/turns_mean": self.turns / self.games if self.games else float("nan"),
            "visited/lost_share": self.lost / self.turns if self.turns else float("nan"),
            "visited/dead_share": self.dead / self.lost if self.lost else float("nan"),
            "visited/best_share": self.best / live if live else float("nan"),
            "visited/games_lost": len(self.first_lost_turns) / self.games if self.games else float("nan"),
            "visited/turn_lost_mean": (
                statistics.fmean(self.first_lost_turns) if self.first_lost_turns else float("nan")
            ),
        }


class ValuedPlay:
    """A ``BatchActor`` that plays with another player and tallies the exact values of each state it moves from.

    Args:
        env: the grid game being played (its slots are the batch's games).
        start_player: starts the player's acting function for a batch.
        gamma: the values' discount.
    """

    def __init__(self, env: GridGameEnv, start_player: Callable[[], TurnFn], gamma: float) -> None:
        self.env = env
        self.start_player = start_player
        self.gamma = gamma
        self.tally = TurnTally()

    def start_batch(self) -> TurnFn:
        player = self.start_player()
        turn_of: dict[int, int] = {}
        lost: set[int] = set()

        def turn(observations: list[str], slots: list[int]):
            values = [self.env.move_values(slot, self.gamma) for slot in slots]
            chosen = player(observations, slots)
            texts, _ = split_actions(chosen, len(slots))
            for slot, slot_values, text in zip(slots, values, texts, strict=True):
                if slot not in turn_of:
                    self.tally.games += 1
                turn_of[slot] = turn_of.get(slot, 0) + 1
                # The solver searches without a turn limit: no solution at all means the position is dead.
                dead = TurnTally.is_lost(slot_values) and self.env.solver_move(slot) is None
                if self.tally.add(slot_values, text, slot not in lost, turn_of[slot], dead):
                    lost.add(slot)
            return chosen

        return turn


def policy_player(act: ActFn | BatchActor) -> Callable[[], TurnFn]:
    """A batch start for a policy's acting function (``Algorithm.rollout_actor``)."""
    if isinstance(act, BatchActor):
        return act.start_batch
    return lambda: lambda observations, _slots: act(observations)


def solver_player(env: GridGameEnv, epsilons: Sequence[float], seed: int) -> Callable[[], TurnFn]:
    """A batch start for the noisy BFS solver, a new noise level drawn per game from ``epsilons``."""
    if not epsilons or any(not 0.0 <= epsilon <= 1.0 for epsilon in epsilons):
        raise ValueError(f"the solver's noise levels must lie in [0, 1], got {list(epsilons)}")
    rng = random.Random(seed)

    def start() -> TurnFn:
        noise = [rng.choice(list(epsilons)) for _ in range(env.batch_size)]
        players = [NoisySolver(env, epsilon, random.Random(rng.random())) for epsilon in noise]
        return lambda _observations, slots: [players[slot](slot) for slot in slots]

    return start


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    parser = run_parser(__doc__.splitlines()[0], default_config="archer_sokoban")
    parser.add_argument("--acting", choices=("greedy", "sampled", "solver"), default="sampled")
    parser.add_argument("--repeats", type=int, default=1, help="times each evaluation game is played (1)")
    parser.add_argument("--untrained", action="store_true", help="the start's policy instead of the run's checkpoint")
    parser.add_argument("--epsilons", type=float, nargs="+", default=None, help="--acting solver's noise levels")
    args, cfg = parse_run(parser, argv)
    if args.repeats < 1:
        parser.error(f"--repeats must be at least 1, got {args.repeats}")
    run_dir = Path(cfg.run_dir).expanduser().resolve()
    from_run = args.acting != "solver" and not args.untrained
    if from_run and not (run_dir / CHECKPOINT_FILE).exists():
        parser.error(f"no {CHECKPOINT_FILE} in {run_dir}: run the config first (or pass --untrained)")
    with tempfile.TemporaryDirectory() as folder:
        scratch = Path(folder)
        if from_run:
            (scratch / CHECKPOINT_FILE).symlink_to(run_dir / CHECKPOINT_FILE)
        trainer = build_trainer(replace(cfg, resume=from_run), scratch)
        env = trainer.eval_env
        if not isinstance(env, GridGameEnv):
            parser.error(f"--config-name {args.config_name}: a grid game's config is needed, not {type(env).__name__}")
        if args.acting == "solver":
            epsilons = args.epsilons if args.epsilons is not None else list(cfg.env.data_epsilons)
            try:
                start = solver_player(env, epsilons, cfg.eval.seed)
            except ValueError as error:
                parser.error(str(error))
        else:
            start = policy_player(trainer.algorithm.rollout_actor(greedy=args.acting == "greedy"))
        valued = ValuedPlay(env, start, cfg.algorithm.critic.gamma)
        games = [game for game in trainer.eval_games.greedy for _ in range(args.repeats)]
        result = play_seeded(env, valued, games, cfg.eval.seed, trainer.placement, trainer.policy.model)
    figures = {"eval/success_rate": result.metrics()["eval/success_rate"], **valued.tally.figures()}
    log.info("%s", " ".join(f"{key}={value:.3f}" for key, value in figures.items()))
    write_records(args.json, figures)
    return figures


if __name__ == "__main__":
    main()
