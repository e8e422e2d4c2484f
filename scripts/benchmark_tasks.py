"""The method benchmark's tasks: what each named setting trains, from which start, measured how, and with which
methods (``benchmark_methods.py`` runs them); and the project's recommended ArCHer recipe as one set of switches.

A task is a reference config (whose ``env``, ``model.policy``, ``data``, ``eval`` and ``pretrain`` every run of the
task takes, so every online run starts from one cached policy and is evaluated on the same fixed games), overrides
of that reference (the start and the evaluation), the primary metric, and its methods. A method is a shipped run
config, given the task's env by a group override (``env=sokoban``) and the reference's shared values, plus, for the
recommended ArCHer, the recipe's switches.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from archer.pretraining import SAMPLING_KEYS

# The project's recommended ArCHer: the paper's ArCHer plus these switches, the same on every task (only the env, the
# schedule and the start differ). They are what `archer_20q` sets beyond `archer_20q_paper_cpu` (a test checks that
# the two configs differ by exactly this set and the schedule), each measured in docs/results.md:
RECIPE: tuple[str, ...] = (
    # exploring rollouts: a quarter of the moves replaced by the game's own earlier moves or moves of earlier games,
    # so the off-policy critic sees the moves the policy avoids;
    "algorithm.rollout.explore_fraction=0.25",
    "algorithm.rollout.explore_sources=[repeat,past]",
    # a slow critic (the paper's tau: 0.1) with more steps per iteration;
    "algorithm.critic.lr=1e-4",
    "algorithm.critic.tau=0.01",
    "algorithm.critic_steps_per_iter=50",
    # the frozen MiniLM sentence encoder reading the history turn by turn (a line without the reply separator, as
    # in the grid games, is read whole);
    "model.critic.name_or_path=minilm",
    "model.critic.pooling=mean",
    "model.critic.q_input=joint",
    "model.critic.freeze_encoder=true",
    "model.critic.history=turns",
    "model.critic.turns.reply_separator='? '",
    "model.critic.turns.action_similarity=true",
    "model.critic.turns.repeat_similarity=true",
    # the actor trains where the policy plays, held near its start (KL) and its cloning data (BC term);
    "algorithm.actor_states=policy",
    "algorithm.kl_coeff=0.1",
    "algorithm.bc_coeff=0.3",
    # sampling near the greedy policy (the paper: temperature 1);
    "model.policy.temperature=0.5",
    # V-target samples for 512 buffer transitions per critic phase.
    "algorithm.v_target_pool=512",
)
# The recipe's critic-only warm-up, as a share of the run's iterations (archer_20q: 15 of 50).
RECIPE_WARMUP_FRACTION = 0.3


def recipe_warmup(iterations: int) -> int:
    """The recipe's critic-only warm-up iterations for a run of ``iterations`` (at most ``iterations - 1``)."""
    return min(round(RECIPE_WARMUP_FRACTION * iterations), iterations - 1)


# Sampling settings stay each method's own on the headroom tasks: they change how a method explores, not the start
# (behaviour cloning neither samples nor reads them).
SAMPLING = tuple(f"model.policy.{key}" for key in SAMPLING_KEYS)


@dataclass(frozen=True)
class Method:
    """One method of a task.

    Attributes:
        name: the name the benchmark's pages, run folders and ``--methods`` use.
        config: its shipped run config (``--config-name``).
        what: one line saying what it is.
        overrides: switches on top of the config (the recipe's), applied after the task's shared values.
        paper: the config is ArCHer as the paper defines it, so ``overrides`` are all its switches beyond the paper.
        recipe_warmup: its critic-only warm-up is ``RECIPE_WARMUP_FRACTION`` of its iterations.
        offline: trained on one fixed dataset for a number of gradient steps (else online, for a number of games).
        long: plays up to ``--on-policy-factor`` times the games of the others (the on-policy methods).
    """

    name: str
    config: str
    what: str
    overrides: tuple[str, ...] = ()
    paper: bool = False
    recipe_warmup: bool = False
    offline: bool = False
    long: bool = False

    @property
    def kind(self) -> str:
        return "offline" if self.offline else "online"


