"""Does ArCHer's actor learn from a weak start when its critic holds the values of the players its start was cloned
from? A run whose critic learns the cloning data's own values (one-step policy improvement).

Usage (from ``scripts/``, with the config and overrides of the run it stands beside)::

    python ../dev/behaviour_critic.py --config-name archer_20q_paper_cpu run_dir=<folder> <overrides>

The run is ``run.py``'s run of that config (a killed run resumes), with one change: every critic step draws its
batch from the run's offline dataset (``data``: the scripted players' games the start was cloned from, which the
recipe's ``bc_coeff`` term already loads) instead of the replay buffer, and each row's V target is the target
critic's Q at the move the dataset's player made there, not at a fresh policy sample. Q is still regressed on
``r + gamma (1 - done) Vbar(s')``, so the critic learns ``Q^beta``, the values of the data's players (SARSA, as in
the "one-step" offline RL of Brandfonbrener et al., 2021), and the actor improves on them at its own states with
ArCHer's ``min Q - min V``. On Twenty Questions' weak start those values order the moves far better than the start's
own (``probe_critic.py --policy-returns 6 --returns-skill 0.1 --returns-skill 0.25``). The online games still fill
the replay buffer, where the actor draws its states (``algorithm.actor_states``).

``--targets mc`` regresses Q and V on the dataset's discounted returns from each move on (Monte Carlo ``Q^beta`` and
``V^beta``, no bootstrapping) instead of ArCHer's one-step targets, so the values need not travel back through a
slow Polyak target over the games' turns.

``--v-target scripted`` (Twenty Questions) keeps ArCHer's batches from the replay buffer, the policy's own states
included, and takes each row's V target at the move a scripted player of the dataset's skills (``env.data_skills``,
one drawn per row) would make there: the data's players' values learned where the policy plays, by TD.

``--q-baseline K`` takes each actor sample's advantage against the mean of the critic's Q over K more policy samples
at the same state (``centred_actor.q_baseline_advantages``) instead of against V, which here is the data's players'
value of the state, not the policy's.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

import numpy as np
import torch
from centred_actor import q_baseline_advantages
from devkit import fit_built, parse_run, run_parser
from probe_critic import scripted_act

from archer.config import RunConfig
from archer.data.offline import load_offline_trajectories
from archer.data.replay_buffer import ReplayBuffer
from archer.data.trajectory import TransitionBatch
from archer.envs.twenty_questions.dataset import DEFAULT_SKILL_MIX
from archer.envs.twenty_questions.env import TwentyQuestionsEnv
from archer.trainer import Trainer, build_trainer


def behaviour_batches(
    demonstrations: ReplayBuffer, steps: int, size: int, rng: np.random.Generator
) -> tuple[list[TransitionBatch], list[str]]:
    """``steps`` batches of ``size`` dataset transitions and, row after row, the dataset's own move at each row's
    state: V's target is then ``Qbar(s, a_data)``, the data's players' value (what ``_critic_batches`` returns)."""
    batches = [demonstrations.sample(size, rng) for _ in range(steps)]
    return batches, [action for batch in batches for action in batch.actions]


def monte_carlo_targets(batch: TransitionBatch, v_target_actions: list[str], done: torch.Tensor) -> tuple:
    """``CriticLearner.targets`` replaced: each row's discounted return from its move on, as both Q targets and both
    V targets."""
    return (batch.mc_returns,) * 4


def scripted_batches(
    buffer: ReplayBuffer, act: Callable[[list[str]], list[str]], steps: int, size: int, rng: np.random.Generator
) -> tuple[list[TransitionBatch], list[str]]:
    """``steps`` batches of ``size`` replay transitions and, row after row, ``act``'s move at each row's state."""
    batches = [buffer.sample(size, rng) for _ in range(steps)]
    return batches, act([observation for batch in batches for observation in batch.observations])


