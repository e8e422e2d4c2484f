"""The keyword under which a Hugging Face model takes and returns its key/value cache.

transformers 5.24 renamed ``past_key_values`` to ``cache`` (in ``forward``, ``generate`` and the outputs; the old
name is deprecated there and goes in 6.0). Cache reuse asks the model's own ``forward`` which name it takes, so the
same code runs on either side of the rename.
"""

from __future__ import annotations

import inspect
from typing import Any

import torch

CACHE_KEYWORDS = ("cache", "past_key_values")  # the current name first


def base_model(model: torch.nn.Module) -> torch.nn.Module:
    """The model inside a DistributedDataParallel and/or PEFT wrapper (whose ``forward`` takes ``**kwargs``)."""
    if isinstance(model, torch.nn.parallel.DistributedDataParallel):
        model = model.module
    return model.get_base_model() if hasattr(model, "get_base_model") else model


def cache_keyword(model: torch.nn.Module) -> str | None:
    """``cache`` or ``past_key_values``, whichever the model's ``forward`` names; None if it takes neither."""
    parameters = inspect.signature(base_model(model).forward).parameters
    return next((name for name in CACHE_KEYWORDS if name in parameters), None)


def cache_argument(model: torch.nn.Module, cache: Any) -> dict[str, Any]:
    """``{keyword: cache}`` for a ``forward`` or ``generate`` call; empty when there is no cache to pass."""
    if cache is None:
        return {}
    keyword = cache_keyword(model)
    if keyword is None:
        raise ValueError(f"{type(base_model(model)).__name__}.forward takes no key/value cache")
    return {keyword: cache}


def returned_cache(output: Any) -> Any:
    """The cache a ``forward`` or ``generate`` output carries, under either name (None when it has none)."""
    for name in CACHE_KEYWORDS:
        cache = getattr(output, name, None)
        if cache is not None:
            return cache
    return None
