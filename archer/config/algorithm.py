"""Algorithm schemas (config group ``algorithm``).

Settings more than one algorithm has are declared once, in a group: ``rollout`` (``RolloutConfig``, the games an
online algorithm plays) and ``critic`` (``CriticTrainingConfig``, how the utterance critic trains). An algorithm's
config has a group exactly when the algorithm does that: ``online`` and ``uses_critic`` read the config's fields.

The shared keys that stay flat (``algorithm.batch_size``, ``algorithm.warmup_iters``, ...) are declared once too, in
a mixin: a small dataclass that owns the fields' types, general meaning and checks, and that each config having the
keys inherits. A config may change a mixin field's default, and says in its docstring what the field means for its
algorithm where that is more specific. A config lists its mixins before its ``AlgorithmConfig`` base: a mixin's
``validate`` reaches the base's through ``super()``, and its keys come after ``AlgorithmConfig``'s (the rightmost
mixin's first) and before the config's own. Mixins hold only their own fields, because a dataclass takes each
field's default from the last base along the reversed method resolution order that has the field: a mixin carrying
``AlgorithmConfig``'s fields would reset the defaults its config inherits.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from omegaconf import MISSING

from archer.config.checks import check, check_choice

ADVANTAGE_NORMS = ("mean_std_norm", "mean_norm")
EPISODE_STATS = ("games", "turns")
ANCHORS = ("observation", "state")
EXPLORE_SOURCES = ("repeat", "other", "past")
ACTOR_STATES = ("all", "policy")
# What an ArCHer actor step may do to its advantages (losses.normalise_advantages): GRPO's names where they mean
# the same (mean_std_norm), std_norm for the scale alone.
ARCHER_ADVANTAGE_NORMS = ("none", "std_norm", "mean_std_norm")


@dataclass
class RolloutConfig:
    """The games an online algorithm plays (``algorithm.rollout``); an algorithm's config has it exactly when the
    algorithm plays.

    Attributes:
        episodes_per_iter: games played per iteration with the sampling policy (reference ``rollout_size``: 128).
        replay_capacity: transitions kept in the trainer's replay buffer, oldest evicted first (paper 10,000; the
            reference's code 100,000). Only algorithms with a ``critic`` group read the buffer; for the others it
            only costs memory.
        explore_fraction: probability that a game's move, each turn of a training game, is replaced by a move the
            policy made elsewhere: one of the same game's earlier moves or another game's move this turn
            (``archer.data.exploration``), so the off-policy critic also learns the values of moves the policy
            has stopped playing. Not in the paper (0 is the paper); only for algorithms that train the utterance
            critic, whose actor learns from fresh samples. Evaluation never explores.
        explore_sources: where a replaced move comes from, one source drawn uniformly among those that have a
            move to give: ``repeat`` (one of the same game's earlier moves), ``other`` (another live game's move
            this turn), ``past`` (any distinct move already in the replay buffer, whatever game and turn made it:
            it puts, for example, a guess into the opening turns where the policy only asks questions). Default
            ``[repeat, other]``.
    """

    episodes_per_iter: int = 128
    replay_capacity: int = 10_000
    explore_fraction: float = 0.0
    explore_sources: list[str] = field(default_factory=lambda: ["repeat", "other"])

    def validate(self, prefix: str = "algorithm.rollout") -> None:
        check(self.episodes_per_iter > 0, f"{prefix}.episodes_per_iter", "must be positive")
        check(self.replay_capacity > 0, f"{prefix}.replay_capacity", "must be positive")
        check(0.0 <= self.explore_fraction <= 1.0, f"{prefix}.explore_fraction", "must be in [0, 1]")
        check(len(self.explore_sources) > 0, f"{prefix}.explore_sources", "must name at least one source")
        for source in self.explore_sources:
            check_choice(source, f"{prefix}.explore_sources", EXPLORE_SOURCES)
        check(
            len(set(self.explore_sources)) == len(self.explore_sources),
            f"{prefix}.explore_sources",
            f"names a source twice: {list(self.explore_sources)}",
        )


@dataclass
class CriticTrainingConfig:
    """How the utterance critic (``model.critic``) trains (``algorithm.critic``); an algorithm's config has it
    exactly when the algorithm builds a critic. Defaults are online ArCHer's (the paper's; the reference's value in
    brackets); the offline algorithms' are OfflineArcher's (``OfflineCriticConfig``).

    Attributes:
        lr: critic Adam learning rate (2e-5 for Twenty Questions; OfflineArcher: 1e-5).
        gamma: discount of the Q target ``r + gamma * (1 - done) * Vbar(s')`` (paper: 0.95 for Twenty Questions,
            0.98 Detective, 0.9 WebShop [0.95 everywhere]; OfflineArcher: 0.99); also the discount of the
            Monte-Carlo returns an online run's replay buffer stores.
        tau: Polyak rate of the target critic, updated after every critic step (0.1; OfflineArcher: 0.05).
        micro_batch_size: rows per critic forward/backward; gradients are averaged over micro-batches.
        target_micro_batch_size: rows per pass of the target critic when a step computes its regression targets
            (no gradient, so a GPU can take far more rows than ``micro_batch_size``); the micro-batch size when
            unset. Speed only: the targets are the same whatever the passes, up to float rounding.
        bootstrap_on_truncation: bootstrap through episodes cut by the turn limit (the paper and the references
            treat them as terminal: false).
    """

    lr: float = 2e-5
    gamma: float = 0.95
    tau: float = 0.1
    micro_batch_size: int = 8
    target_micro_batch_size: int | None = None
    bootstrap_on_truncation: bool = False

    def validate(self, prefix: str = "algorithm.critic") -> None:
        check(self.lr > 0, f"{prefix}.lr", "must be positive")
        check(0 < self.gamma <= 1, f"{prefix}.gamma", "must be in (0, 1]")
        check(0 < self.tau <= 1, f"{prefix}.tau", "must be in (0, 1]")
        check(self.micro_batch_size > 0, f"{prefix}.micro_batch_size", "must be positive")
        check(
            self.target_micro_batch_size is None or self.target_micro_batch_size > 0,
            f"{prefix}.target_micro_batch_size",
            "must be positive (or null: the micro-batch size)",
        )


@dataclass
class AlgorithmConfig:
    """Fields every algorithm has. An online algorithm's config adds a ``rollout`` group (``RolloutConfig``); one
    that trains the utterance critic adds a ``critic`` group (``CriticTrainingConfig``).

    Attributes:
        name: which algorithm (``bc``, ...); selects the implementation.
        num_iterations: training iterations (reference ``iterations``).
        actor_lr: policy learning rate (reference ``lm_lr``).
        max_grad_norm: each network's gradient is clipped to this norm before its own optimiser steps.
        actor_micro_batch_size: rows per forward/backward of the policy; the step's batch is accumulated from
            micro-batches whose gradients are averaged (the reference summed them).
    """

    name: str = MISSING
    num_iterations: int = 100
    actor_lr: float = 1e-4
    max_grad_norm: float = 1.0
    actor_micro_batch_size: int = 8

    @property
    def online(self) -> bool:
        """Whether the algorithm plays its own games in the environment: whether its config has a rollout group."""
        return isinstance(getattr(self, "rollout", None), RolloutConfig)

    @property
    def uses_critic(self) -> bool:
        """Whether the algorithm trains the utterance-level critic: whether its config has a critic group."""
        return isinstance(getattr(self, "critic", None), CriticTrainingConfig)

    def validate(self) -> None:
        check(self.num_iterations > 0, "algorithm.num_iterations", "must be positive")
        check(self.actor_lr > 0, "algorithm.actor_lr", "must be positive")
        check(self.max_grad_norm > 0, "algorithm.max_grad_norm", "must be positive")
        check(self.actor_micro_batch_size > 0, "algorithm.actor_micro_batch_size", "must be positive")
        if self.online:
            self.rollout.validate()
            check(
                self.rollout.explore_fraction == 0.0 or self.uses_critic,
                "algorithm.rollout.explore_fraction",
                f"must be 0 for {self.name}: replaced moves are only sound for an off-policy utterance critic",
            )
        if self.uses_critic:
            self.critic.validate()


@dataclass
class BatchStepsMixin:
    """A fixed number of gradient steps per iteration, each on one batch of stored transitions (a dataset or kept
    games). Defaults are offline BC's.

    Attributes:
        steps_per_iter: gradient steps per iteration (evaluation and checkpoints happen between iterations).
        batch_size: transitions per gradient step; each algorithm says what it draws them from.
    """

    steps_per_iter: int = 50
    batch_size: int = 32

    def validate(self) -> None:
        super().validate()
        for key in ("steps_per_iter", "batch_size"):
            check(getattr(self, key) > 0, f"algorithm.{key}", "must be positive")


@dataclass
class FilterMixin:
    """Imitation of the best games only, ranked by undiscounted return.

    Attributes:
        filter_fraction: share of the N ranked games imitated: exactly ``max(1, int(filter_fraction * N))`` (a
            fixed count, so ties at the cutoff never admit extra games). 0.1 is the paper's top 10%; each algorithm
            says which N games it ranks.
    """

    filter_fraction: float = 0.1

    def validate(self) -> None:
        super().validate()
        check(0 < self.filter_fraction <= 1, "algorithm.filter_fraction", "must be in (0, 1]")


@dataclass
class GenerationMixin:
    """Sampling of utterances from the policy in batches.

    Attributes:
        generation_batch_size: prompts per ``generate`` call when the algorithm samples actions. Each batch is
            padded to its longest prompt and decoded until its longest action ends, so larger batches make fewer
            calls but pad and decode more. The default is online ArCHer's; each algorithm says what it samples.
    """

    generation_batch_size: int = 32

    def validate(self) -> None:
        super().validate()
        check(self.generation_batch_size > 0, "algorithm.generation_batch_size", "must be positive")


@dataclass
class WarmupMixin:
    """Iterations at the start of a run that do not train the policy.

    Attributes:
        warmup_iters: iterations, from the first, without policy updates (0: none); each algorithm says what it
            does meanwhile.
    """

    warmup_iters: int = 0

    @property
    def trains_policy(self) -> bool:
        """Whether the policy is trained after the warm-up; a config whose policy can stay frozen overrides it."""
        return True

    def validate(self) -> None:
        super().validate()
        check(self.warmup_iters >= 0, "algorithm.warmup_iters", "must be >= 0")
        check(
            self.warmup_iters < self.num_iterations or not self.trains_policy,
            "algorithm.warmup_iters",
            f"must be below num_iterations={self.num_iterations}, or the policy is never trained",
        )


@dataclass
class PPOUpdateMixin:
    """PPO's policy update: several passes of gradient steps over the same samples, with the clipped probability
    ratio of the current policy to the one that drew them.

    Attributes:
        ppo_epochs: passes over the same samples; each algorithm says which samples.
        clip_range: eps of the ratio clip ``[1 - eps, 1 + eps]``.
    """

    ppo_epochs: int = 4
    clip_range: float = 0.2

    def validate(self) -> None:
        super().validate()
        for key in ("ppo_epochs", "clip_range"):
            check(getattr(self, key) > 0, f"algorithm.{key}", "must be positive")


@dataclass
class GameMinibatchesMixin:
    """On-policy passes over the iteration's own games: each pass shuffles them and splits them into minibatches.

    Attributes:
        num_minibatches: optimiser steps per pass; the units (whole games with ``pack_games``, else utterances) are
            shuffled with the trainer's generator and split into this many minibatches.
        pack_games: minibatches of whole games instead of utterances, and each game's turns scored in one pass over
            its longest history (``LanguagePolicy.pack_turns``; a turn that cannot be packed exactly is scored on
            its own). The numbers per token are those of scoring each turn apart; only which utterances share a
            minibatch changes. False: minibatches of utterances, each scored on its own.
    """

    num_minibatches: int = 4
    pack_games: bool = True

    def validate(self) -> None:
        super().validate()
        check(self.num_minibatches > 0, "algorithm.num_minibatches", "must be positive")
        check(isinstance(self.pack_games, bool), "algorithm.pack_games", "must be true or false")


@dataclass
class ValueModelMixin:
    """A token value model: a separate causal LM with a scalar head, loaded like the policy, with its own optimiser.

    Attributes:
        value_lr: Adam learning rate of the value model.
        value_max_grad_norm: the value model clips its own gradient to this norm before its own step.
    """

    value_lr: float = 1e-5
    value_max_grad_norm: float = 1.0

    def validate(self) -> None:
        super().validate()
        for key in ("value_lr", "value_max_grad_norm"):
            check(getattr(self, key) > 0, f"algorithm.{key}", "must be positive")


@dataclass
class BCConfig(BatchStepsMixin, AlgorithmConfig):
    """Behaviour cloning (supervised fine-tuning) of the policy on an offline dataset.

    Attributes:
        batch_size: transitions per gradient step, drawn uniformly from the dataset.
        per_token_mean: average the negative log-likelihood over tokens instead of summing it per action (the
            reference sums).
        pack_episodes: draw whole episodes (each transition equally likely, as before) and score all turns of an
            episode in one forward pass over its longest history; exact for history-based environments, where a
            turn's observation extends the previous one (others fall back to one pass per turn). A step then
            holds at least ``batch_size`` transitions.
    """

    name: str = "bc"
    num_iterations: int = 10
    per_token_mean: bool = False
    pack_episodes: bool = True

    def validate(self) -> None:
        super().validate()
        check(
            self.batch_size % self.actor_micro_batch_size == 0,
            "algorithm.batch_size",
            f"must be a multiple of algorithm.actor_micro_batch_size={self.actor_micro_batch_size}",
        )


@dataclass
class ArcherConfig(GenerationMixin, WarmupMixin, AlgorithmConfig):
    """Online ArCHer (Zhou et al., 2024): an utterance-level off-policy critic and a token-level policy gradient.

    Defaults are the paper's values where the paper and the reference code differ (the reference's value in
    brackets); the shipped ``archer_20q`` config scales the schedule down to fit a CPU.

    Attributes:
        num_iterations: iterations of collect, critic phase, actor phase (reference ``iterations``: 2000).
        rollout: games per iteration and the replay buffer's size (``RolloutConfig``).
        critic: the critic's learning rate, discount, Polyak rate, micro-batch size and treatment of truncated
            games (``CriticTrainingConfig``).
        critic_steps_per_iter: critic gradient steps per iteration (``epochs``: 50).
        actor_steps_per_iter: policy gradient steps per iteration (``actor_epochs``: 3).
        warmup_iters: iterations that train the critic only (``warmup_iter``: 20 for Twenty Questions).
        critic_batch_size: transitions per critic step (256 = 32 micro-batches of 8 in the reference).
        actor_batch_size: replay states per actor step (256).
        actor_lr: policy Adam learning rate (``lm_lr``: 1e-6 for Twenty Questions with GPT-2).
        generation_batch_size: prompts per ``generate`` call when sampling the critic phase's V-target actions
            and the actor's actions (chain heads per prefill with ``share_prefixes``); a speed setting, measured in
            docs/speed.md.
        v_target_pool: P, or ``null`` (the paper). V(s)'s target is the target critic's Q at a fresh sample of the
            current policy, and sampling them is the critic phase's generation cost: one sample per critic row. With
            P, the phase first draws P transitions from the buffer (uniformly, with replacement) and samples one
            action for each with the current policy; every critic step then draws its batch from those P
            (uniformly, with replacement), each row with its pool transition's action. The policy does not change
            during the critic phase, so each row's V target is still ``Qbar(s, a~)`` at a fresh sample of the
            current policy, and each row is still a uniform draw from the buffer: the same estimator, with rows
            repeated within a phase, at P generations instead of ``critic_steps_per_iter * critic_batch_size``.
        log_advantage_check: before each critic phase, score the iteration's new games with the critic and log how
            its advantages and values correlate with the returns that followed (``critic/advantage_return_corr``,
            ``critic/value_return_corr``); one critic forward pass per new move, so off by default (its cost on the
            paper's schedule is in docs/speed.md); switch it on to watch a critic learn. It changes no training
            number (no gradient, no random draw).
        kl_coeff: beta of a KL penalty to the starting policy: each sample's advantage becomes
            ``A - beta * (log pi(a~) - log pi_start(a~))`` (``losses.kl_penalised_reinforce_loss``), pi_start a
            frozen copy of the starting policy. It keeps the policy from drifting into utterances the critic has
            never seen and so cannot judge. 0 (the paper) builds no copy. Online ArCHer's own actor only (CHAI's
            too), not the token-baseline or PPO variants'. Not the same term as ``iql_reinforce``'s ``kl_coeff``
            (a mixing weight of two losses) or ``ppo``'s (a per-token reward penalty).
        actor_states: the replay states the actor samples its actions at. ``all`` (the paper): every stored
            transition's state. ``policy``: only states the policy reached by its own moves, none of its game's
            earlier moves replaced by an exploring rollout (``rollout.explore_fraction``): the critic still learns
            from every move, while the policy is trained where it plays, not in the detours the exploring moves
            made (a game with a replaced move is often long and strange). The same as ``all`` without exploring
            rollouts. A variant (docs/differences.md).
        bc_coeff: weight of a behaviour-cloning term in the actor's loss (InstructGPT's pretraining mix, Ouyang et
            al. 2022): every actor step also draws ``actor_batch_size`` transitions of the run's offline dataset
            (``data``: its file, or the scripted players' games the starting policy was cloned from) and adds
            ``bc_coeff`` times their negative log-likelihood (``losses.bc_loss``: summed over each action's tokens,
            under the plain softmax, as cloning scored them) to the policy-gradient loss. The KL penalty holds the
            policy only at the states its actor samples; this term holds it wherever the dataset's games go,
            states the policy itself rarely reaches included. 0 (the paper) loads no dataset. Online ArCHer's own
            actor only (CHAI's too). A variant (docs/differences.md).
        advantage_norm: what each actor step does to its batch's advantages before ``kl_coeff`` weighs against
            them (``losses.normalise_advantages``). ``none`` (the paper): the critic's advantages as they are, in
            units of the reward, so a fixed ``kl_coeff`` and ``bc_coeff`` hold the policy harder on a game whose
            move values lie 0.02 apart (FrozenLake) than on one whose lie 1 apart (Twenty Questions).
            ``std_norm``: divided by their standard deviation over the batch, so the anchors weigh the same on
            every task. ``mean_std_norm``: also centred on the batch mean, as PPO implementations whiten theirs and
            GRPO's ``mean_std_norm`` its group's (in expectation the same gradient; it also drops the batch-wide
            offset a lagging V gives). Online ArCHer's own actor only. A variant (docs/methods.md).
    """

    name: str = "archer"
    num_iterations: int = 2000
    rollout: RolloutConfig = field(default_factory=RolloutConfig)
    critic: CriticTrainingConfig = field(default_factory=CriticTrainingConfig)
    critic_steps_per_iter: int = 50
    actor_steps_per_iter: int = 3
    warmup_iters: int = 20
    critic_batch_size: int = 256
    actor_batch_size: int = 256
    actor_micro_batch_size: int = 8
    actor_lr: float = 1e-6
    v_target_pool: int | None = None
    log_advantage_check: bool = False
    kl_coeff: float = 0.0
    actor_states: str = "all"
    bc_coeff: float = 0.0
    advantage_norm: str = "none"

    @property
    def trains_policy(self) -> bool:
        """Whether the actor phase runs (after ``warmup_iters``)."""
        return self.actor_steps_per_iter > 0

    def validate(self) -> None:
        super().validate()
        for key in ("critic_steps_per_iter", "critic_batch_size", "actor_batch_size"):
            check(getattr(self, key) > 0, f"algorithm.{key}", "must be positive")
        check(self.actor_steps_per_iter >= 0, "algorithm.actor_steps_per_iter", "must be >= 0")
        check(self.v_target_pool is None or self.v_target_pool > 0, "algorithm.v_target_pool", "> 0 or null")
        check(self.kl_coeff >= 0, "algorithm.kl_coeff", "must be >= 0 (0 = no KL penalty)")
        check(self.bc_coeff >= 0, "algorithm.bc_coeff", "must be >= 0 (0 = no behaviour-cloning term)")
        check_choice(self.actor_states, "algorithm.actor_states", ACTOR_STATES)
        check_choice(self.advantage_norm, "algorithm.advantage_norm", ARCHER_ADVANTAGE_NORMS)


@dataclass
class OfflineFilteredBCConfig(FilterMixin, BCConfig):
    """Offline filtered behaviour cloning (OfflineArcher's): BC on the dataset's best episodes by return.

    Defaults follow OfflineArcher's ``FilteredBehaviouralCloning`` script: Adam at 1e-4 on batches of 32 with 4
    accumulated (128 per step), ``filter=0.1``.

    Attributes:
        filter_fraction: share of the dataset's N episodes kept (ties keep dataset order).
    """

    name: str = "offline_filtered_bc"
    batch_size: int = 128
    actor_micro_batch_size: int = 32
    actor_lr: float = 1e-4


@dataclass
class OfflineCriticConfig(BatchStepsMixin, AlgorithmConfig):
    """Fields shared by the offline algorithms that train the utterance critic with IQL (as OfflineArcher does).

    Every gradient step draws one batch from the dataset and does one critic step then one actor step on it.
    Defaults are OfflineArcher's (its value in brackets where ours differs).

    Attributes:
        num_iterations: iterations; evaluation (``eval.every_iters``) and checkpoints happen between them.
        steps_per_iter: gradient steps per iteration (the reference validated every 250 batches of 32, about 63
            steps of 128).
        batch_size: transitions per gradient step, drawn uniformly with replacement (the reference: 4 accumulated
            batches of 32 from a shuffled pass over the transitions).
        critic: the critic's training (``CriticTrainingConfig``) at OfflineArcher's values: learning rate 1e-5,
            discount 0.99, Polyak rate 0.05, micro-batches of 32.
        actor_micro_batch_size: rows per policy forward/backward.
        actor_lr: policy Adam learning rate (1e-4).
        max_grad_norm: each network clips its own gradient to this norm (the reference did not clip).
        critic_expectile: expectile of the V regression toward the target Q at the dataset action (0.9).
        critic_warmup_steps: gradient steps, counted over the whole run, that train the critic only (0).
    """

    num_iterations: int = 1000
    steps_per_iter: int = 100
    batch_size: int = 128
    critic: CriticTrainingConfig = field(
        default_factory=lambda: CriticTrainingConfig(lr=1e-5, gamma=0.99, tau=0.05, micro_batch_size=32)
    )
    actor_micro_batch_size: int = 32
    actor_lr: float = 1e-4
    critic_expectile: float = 0.9
    critic_warmup_steps: int = 0

    def validate(self) -> None:
        super().validate()
        check(0 < self.critic_expectile < 1, "algorithm.critic_expectile", "must be in (0, 1); 0.5 is plain MSE / 2")
        check(self.critic_warmup_steps >= 0, "algorithm.critic_warmup_steps", "must be >= 0")
        total = self.num_iterations * self.steps_per_iter
        check(
            self.critic_warmup_steps < total,
            "algorithm.critic_warmup_steps",
            f"must be below num_iterations * steps_per_iter = {total}, or the policy is never trained",
        )


@dataclass
class OfflineArcherConfig(OfflineCriticConfig):
    """Offline ArCHer (OfflineArcher's): IQL critic and an advantage-weighted (AWR) actor on dataset actions.

    Attributes:
        inv_temp: beta of the AWR weight ``exp(beta * A)`` (1.0).
        max_weight: the AWR weight is clipped to this value, as in IQL; ``null`` leaves it unclipped as
            OfflineArcher did (a few large advantages then dominate the batch).
    """

    name: str = "offline_archer"
    inv_temp: float = 1.0
    max_weight: float | None = 100.0

    def validate(self) -> None:
        super().validate()
        check(self.inv_temp >= 0, "algorithm.inv_temp", "must be >= 0 (0 gives plain BC weights)")
        check(self.max_weight is None or self.max_weight > 0, "algorithm.max_weight", "must be > 0 or null")


@dataclass
class IQLReinforceConfig(GenerationMixin, OfflineCriticConfig):
    """IQL + REINFORCE with an optional KL to a reference policy (OfflineArcher's ``IQLKL``).

    Attributes:
        kl_coeff: c in ``(1 - c) * REINFORCE + c * KL(pi || pi_ref)``, a mixing weight of two losses (not online
            ArCHer's penalty on the advantage nor PPO's per-token reward penalty); 0 is the paper's plain IQL +
            REINFORCE and builds no reference policy. The reference policy is a frozen copy of the starting policy
            (``model.policy``, e.g. a BC run's ``policy/`` folder).
        generation_batch_size: prompts per ``generate`` call when sampling the actor's actions (128).
    """

    name: str = "iql_reinforce"
    kl_coeff: float = 0.0
    generation_batch_size: int = 128

    def validate(self) -> None:
        super().validate()
        check(0 <= self.kl_coeff <= 1, "algorithm.kl_coeff", "must be in [0, 1] (0 = no KL term)")


@dataclass
class CHAIConfig(ArcherConfig):
    """CHAI (the reference's ``chai``): ArCHer's critic, and actions chosen by reranking policy samples with it.

    Acting samples ``num_candidates`` utterances per state and keeps the one with the highest target-critic
    ``min(Qbar1, Qbar2)``, for rollouts and for the V target of the critic (an approximate max backup, so the
    critic is Q-learning-like rather than ArCHer's expected SARSA). Greedy evaluation decodes once, as for every
    other method (k greedy candidates would all be the same utterance; the reference decoded it five times), unless
    ``rerank_at_eval``. Every ArCHer field keeps its meaning; the reference's ``chai_20q`` inherited
    ``critic_lr = lm_lr = 1e-5`` from its default.yaml, hence ``critic.lr`` and ``actor_lr`` 1e-5 here.

    Attributes:
        num_candidates: k, policy samples reranked per state (reference: 5; at least 2).
        update_policy: false (default) keeps the policy frozen, as in the original CHAI paper and the ArCHer
            paper's baseline (the reference's run.py set ``warmup_iter = iterations``); true also runs ArCHer's
            actor phase after ``warmup_iters`` (REINFORCE on fresh, un-reranked policy samples with the online
            critic's advantage), as the reference repository's CHAI trainer would when not forced frozen.
        generation_batch_size: prompts per ``generate`` call; also the candidates scored per target-critic pass.
        rerank_at_eval: false (default): greedy evaluation is one greedy decode of the policy, the path every other
            method is evaluated by. true: it is the target critic's choice among the greedy decode and
            ``num_candidates - 1`` policy samples, which measures the policy with the critic's reranking (k times
            the generation, sampling noise in the evaluation, and not comparable with the other methods' figures).
    """

    name: str = "chai"
    num_candidates: int = 5
    update_policy: bool = False
    rerank_at_eval: bool = False
    critic: CriticTrainingConfig = field(default_factory=lambda: CriticTrainingConfig(lr=1e-5))
    actor_lr: float = 1e-5

    @property
    def trains_policy(self) -> bool:
        """A frozen policy has no actor phase (so its warm-up length cannot be wrong)."""
        return self.update_policy and super().trains_policy

    def validate(self) -> None:
        super().validate()
        check(self.num_candidates >= 2, "algorithm.num_candidates", "must be >= 2 (1 candidate is plain sampling)")
        check(isinstance(self.rerank_at_eval, bool), "algorithm.rerank_at_eval", "must be true or false")


@dataclass
class FilteredBCConfig(WarmupMixin, FilterMixin, BCConfig):
    """Online filtered behaviour cloning (the reference's): imitate the best recent games of the policy itself.

    Every iteration plays ``rollout.episodes_per_iter`` games; the algorithm keeps the games of the last
    ``window_iters`` iterations, ranks them by undiscounted return and runs ``steps_per_iter`` BC steps on the
    transitions of the top ``filter_fraction`` (a fixed count, so ties at the cutoff never admit everything, unlike
    the reference's ``>=`` quantile cutoff). No critic is built. Defaults are the reference's ``online_filteredbc``
    (3 steps of 256 transitions, micro-batches of 8, ``lm_lr`` 1e-5).

    Attributes:
        num_iterations: iterations of play then BC (reference: 2000).
        rollout: games per iteration (128) and the trainer's replay buffer, which every online run fills; filtered
            BC never reads it (it keeps its own window), so it only costs memory (``RolloutConfig``).
        filter_fraction: share of the window's N games imitated (0.1).
        window_iters: the window, in iterations, the best games are chosen from (this iteration included);
            ``null`` keeps every game since the start, as the reference did (memory and checkpoints then grow
            without bound). The paper describes "recent" rollouts without a number; 10 iterations is our default.
        warmup_iters: iterations that only play (the reference idled for ``warmup_iter`` = 20; default 0, since
            BC needs no critic to warm up).
        steps_per_iter: BC gradient steps per iteration (reference ``actor_epochs``: 3).
        batch_size: transitions per BC step, drawn uniformly with replacement from the kept games (256).
    """

    name: str = "filtered_bc"
    num_iterations: int = 2000
    rollout: RolloutConfig = field(default_factory=RolloutConfig)
    window_iters: int | None = 10
    steps_per_iter: int = 3
    batch_size: int = 256
    actor_micro_batch_size: int = 8
    actor_lr: float = 1e-5

    def validate(self) -> None:
        super().validate()
        check(self.window_iters is None or self.window_iters > 0, "algorithm.window_iters", "must be > 0 or null")


@dataclass
class ArcherBaselineConfig(ValueModelMixin, ArcherConfig):
    """ArCHer with a token-level baseline in the low level (the paper's option; dormant code in the reference).

    A value model ``b_t`` is regressed on the utterance advantage A at every token of the fresh policy samples,
    and the policy gradient uses the residual ``A - b_t``. The value model is a separate causal LM with a scalar
    head (the paper's optional baseline was a separate GPT-2), loaded like the policy; it never shares parameters
    or gradients with the policy. Every ArCHer field keeps its meaning; ``value_lr`` and ``value_max_grad_norm``
    (``ValueModelMixin``) train the value model.
    """

    name: str = "archer_baseline"

    def validate(self) -> None:
        super().validate()
        check(self.kl_coeff == 0, "algorithm.kl_coeff", f"is online ArCHer's actor term; {self.name} has none")
        check(self.bc_coeff == 0, "algorithm.bc_coeff", f"is online ArCHer's actor term; {self.name} has none")
        check(
            self.advantage_norm == "none",
            "algorithm.advantage_norm",
            f"is online ArCHer's actor setting; {self.name}'s actor does not read it (set it to none)",
        )


@dataclass
class ArcherPPOConfig(PPOUpdateMixin, ArcherConfig):
    """ArCHer with a PPO low level: the token-level clipped-ratio objective driven by the critic's advantage.

    Each actor step samples utterances at replay states, stores their per-token log-probabilities under the
    current policy, and takes ``ppo_epochs`` gradient steps on those samples with the clipped ratio; the utterance
    advantage ``min(Q1, Q2)(s, a) - min(V1, V2)(s)`` is every token's advantage. The reference has only
    commented-out lines and legacy keys for it; RAGEN advertises the combination but does not
    compute it. Every ArCHer field keeps its meaning.

    Attributes:
        ppo_epochs: gradient steps on each actor step's samples (so ``actor_steps_per_iter * ppo_epochs`` policy
            steps per iteration).
    """

    name: str = "archer_ppo"

    def validate(self) -> None:
        super().validate()
        check(self.kl_coeff == 0, "algorithm.kl_coeff", f"is online ArCHer's actor term; {self.name} has none")
        check(self.bc_coeff == 0, "algorithm.bc_coeff", f"is online ArCHer's actor term; {self.name} has none")
        check(
            self.advantage_norm == "none",
            "algorithm.advantage_norm",
            f"is online ArCHer's actor setting; {self.name}'s actor does not read it (set it to none)",
        )


@dataclass
class PPOConfig(GenerationMixin, ValueModelMixin, GameMinibatchesMixin, PPOUpdateMixin, AlgorithmConfig):
    """Token-level PPO, the on-policy baseline of the paper's "100x" comparison (not in either reference repository).

    Every iteration plays ``rollout.episodes_per_iter`` games, then runs ``ppo_epochs`` passes over their action
    tokens in ``num_minibatches`` minibatches of utterances. A multi-turn episode is one token sequence made of its
    action tokens only (the environment's text is part of the next state, never an action); GAE runs over it with
    the utterance reward on each utterance's last token, a KL penalty to the frozen starting policy on every token,
    discount 1 between the tokens of an utterance and ``gamma`` from one utterance to the next. Episodes that end
    by the turn limit are terminal, as in ArCHer. The value function is the ``ValueModelMixin``'s value model. Only
    the iteration's own games are used (on-policy); the replay buffer is ignored.

    Attributes:
        num_iterations: iterations of play then update (100 x 1024 games, the scale at which the paper reports PPO).
        rollout: on-policy games per iteration (1024; the paper: PPO needs at least 1024 per step), and the
            trainer's replay buffer, which every online run fills; PPO never reads it (``RolloutConfig``).
        ppo_epochs: passes over the iteration's tokens.
        num_minibatches: optimiser steps per pass (``GameMinibatchesMixin``).
        value_clip_range: PPO's clip of the value update around the rollout's values; ``null`` is plain MSE.
        gamma: discount from one utterance to the next (the environment's per-turn discount; PPO trains no
            utterance critic, so it has no ``critic.gamma``).
        gae_lambda: GAE lambda, per token.
        kl_coeff: weight of the per-token KL penalty ``log pi - log pi_ref`` in the rewards (not online ArCHer's
            penalty on the advantage nor IQL + REINFORCE's mixing weight).
        normalize_advantages: standardise the advantages over the iteration's tokens.
        actor_lr: policy Adam learning rate.
        actor_micro_batch_size: utterances per forward/backward (policy and value model).
        generation_batch_size: prompts per ``generate`` call when playing (256).
        pack_games: minibatches of whole games, each scored in one pass over its turns (``GameMinibatchesMixin``).
    """

    name: str = "ppo"
    num_iterations: int = 100
    rollout: RolloutConfig = field(default_factory=lambda: RolloutConfig(episodes_per_iter=1024))
    value_clip_range: float | None = None
    gamma: float = 0.95
    gae_lambda: float = 0.95
    kl_coeff: float = 0.05
    normalize_advantages: bool = True
    actor_lr: float = 1e-6
    actor_micro_batch_size: int = 8
    generation_batch_size: int = 256

    def validate(self) -> None:
        super().validate()
        check(self.value_clip_range is None or self.value_clip_range > 0, "algorithm.value_clip_range", "> 0 or null")
        check(0 < self.gamma <= 1, "algorithm.gamma", "must be in (0, 1]")
        check(0 <= self.gae_lambda <= 1, "algorithm.gae_lambda", "must be in [0, 1]")
        check(self.kl_coeff >= 0, "algorithm.kl_coeff", "must be >= 0 (0 = no KL penalty)")


@dataclass
class GRPOConfig(GenerationMixin, GameMinibatchesMixin, PPOUpdateMixin, AlgorithmConfig):
    """Multi-turn GRPO: no critic; each game's return is compared with the other games of its group.

    Every iteration plays ``rollout.episodes_per_iter`` games as groups of ``group_size`` identical starts (the same
    secret word, city, room, map, instruction or story start). A game's advantage is its return (undiscounted sum of
    rewards) relative to its group's (``group_advantages.episode_relative_advantages``), and every token the policy
    generated in every turn of the game carries it. The policy then takes ``ppo_epochs`` passes of PPO's clipped
    ratio over the games in ``num_minibatches`` minibatches, with the k3 KL to the frozen starting policy as a loss
    term (``losses.low_var_kl_loss``); both are token means over the minibatch (verl's ``token-mean``). No value
    model. Defaults are verl-agent's GRPO examples (Sokoban: 32 starts of 8 games, clip 0.2, KL loss 0.01, lr 1e-6,
    one pass); the shipped ``grpo_*`` configs scale them to a CPU.

    Attributes:
        num_iterations: iterations of play then update (verl-agent's examples: 150).
        rollout: games per iteration, a multiple of ``group_size`` (256: 32 starts of 8), and the trainer's replay
            buffer, which every online run fills; GRPO never reads it (``RolloutConfig``).
        group_size: G, games per start (8); at least 2, since a group of one has nothing to be compared with.
        advantage_norm: ``mean_std_norm`` (GRPO): ``(R - mean) / (std + 1e-6)`` over the group, std unbiased as in
            verl; ``mean_norm`` (Dr. GRPO, Liu et al. 2025): ``R - mean``, so groups with nearly equal returns are
            not blown up to unit scale.
        episode_stats: the samples the group's mean and std are taken over. ``games`` (GRPO): each game once.
            ``turns`` (verl-agent's ``compute_mean_std_cross_steps``): each turn carries its game's return, so a
            game counts once per turn it played and long games weigh more.
        kl_coeff: beta of the KL loss term ``beta * masked_mean(k3)`` to the frozen starting policy (verl's
            ``kl_loss_coef`` with ``kl_loss_type: low_var_kl``); 0 leaves it out. Not PPO's per-token reward
            penalty, online ArCHer's advantage penalty nor IQL + REINFORCE's mixing weight.
        dual_clip: c of dual-clip PPO (verl's ``clip_ratio_c``, 3): a token with a negative advantage loses at most
            ``c |A|``; null is PPO's plain clip.
        ppo_epochs: passes over the iteration's games (verl's default: 1).
        clip_range: eps of the ratio clip (0.2).
        num_minibatches: optimiser steps per pass (``GameMinibatchesMixin``; verl-agent steps once per
            ``ppo_mini_batch_size`` turns).
        pack_games: minibatches of whole games, each scored in one pass over its turns (``GameMinibatchesMixin``).
        actor_lr: policy Adam learning rate (verl-agent: 1e-6 with AdamW, weight decay 0.01).
        actor_micro_batch_size: utterances per forward/backward.
        generation_batch_size: prompts per ``generate`` call when playing (256); a group's games are batched like
            any others (``env.batch_size`` games at a time).
    """

    name: str = "grpo"
    num_iterations: int = 150
    rollout: RolloutConfig = field(default_factory=lambda: RolloutConfig(episodes_per_iter=256))
    group_size: int = 8
    advantage_norm: str = "mean_std_norm"
    episode_stats: str = "games"
    kl_coeff: float = 0.01
    dual_clip: float | None = 3.0
    ppo_epochs: int = 1
    actor_lr: float = 1e-6
    generation_batch_size: int = 256

    def validate(self) -> None:
        super().validate()
        check(
            isinstance(self.group_size, int) and self.group_size >= 2,
            "algorithm.group_size",
            "must be a whole number of games, at least 2 (a group of one has no other game to compare with)",
        )
        check(
            self.rollout.episodes_per_iter % self.group_size == 0,
            "algorithm.rollout.episodes_per_iter",
            f"must be a multiple of algorithm.group_size={self.group_size} (whole groups of identical starts)",
        )
        check_choice(self.advantage_norm, "algorithm.advantage_norm", ADVANTAGE_NORMS)
        check_choice(self.episode_stats, "algorithm.episode_stats", EPISODE_STATS)
        check(self.kl_coeff >= 0, "algorithm.kl_coeff", "must be >= 0 (0 = no KL loss term)")
        check(self.dual_clip is None or self.dual_clip > 1, "algorithm.dual_clip", "must be above 1, or null")


@dataclass
class GiGPOConfig(GRPOConfig):
    """GiGPO (Feng et al., "Group-in-Group Policy Optimization for LLM Agent Training", 2025), as verl-agent computes
    it: GRPO's episode advantage plus a step advantage from anchor states.

    The turns of a group's games that were played from the same state form an anchor group
    (``group_advantages.anchor_groups``); each turn's discounted return from that turn on (``step_gamma``) is
    compared with the other turns of its anchor group (``step_relative_advantages``; a turn alone in its anchor
    group gets 0). A turn's advantage is ``A_episode + step_advantage_weight * A_step``, on every token of the turn.
    ``advantage_norm`` applies to both parts. Defaults are verl-agent's (``mean_norm``, episode statistics over
    turns, step gamma 0.95, weight 1); the rest is GRPO's (``GRPOConfig``). The deviations from verl-agent are listed
    in docs/methods.md.

    Attributes:
        advantage_norm: ``mean_norm`` (verl-agent's default and its Sokoban and WebShop examples) or
            ``mean_std_norm`` (its ALFWorld example), for both parts.
        episode_stats: ``turns`` (verl-agent) or ``games``; see ``GRPOConfig``.
        step_gamma: discount of the step return ``G_t = r_t + step_gamma * G_{t+1}`` (verl-agent's
            ``algorithm.gamma``: 0.95).
        step_advantage_weight: omega, the weight of the step advantage (verl-agent's ``step_advantage_w``: 1).
        anchor: what makes two turns' states the same. ``observation``: the text the environment gave at that turn,
            the policy's prompt input (for history-based games, the whole history so far; grid games also show the
            turns left and the recent moves, so only states met at the same turn with the same recent moves group).
            ``state``: the environment's own state key (``BatchedTextEnv.state_key``; the grid games' board, the
            anchor verl-agent's Sokoban uses), for environments that define one.
    """

    name: str = "gigpo"
    advantage_norm: str = "mean_norm"
    episode_stats: str = "turns"
    step_gamma: float = 0.95
    step_advantage_weight: float = 1.0
    anchor: str = "observation"

    def validate(self) -> None:
        super().validate()
        check(0 <= self.step_gamma <= 1, "algorithm.step_gamma", "must be in [0, 1]")
        check(self.step_advantage_weight >= 0, "algorithm.step_advantage_weight", "must be >= 0 (0 is GRPO)")
        check_choice(self.anchor, "algorithm.anchor", ANCHORS)


# (new algorithm configs go above this line)