@dataclass(frozen=True)
class Task:
    """A named benchmark setting.

    Attributes:
        name: the name on the command line and of its folder in ``docs/benchmark/``.
        description: one line for ``--help`` and the pages.
        reference: the config whose ``shared`` sections every run takes.
        env: the env group override every run takes (``env=sokoban``), so that a method config written for another
            game gets this one's schema before the reference's values are copied into it.
        overrides: on the reference: the start (its cloning data and steps) and the evaluation games.
        metric: the primary metric, ``eval/return_mean`` or ``eval/success_rate`` (greedy evaluation).
        methods: the default methods.
        extra_methods: methods run only when named in ``--methods`` (or with ``--methods all``).
        shared: per kind (online, offline), the sections every run takes from the reference.
        not_shared: keys of those sections that stay each method's own.
        eval_every: the default evaluation interval in games.
        stops_early: the long methods are continued in chunks of ``--trajectories`` games and stop once the seed
            mean of their last evaluations reaches the final mean of ``archers[0]``; otherwise they play their
            whole budget at once.
        archers: the ArCHer methods the sample-efficiency ratios are taken against, the first one the stopping
            level's.
        orderings: pairs of methods whose final metric the paper orders (first above second); the page checks them.
    """

    name: str
    description: str
    reference: str
    env: str
    overrides: tuple[str, ...]
    metric: str
    methods: tuple[Method, ...]
    extra_methods: tuple[Method, ...] = ()
    shared: Mapping[str, tuple[str, ...]] = field(
        default_factory=lambda: {"online": ("env", "model.policy", "data", "eval", "pretrain")}
    )
    not_shared: tuple[str, ...] = ("eval.every_iters", *SAMPLING)
    eval_every: int = 160
    stops_early: bool = True
    archers: tuple[str, ...] = ("archer_recipe", "archer_paper")
    orderings: tuple[tuple[str, str], ...] = ()

    @property
    def all_methods(self) -> tuple[Method, ...]:
        return (*self.methods, *self.extra_methods)

    def method(self, name: str) -> Method:
        """The method called ``name``; unknown names exit with the valid ones."""
        for method in self.all_methods:
            if method.name == name:
                return method
        raise SystemExit(f"{self.name}: unknown method {name!r}; choose from {', '.join(self.method_names)}")

    @property
    def method_names(self) -> tuple[str, ...]:
        return tuple(m.name for m in self.all_methods)

    @property
    def point_key(self) -> str:
        """The key of the primary metric in a run's evaluation points (``return`` or ``success``)."""
        return {"eval/return_mean": "return", "eval/success_rate": "success"}[self.metric]

    @property
    def metric_name(self) -> str:
        return {"eval/return_mean": "return", "eval/success_rate": "success rate"}[self.metric]


ARCHER_WHAT = "online ArCHer (bootstrapped utterance critic, token-level REINFORCE actor)"
PAPER_WHAT = "online ArCHer as the paper defines it (no off-paper switch), at CPU size"
RECIPE_WHAT = "online ArCHer, the project's recipe: the paper's ArCHer plus the recipe's switches"
PPO_WHAT = "token-level PPO (GAE, KL to the start, value model)"
GRPO_WHAT = "multi-turn GRPO (group-relative return, clipped ratio, KL to the start; no critic)"
GIGPO_WHAT = "GiGPO (GRPO's episode advantage plus the anchor-state step advantage; no critic)"
FILTERED_BC_WHAT = "online filtered BC (clones the top {fraction} of recent games)"
CHAI_WHAT = "CHAI (ArCHer's critic reranks policy samples)"


def headroom_methods(paper: str, grpo: str, gigpo: str) -> tuple[tuple[Method, ...], tuple[Method, ...]]:
    """The default and extra methods of a headroom task, given its game's ArCHer, GRPO and GiGPO configs."""
    methods = (
        Method("archer_paper", paper, PAPER_WHAT, paper=True),
        Method("archer_recipe", paper, RECIPE_WHAT, overrides=RECIPE, paper=True, recipe_warmup=True),
        Method("ppo", "ppo_20q", PPO_WHAT, long=True),
        Method("grpo", grpo, GRPO_WHAT, long=True),
        Method("gigpo", gigpo, GIGPO_WHAT, long=True),
        Method("filtered_bc", "online_filteredbc_20q", FILTERED_BC_WHAT),
    )
    return methods, (Method("chai", "chai_20q", CHAI_WHAT),)


_WEAK, _WEAK_EXTRA = headroom_methods("archer_20q_paper_cpu", "grpo_20q", "gigpo_20q")
_SOKOBAN, _SOKOBAN_EXTRA = headroom_methods("archer_sokoban", "grpo_sokoban", "gigpo_sokoban")
# No grpo_frozenlake config: GRPO takes grpo_sokoban's settings with FrozenLake's env (a grid game of the same size).
_FROZENLAKE, _FROZENLAKE_EXTRA = headroom_methods("archer_frozenlake", "grpo_sokoban", "gigpo_frozenlake")

STRONG_ARCHER = "archer_20q_base"

