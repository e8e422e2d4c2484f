"""A token value model trained beside the policy: what token-level PPO and baselined ArCHer share.

``TokenValueMixin`` gives an algorithm a ``TokenValueModel`` (``value_model``) with its own Adam optimiser
(``value_optimizer``, at the config's ``value_lr``), its clipped gradient step and its place in ``networks`` and the
checkpoint (keys ``value_model`` and ``value_optimizer``). The config is a ``ValueModelMixin`` config.
"""

from __future__ import annotations

from typing import Any

import torch

from archer.algorithms.accumulation import clip_and_step
from archer.algorithms.base import Algorithm
from archer.models.policy import LanguagePolicy
from archer.models.token_value import TokenValueModel, build_token_value_model


class TokenValueMixin(Algorithm):
    """Listed before the algorithm's base class (``class PPOAlgorithm(TokenValueMixin, OnPolicyGamesAlgorithm)``), so
    its ``networks``, ``state_dict`` and ``load_state_dict`` add the value model to the base's; the algorithm's
    ``__init__`` calls ``init_value_model`` after the base's."""

    value_model: TokenValueModel
    value_optimizer: torch.optim.Optimizer

    def init_value_model(self, policy: LanguagePolicy, value_model: TokenValueModel | None) -> None:
        """Take ``value_model``, or load one with ``build_token_value_model(policy)``, and build its optimiser."""
        self.value_model = value_model if value_model is not None else build_token_value_model(policy)
        self.value_optimizer = torch.optim.Adam(
            [p for p in self.value_model.parameters() if p.requires_grad], lr=self.cfg.value_lr
        )

    def step_value_model(self) -> float:
        """Clip the value model's gradient to ``value_max_grad_norm`` and step its optimiser; the norm before
        clipping."""
        return clip_and_step(
            self.accelerator, self.value_optimizer, self.value_model.parameters(), self.cfg.value_max_grad_norm
        )

    def networks(self) -> dict[str, torch.nn.Module]:
        return {**super().networks(), "value_model": self.value_model}

    def state_dict(self) -> dict[str, Any]:
        return {
            **super().state_dict(),
            "value_model": self.value_model.state_dict(),
            "value_optimizer": self.value_optimizer.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        self.value_model.load_state_dict(state["value_model"])
        self.value_optimizer.load_state_dict(state["value_optimizer"])
