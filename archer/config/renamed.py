"""Keys that moved when the settings several algorithms share became groups, and the message that names their place.

An old key path is refused, not mapped: a YAML file or command line written for the old layout then says what to
change, and every run folder's saved config (which a resume compares) spells each key one way. Hydra refuses an old
key while composing, before any schema code runs; ``renamed_key_message`` turns that refusal into one naming the
new key, for ``archer.cli`` to raise or print.
"""

from __future__ import annotations

import re

#: old key path -> the key path that holds the setting now.
RENAMED_KEYS = {
    "algorithm.critic_lr": "algorithm.critic.lr",
    "algorithm.gamma": "algorithm.critic.gamma",
    "algorithm.tau": "algorithm.critic.tau",
    "algorithm.critic_micro_batch_size": "algorithm.critic.micro_batch_size",
    "algorithm.bootstrap_on_truncation": "algorithm.critic.bootstrap_on_truncation",
    "algorithm.rollout_episodes_per_iter": "algorithm.rollout.episodes_per_iter",
    "algorithm.replay_capacity": "algorithm.rollout.replay_capacity",
}

# OmegaConf names the key it refused on a line of its own, in the error or in the error's cause.
_FULL_KEY = re.compile(r"full_key: (\S+)")


def renamed_key_message(error: BaseException) -> str | None:
    """The message for a composition ``error`` that refused a renamed key, or None for any other error."""
    text = f"{error}\n{error.__cause__ or ''}"
    for key in _FULL_KEY.findall(text):
        if key in RENAMED_KEYS:
            return (
                f"{key}: this key is now {RENAMED_KEYS[key]} (settings several algorithms share moved into the "
                "algorithm.rollout and algorithm.critic groups; an algorithm without the group has no such setting)"
            )
    return None