def build_behaviour_critic_trainer(
    cfg: RunConfig, q_baseline: int = 0, targets: str = "td", v_target: str = "data"
) -> Trainer:
    """``run.py``'s trainer of ``cfg``, its critic trained on the offline dataset's own moves (``behaviour_batches``),
    by ArCHer's one-step targets (``td``) or the dataset's discounted returns (``mc``), or (``v_target="scripted"``)
    on the replay buffer with V's targets at a scripted player's moves (``scripted_batches``); with ``q_baseline``
    K > 0, its actor's baseline the mean critic Q of K policy samples.

    Raises:
        ValueError: an algorithm other than online ArCHer, no offline dataset (``bc_coeff`` 0), a negative
            ``q_baseline``, unknown ``targets`` or ``v_target``, scripted with ``mc`` targets (before anything is
            built), or scripted on a game other than Twenty Questions.
    """
    if targets not in ("td", "mc"):
        raise ValueError(f"targets must be td or mc, got {targets!r}")
    if v_target not in ("data", "scripted") or (v_target == "scripted" and targets == "mc"):
        raise ValueError(f"v_target must be data, or scripted with td targets; got {v_target!r} with {targets!r}")
    if cfg.algorithm.name != "archer":
        raise ValueError(f"needs online ArCHer's critic phase, got {cfg.algorithm.name}")
    if cfg.algorithm.bc_coeff <= 0:
        raise ValueError("needs the offline dataset the bc_coeff term loads: give algorithm.bc_coeff > 0")
    if q_baseline < 0:
        raise ValueError(f"q_baseline must be >= 0, got {q_baseline}")
    trainer = build_trainer(cfg)
    algorithm = trainer.algorithm
    settings = cfg.algorithm

    steps, size = settings.critic_steps_per_iter, settings.critic_batch_size
    act = None
    if v_target == "scripted":
        if not isinstance(trainer.env, TwentyQuestionsEnv):
            raise ValueError(f"v_target scripted has Twenty Questions' scripted players; the run plays {cfg.env.name}")
        act = scripted_act(trainer.env, cfg.env.data_skills or [skill for skill, _ in DEFAULT_SKILL_MIX], cfg.seed)

    def critic_batches(buffer: ReplayBuffer, rng: np.random.Generator) -> tuple[list[TransitionBatch], list[str]]:
        if act is None:
            return behaviour_batches(algorithm.demonstrations, steps, size, rng)
        return scripted_batches(buffer, act, steps, size, rng)

    # The instance's own methods are replaced: the run is otherwise exactly run.py's.
    algorithm._critic_batches = critic_batches
    if targets == "mc":
        # The dataset again, its returns-to-go discounted as the critic discounts (the run's copy sums them).
        dataset = load_offline_trajectories(cfg, trainer.cache_dir)
        discounted = ReplayBuffer(capacity=len(algorithm.demonstrations), gamma_mc=settings.critic.gamma)
        discounted.add_trajectories(dataset)
        algorithm.demonstrations = discounted
        algorithm.learner.targets = monte_carlo_targets
    if q_baseline:
        algorithm.actor_advantages = q_baseline_advantages(trainer, q_baseline)
    return trainer


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    parser = run_parser(__doc__.split("\n\n")[0], default_config="archer_20q")
    parser.add_argument(
        "--q-baseline", type=int, default=0, metavar="K", help="baseline: mean critic Q of K policy samples (0: V)"
    )
    parser.add_argument("--targets", choices=("td", "mc"), default="td", help="one-step TD targets or MC returns")
    parser.add_argument(
        "--v-target", choices=("data", "scripted"), default="data", help="the dataset's moves or a scripted player's"
    )
    args, cfg = parse_run(parser, argv)
    return fit_built(
        parser, args, lambda: build_behaviour_critic_trainer(cfg, args.q_baseline, args.targets, args.v_target)
    )


if __name__ == "__main__":
    main(sys.argv[1:])
