"""Environment schemas (config group ``env``): a base schema with a ``name`` discriminator and one subclass per game.

They stay in the config layer rather than in the game packages (``archer/envs/<game>/``): ``register_configs``
registers them with Hydra, and the config layer sits below the games (``tests/unit/test_import_layers.py``), so it
may not import them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from omegaconf import MISSING

from archer.config.checks import check, check_choice, check_path


@dataclass
class EnvConfig:
    """Fields every environment has.

    Attributes:
        name: which environment (``twenty_questions``, ...); selects the builder.
        batch_size: games played at once by one environment object (reference ``bsize``: 32).
        max_turns: turns before the game is cut (reference ``max_conversation_length``: 20).
    """

    name: str = MISSING
    batch_size: int = 32
    max_turns: int = 20

    def validate(self) -> None:
        check(self.batch_size > 0, "env.batch_size", "must be positive")
        check(self.max_turns > 0, "env.max_turns", "must be positive")


@dataclass
class TwentyQuestionsEnvConfig(EnvConfig):
    """Twenty Questions (ARCHER_SPEC.md 3.1).

    Attributes:
        oracle: ``knowledge_base`` (built in, no download) or ``t5`` (the reference's fine-tuned flan-t5-small).
        oracle_path: the ``t5`` oracle's state dict (the reference's ``20q_t5_oracle.pt``).
        oracle_base_model: hub name or folder of the seq2seq model the state dict is loaded into.
        answer_normalisation: how the ``t5`` oracle's text becomes Yes/No: ``reference`` (substring test, as the
            reference) or ``word`` (whole words).
        words: ``full`` (157 words) or ``subset10`` (the reference's 10-word subset, "Twenty Questions Subset").
        success_check: ``last_word`` (the reference: the question's last word must be an alias, so 7 multi-word
            words can never be won) or ``last_phrase`` (fixed: the question must end with an alias, multi-word
            names such as "soccer ball" included).
    """

    name: str = "twenty_questions"
    oracle: str = "knowledge_base"
    oracle_path: str | None = None
    oracle_base_model: str = "google/flan-t5-small"
    answer_normalisation: str = "reference"
    words: str = "full"
    success_check: str = "last_word"

    def validate(self) -> None:
        super().validate()
        check_choice(self.oracle, "env.oracle", ("knowledge_base", "t5"))
        _check_oracle_paths(self.oracle_path, self.oracle_base_model)
        check_choice(self.answer_normalisation, "env.answer_normalisation", ("reference", "word"))
        check_choice(self.words, "env.words", ("full", "subset10"))
        check_choice(self.success_check, "env.success_check", ("last_word", "last_phrase"))
        if self.oracle == "t5":
            check(self.oracle_path is not None, "env.oracle_path", "the t5 oracle needs its checkpoint file")


@dataclass
class WebShopEnvConfig(EnvConfig):
    """WebShop (ARCHER_SPEC.md 3.5): the generated in-process shop, or a WebShop server over HTTP.

    Game id ``i`` plays instruction ``i`` (session ``fixed_<i>``); evaluation plays ids drawn from all instructions.

    Attributes:
        batch_size: games played at once (reference ``bsize``: 32).
        max_turns: actions per game; the game ends with the last one (reference: 10).
        num_products: products in the generated catalogue.
        shop_seed: seed of the generated catalogue and instructions.
        num_instructions: instructions that exist (game ids ``0 .. num_instructions - 1``).
        train_lower, train_upper: training games draw instructions from ``[train_lower, train_upper)`` with
            replacement (reference ``webshop_lower`` / ``webshop_upper``: 2000, 2100).
        show_attributes: show the ``[Attributes]`` button on item pages (the reference ran WebShop with ``--attrs``).
        server_url: ``null`` plays the in-process shop; an ``http://host:port`` URL plays a WebShop server
            (Princeton's ``web_agent_site`` or ``python -m archer.envs.webshop.server``) over HTTP.
        request_timeout_s: deadline in seconds for one HTTP request as a whole (connecting, headers and body), so a
            server that trickles its answer fails in time like one that sends nothing.
        request_retries: further attempts after a connection error, timeout or 5xx answer.
        retry_backoff_s: wait before the first retry, doubled for each further one.
        max_concurrent_requests: HTTP requests in flight at once (a batch's pages are fetched concurrently).
        data_lower, data_upper: instructions the scripted shoppers play when the offline dataset is generated
            (the paper's SFT data came from instructions 0-1000).
        data_option_accuracy: probability that a scripted shopper picks the option value the instruction names.
    """

    name: str = "webshop"
    batch_size: int = 32
    max_turns: int = 10
    num_products: int = 1000
    shop_seed: int = 0
    num_instructions: int = 3000
    train_lower: int = 2000
    train_upper: int = 2100
    show_attributes: bool = True
    server_url: str | None = None
    request_timeout_s: float = 10.0
    request_retries: int = 3
    retry_backoff_s: float = 0.5
    max_concurrent_requests: int = 16
    data_lower: int = 0
    data_upper: int = 1000
    data_option_accuracy: float = 0.8

    def validate(self) -> None:
        super().validate()
        check(self.num_products > 0, "env.num_products", "must be positive")
        check(self.num_instructions > 0, "env.num_instructions", "must be positive")
        for low, high in (("train_lower", "train_upper"), ("data_lower", "data_upper")):
            check(getattr(self, low) >= 0, f"env.{low}", "must be >= 0")
            check(getattr(self, high) > getattr(self, low), f"env.{high}", f"must be above env.{low}")
            check(
                getattr(self, high) <= self.num_instructions,
                f"env.{high}",
                f"must be at most env.num_instructions={self.num_instructions} (it is an exclusive bound)",
            )
        check(
            self.server_url is None or self.server_url.startswith(("http://", "https://")),
            "env.server_url",
            "must be null (in-process shop) or start with http:// or https://",
        )
        check(self.request_timeout_s > 0, "env.request_timeout_s", "must be positive")
        check(self.request_retries >= 0, "env.request_retries", "must be >= 0")
        check(self.retry_backoff_s >= 0, "env.retry_backoff_s", "must be >= 0")
        check(self.max_concurrent_requests > 0, "env.max_concurrent_requests", "must be positive")
        check(0 <= self.data_option_accuracy <= 1, "env.data_option_accuracy", "must be in [0, 1]")


@dataclass
class GuessMyCityEnvConfig(EnvConfig):
    """Guess My City (ARCHER_SPEC.md 3.3): find the oracle's home town among the reference's 91 cities.

    Attributes:
        oracle: ``knowledge_base`` (built in, no download) or ``t5`` (the reference's fine-tuned flan-t5-small,
            free-form answers).
        oracle_path: the ``t5`` oracle's state dict (the reference's ``city_t5_oracle.pt``).
        oracle_base_model: hub name or folder of the seq2seq model the state dict is loaded into.
        match: how a question wins and an answer leaks the city: ``reference`` (the reference's substring test, so
            any "climate" question wins for Lima; the default, to stay comparable) or ``word`` (any name of the
            city, aliases such as Mumbai included, on word boundaries). The leak check (the answer censor) uses the
            same rule and, in both modes, also catches any name of the city starting a longer word ("Kievan",
            "Shanghainese").
    """

    name: str = "guess_my_city"
    oracle: str = "knowledge_base"
    oracle_path: str | None = None
    oracle_base_model: str = "google/flan-t5-small"
    match: str = "reference"

    def validate(self) -> None:
        super().validate()
        check_choice(self.oracle, "env.oracle", ("knowledge_base", "t5"))
        _check_oracle_paths(self.oracle_path, self.oracle_base_model)
        check_choice(self.match, "env.match", ("reference", "word"))
        if self.oracle == "t5":
            check(self.oracle_path is not None, "env.oracle_path", "the t5 oracle needs its checkpoint file")


def _check_oracle_paths(oracle_path: str | None, base_model: str) -> None:
    check_path(oracle_path, "env.oracle_path", "give the t5 oracle's checkpoint file, or null")
    check_path(base_model, "env.oracle_base_model", "give a hub name or a folder")


def _check_noise_levels(levels: list[float], key: str) -> None:
    check(len(levels) > 0, key, "give at least one level")
    check(all(0 <= level <= 1 for level in levels), key, f"every level must be in [0, 1], got {levels}")


@dataclass
class AdventureEnvConfig(EnvConfig):
    """Detective, a Jericho text adventure (ARCHER_SPEC.md 3.4); needs ``pip install -e '.[jericho]'``.

    Attributes:
        batch_size: games played at once (the reference forced 4).
        max_turns: steps before a game is cut. The reference ran 50, which never reaches the walkthrough's winning
            51st move; 60 (the reference class's default) lets it win.
        game_path: the z-machine story file: Detective is ``dataset/detective.z5`` in the public GitHub repository
            YifeiZhou02/ArCHer (not shipped here). Relative paths are relative to the working directory.
        observation_format: ``labelled`` (the reference's content, each part under a label) or ``reference`` (the
            reference's unseparated concatenation with a Python list of valid actions).
        show_valid_actions: list Jericho's valid actions in the observation (the reference does). Each new game
            state then costs a Jericho search of 0.2-1 s on this CPU (cached per state).
        data_noise_levels: offline data: each generated episode follows the walkthrough but takes a random valid
            action instead with a probability drawn uniformly from these levels.
    """

    name: str = "adventure"
    batch_size: int = 8
    max_turns: int = 60
    game_path: str = "dataset/detective.z5"
    observation_format: str = "labelled"
    show_valid_actions: bool = True
    data_noise_levels: list[float] = field(default_factory=lambda: [0.0, 0.05, 0.1, 0.2, 0.3])

    def validate(self) -> None:
        super().validate()
        check_path(self.game_path, "env.game_path", "give the story file (Detective: dataset/detective.z5)")
        check_choice(self.observation_format, "env.observation_format", ("labelled", "reference"))
        _check_noise_levels(self.data_noise_levels, "env.data_noise_levels")


@dataclass
class GridEnvConfig(EnvConfig):
    """Fields the text grid games (FrozenLake, Sokoban) share.

    Attributes:
        batch_size: games played at once.
        max_turns: moves before a game is cut (RAGEN: 10 actions); every generated game is solvable within it.
        history_length: past moves listed in the observation.
        invalid_action_penalty: added to a turn's reward when the utterance names no move (no move happens either
            way; ``info["invalid_action"]`` marks the turn).
        data_epsilons: offline data: each generated episode follows the BFS solver but moves at random instead
            with a probability drawn uniformly from these levels.
    """

    name: str = MISSING
    batch_size: int = 32
    max_turns: int = 10
    history_length: int = 3
    invalid_action_penalty: float = 0.0
    data_epsilons: list[float] = field(default_factory=lambda: [0.0, 0.1, 0.25, 0.5, 1.0])

    def validate(self) -> None:
        super().validate()
        check(self.history_length >= 0, "env.history_length", "must be >= 0")
        check(self.invalid_action_penalty <= 0, "env.invalid_action_penalty", "must be <= 0 (it is a penalty)")
        _check_noise_levels(self.data_epsilons, "env.data_epsilons")


@dataclass
class FrozenLakeEnvConfig(GridEnvConfig):
    """FrozenLake as text (RAGEN's FrozenLake): reach the goal without falling into a hole; reward 1 on the goal.

    Attributes:
        size: side of the square map (RAGEN: 4).
        frozen_prob: probability that a generated cell is ice rather than a hole (RAGEN ``p``: 0.8).
        is_slippery: a move goes sideways with probability 2/3 (gymnasium's slippery lake; RAGEN: true).
        num_maps: distinct maps; game ``i`` is the map generated from seed ``i``.
    """

    name: str = "frozenlake"
    size: int = 4
    frozen_prob: float = 0.8
    is_slippery: bool = True
    num_maps: int = 10_000

    def validate(self) -> None:
        super().validate()
        check(self.size >= 2, "env.size", "must be at least 2")
        check(0 < self.frozen_prob <= 1, "env.frozen_prob", "must be in (0, 1]")
        check(self.num_maps > 0, "env.num_maps", "must be positive")


@dataclass
class SokobanEnvConfig(GridEnvConfig):
    """Sokoban as text (RAGEN's SimpleSokoban): push every box onto a target; gym-sokoban's rewards.

    Attributes:
        height, width: room size including the outer wall (RAGEN: 6 x 6).
        num_boxes: boxes per room (RAGEN SimpleSokoban: 1).
        num_rooms: distinct rooms; game ``i`` is the room generated from seed ``i``.
    """

    name: str = "sokoban"
    height: int = 6
    width: int = 6
    num_boxes: int = 1
    num_rooms: int = 10_000

    def validate(self) -> None:
        super().validate()
        check(self.height >= 4, "env.height", "must be at least 4 (2 cells inside the wall)")
        check(self.width >= 4, "env.width", "must be at least 4 (2 cells inside the wall)")
        check(self.num_boxes > 0, "env.num_boxes", "must be positive")
        check(
            2 * self.num_boxes + 2 <= (self.height - 2) * (self.width - 2),
            "env.num_boxes",
            f"too many boxes for a {self.height}x{self.width} room",
        )
        check(self.num_rooms > 0, "env.num_rooms", "must be positive")


# (new environment configs go above this line)
