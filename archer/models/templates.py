"""Prompt templates by name: how an environment observation becomes the text the policy continues.

A template is a plain function from observation to prompt. Generation and log-probability scoring both apply it,
so the policy is trained on exactly the prompts it samples from.
"""

from __future__ import annotations

from collections.abc import Callable

Template = Callable[[str], str]


def plain(observation: str) -> str:
    """The observation as is (the reference's GPT-2 setting)."""
    return observation


TEMPLATES: dict[str, Template] = {
    "plain": plain,
}


def get_template(name: str) -> Template:
    """The template registered under ``name``.

    Raises:
        ValueError: ``name`` is not registered; the message lists the valid names.
    """
    if name not in TEMPLATES:
        raise ValueError(f"model.policy.template: unknown template {name!r}; choose one of {', '.join(TEMPLATES)}")
    return TEMPLATES[name]