TASKS: dict[str, Task] = {
    task.name: task
    for task in (
        Task(
            name="twenty_questions_weak",
            description=(
                "Twenty Questions, the paper's 10-word subset, from a start cloned for 3,000 steps on a mix of weak "
                "scripted questioners (skills 0.1 and 0.25); every word once, greedy return (and 50 sampled games)"
            ),
            reference="archer_20q_paper_cpu",
            env="env=twenty_questions_subset",
            overrides=("env.data_skills=[0.1,0.25]", "pretrain.num_iterations=30", "eval.sampled_episodes=50"),
            metric="eval/return_mean",
            methods=_WEAK,
            extra_methods=_WEAK_EXTRA,
        ),
        Task(
            name="sokoban",
            description=(
                "Sokoban, RAGEN's setting (6x6, one box, 10 turns), from archer_sokoban's start (cloned to its "
                "plateau on 500 noisy solver games); 256 fixed rooms, greedy success rate"
            ),
            reference="archer_sokoban",
            env="env=sokoban",
            overrides=("eval.num_episodes=256",),
            metric="eval/success_rate",
            methods=_SOKOBAN,
            extra_methods=_SOKOBAN_EXTRA,
            eval_every=128,
        ),
        Task(
            name="frozenlake",
            description=(
                "FrozenLake, RAGEN's setting (4x4, slippery, 10 turns), from archer_frozenlake's start (cloned on "
                "noisy solver games); 256 fixed maps, greedy success rate"
            ),
            reference="archer_frozenlake",
            env="env=frozenlake",
            overrides=("eval.num_episodes=256",),
            metric="eval/success_rate",
            methods=_FROZENLAKE,
            extra_methods=_FROZENLAKE_EXTRA,
            eval_every=128,
        ),
        Task(
            name="twenty_questions_strong",
            description=(
                "Twenty Questions, the paper's 10-word subset, from a start cloned for 4,000 steps on the default "
                "scripted mix (issue 14's benchmark, online and offline methods); every word once, greedy return"
            ),
            reference=f"experiments/{STRONG_ARCHER}",
            env="env=twenty_questions_subset",
            overrides=(),
            metric="eval/return_mean",
            methods=(
                Method(STRONG_ARCHER, f"experiments/{STRONG_ARCHER}", ARCHER_WHAT),
                Method("online_filteredbc_20q", "online_filteredbc_20q", FILTERED_BC_WHAT),
                Method("chai_20q", "chai_20q", CHAI_WHAT),
                Method("ppo_20q", "ppo_20q", PPO_WHAT, long=True),
                Method("grpo_20q", "grpo_20q", GRPO_WHAT, long=True),
                Method("gigpo_20q", "gigpo_20q", GIGPO_WHAT, long=True),
                Method(
                    "offline_archer_20q",
                    "offline_archer_20q",
                    "offline ArCHer (IQL critic, advantage-weighted actor)",
                    offline=True,
                ),
                Method(
                    "offline_filteredbc_20q",
                    "offline_filteredbc_20q",
                    "offline filtered BC (clones the top {fraction} of the dataset)",
                    offline=True,
                ),
                Method("offline_bc_20q", "offline_bc_20q", "offline BC", offline=True),
                Method(
                    "iql_reinforce_20q",
                    "iql_reinforce_20q",
                    "IQL + REINFORCE (IQL critic, REINFORCE on fresh samples)",
                    offline=True,
                ),
            ),
            extra_methods=(
                Method(
                    "archer_20q_paper_cpu",
                    "archer_20q_paper_cpu",
                    "online ArCHer as the paper states it, at CPU size (encoder trained from scratch)",
                ),
                Method("archer_baseline_20q", "archer_baseline_20q", "online ArCHer with a token-level baseline"),
                Method("archer_ppo_20q", "archer_ppo_20q", "online ArCHer with a PPO low level"),
            ),
            # The reference's critic is its own pretrained encoder, not the policy's body, so offline runs take it
            # too; offline runs have no `pretrain` (they start from the untrained policy).
            shared={
                "online": ("env", "model", "data", "eval", "pretrain"),
                "offline": ("env", "model.policy", "model.critic", "data", "eval"),
            },
            not_shared=("eval.every_iters",),
            stops_early=False,
            archers=(STRONG_ARCHER,),
            orderings=(
                (STRONG_ARCHER, "online_filteredbc_20q"),
                (STRONG_ARCHER, "chai_20q"),
                ("offline_archer_20q", "offline_filteredbc_20q"),
                ("offline_filteredbc_20q", "offline_bc_20q"),
            ),
        ),
    )
}
HEADROOM = ("twenty_questions_weak", "sokoban", "frozenlake")
