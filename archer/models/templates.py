"""Prompt templates and action parsers by name.

A template turns an environment observation into the text the policy continues. Generation and log-probability
scoring both apply it, so the policy is trained on exactly the prompts it samples from. Plain templates are
functions of the observation (``TEMPLATES``); chat templates also need the tokenizer, to use its chat format and
its special tokens, and are built from it and a game's instruction (``CHAT_INSTRUCTIONS``, which each game's
``GameSpec`` brings). A game may bring plain templates too (the grid games' ``grid_state``).

A prompt over ``model.policy.max_prompt_tokens`` is cut inside the observation, never around it
(``LanguagePolicy.encode_prompts``): ``split_history`` splits the observation into its title and its turns, and the
oldest turns go first, so a chat prompt keeps its header, the game's instruction, the answer format and the
generation prompt.

An action parser turns the policy's generated text into the action the environment receives (``ACTION_PARSERS``):
an instruct model answers in a format ("{"Question": "Is it a dog?"}") from which the question is extracted. The
policy gradient still scores the generated token ids, not the parsed text.
"""

from __future__ import annotations

from collections.abc import Callable

from transformers import PreTrainedTokenizerBase

from archer.envs.registry import GAMES

Template = Callable[[str], str]
ActionParser = Callable[[str], str]


def plain(observation: str) -> str:
    """The observation as is (the reference's GPT-2 setting)."""
    return observation


TEMPLATES: dict[str, Template] = {
    "plain": plain,
    **{name: template for spec in GAMES.values() for name, template in spec.templates.items()},
}
"""Plain templates: ``plain`` and those the games bring (``GameSpec.templates``)."""


def split_history(observation: str) -> tuple[str, list[str]]:
    """The observation's title and its turns, oldest first: what a long prompt is cut along.

    A turn is one line, newline included: a question game's history is ``Questions:`` and one
    ``<question> <answer>`` line per turn (``archer.envs.question_game``). A first line that ends with a colon is the
    history's title, which a cut keeps. In observations of other shapes (a WebShop history, whose turns span
    several lines, or an adventure's state) a cut still falls between lines. ``title + "".join(turns)`` is the
    observation.
    """
    lines = [line + "\n" for line in observation.split("\n")]
    lines[-1] = lines[-1][:-1]  # the text after the last newline (empty when the observation ends with one)
    if not lines[-1]:
        lines.pop()
    if lines and lines[0].rstrip("\n").endswith(":"):
        return lines[0], lines[1:]
    return "", lines


# ---------------------------------------------------------------------------------------------------- chat prompts


def _adds_bos(tokenizer: PreTrainedTokenizerBase) -> bool:
    """Whether encoding a text puts the BOS token first by itself (Llama and Mistral tokenizers do)."""
    bos = tokenizer.bos_token_id
    return bos is not None and tokenizer("x")["input_ids"][:1] == [bos]


def chat_prompt(tokenizer: PreTrainedTokenizerBase, instruction: str) -> Template:
    """A template that puts ``instruction`` (with ``{history}`` for the observation) in one user turn.

    With a tokenizer that has a chat template, the turn is rendered by it with the generation prompt; otherwise the
    reference's ``[INST]...[/INST]`` format is used. A BOS the rendering starts with is dropped when the tokenizer
    adds BOS itself, so the encoded prompt has exactly one (the reference had two).
    """
    strip_bos = _adds_bos(tokenizer) and bool(tokenizer.bos_token)
    has_chat_template = bool(getattr(tokenizer, "chat_template", None))

    def render(observation: str) -> str:
        message = instruction.format(history=observation)
        if has_chat_template:
            text = tokenizer.apply_chat_template(
                [{"role": "user", "content": message}], tokenize=False, add_generation_prompt=True
            )
        else:
            text = f"[INST]{message}[/INST]\n"
        if strip_bos:
            text = text.removeprefix(tokenizer.bos_token)
        return text

    return render


CHAT_INSTRUCTIONS: dict[str, str] = {
    name: instruction for spec in GAMES.values() for name, instruction in spec.chat_instructions.items()
}
"""Every game's chat instructions by template name (``GameSpec.chat_instructions``): a game brings its prompts."""


def get_template(name: str, tokenizer: PreTrainedTokenizerBase | None = None) -> Template:
    """The template registered under ``name``; chat templates are built for ``tokenizer``.

    Raises:
        ValueError: ``name`` is not registered (the message lists the valid names), or a chat template was asked
            for without a tokenizer.
    """
    if name in TEMPLATES:
        return TEMPLATES[name]
    if name in CHAT_INSTRUCTIONS:
        if tokenizer is None:
            raise ValueError(f"model.policy.template: {name!r} is a chat template and needs the policy's tokenizer")
        return chat_prompt(tokenizer, CHAT_INSTRUCTIONS[name])
    names = [*TEMPLATES, *CHAT_INSTRUCTIONS]
    raise ValueError(f"model.policy.template: unknown template {name!r}; choose one of {', '.join(names)}")


# ---------------------------------------------------------------------------------------------------- action parsers


def unchanged(text: str) -> str:
    """The generated text as is."""
    return text


def json_question(text: str) -> str:
    """The question in an instruct model's ``{"Question": "..."}`` answer (the reference's ``decode_f``).

    Takes the text after the last ``"Question":`` (the whole text when there is none), cuts it at the first
    ``?``, re-appends ``?`` and strips spaces and double quotes, as the reference did. So that the question is
    always one line: when the cut text spans several lines its last non-empty line is kept (the lead-in lines of
    "Sure! Here is my question:\\nIs it alive?"), and when there is no ``?`` at all the first non-empty line is
    used (with trailing commas and braces removed) before ``?`` is appended.
    """
    key = '"Question":'
    segment = text.rsplit(key, 1)[1] if key in text else text
    if "?" in segment:
        lines = [line for line in segment.split("?", 1)[0].splitlines() if line.strip()]
        question = lines[-1] if lines else ""
    else:
        lines = [line for line in segment.splitlines() if line.strip()]
        question = lines[0].rstrip().rstrip(",{}").rstrip() if lines else ""
    return question.strip().replace('"', "").strip() + "?"


ACTION_PARSERS: dict[str, ActionParser] = {
    "none": unchanged,
    "json_question": json_question,
}


def get_action_parser(name: str) -> ActionParser:
    """The action parser registered under ``name``.

    Raises:
        ValueError: ``name`` is not registered; the message lists the valid names.
    """
    if name not in ACTION_PARSERS:
        raise ValueError(
            f"model.policy.action_parser: unknown parser {name!r}; choose one of {', '.join(ACTION_PARSERS)}"
        )
    return ACTION_PARSERS[name]
