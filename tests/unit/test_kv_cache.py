"""archer.models.kv_cache: the cache keyword is read off the model's own ``forward`` (``past_key_values`` before
transformers 5.24, ``cache`` from it), through DDP/PEFT wrappers, and a cached decode passes it without the
deprecated name."""

from __future__ import annotations

import warnings
from types import SimpleNamespace

import pytest
import torch
from transformers import DynamicCache, GPT2Config, GPT2LMHeadModel

from archer.models.kv_cache import base_model, cache_argument, cache_keyword, returned_cache


class OldStyle(torch.nn.Module):
    def forward(self, input_ids, past_key_values=None, position_ids=None):  # noqa: ANN001
        return input_ids


class NewStyle(torch.nn.Module):
    def forward(self, input_ids, cache=None, position_ids=None):  # noqa: ANN001
        return input_ids


class NoCache(torch.nn.Module):
    def forward(self, input_ids, **kwargs):  # noqa: ANN001, ANN003
        return input_ids


class PeftLike(torch.nn.Module):
    """A wrapper whose own ``forward`` takes ``**kwargs``, as PEFT's does."""

    def __init__(self, inner: torch.nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def get_base_model(self) -> torch.nn.Module:
        return self.inner

    def forward(self, *args, **kwargs):  # noqa: ANN002, ANN003
        return self.inner(*args, **kwargs)


def test_the_keyword_is_the_one_forward_names_through_wrappers() -> None:
    assert cache_keyword(OldStyle()) == "past_key_values"
    assert cache_keyword(NewStyle()) == "cache"
    assert cache_keyword(PeftLike(OldStyle())) == "past_key_values"
    assert base_model(PeftLike(NewStyle())).__class__ is NewStyle
    assert cache_keyword(NoCache()) is None
    marker = object()
    assert cache_argument(PeftLike(NewStyle()), marker) == {"cache": marker}
    assert cache_argument(OldStyle(), marker) == {"past_key_values": marker}
    assert cache_argument(NoCache(), None) == {}
    with pytest.raises(ValueError, match="NoCache.forward takes no key/value cache"):
        cache_argument(NoCache(), marker)


def test_the_returned_cache_is_read_under_either_name() -> None:
    first, second = object(), object()
    assert returned_cache(SimpleNamespace(past_key_values=first)) is first
    assert returned_cache(SimpleNamespace(cache=second, past_key_values=first)) is second
    assert returned_cache(SimpleNamespace(cache=None, past_key_values=first)) is first
    assert returned_cache(SimpleNamespace(logits=1)) is None


def test_the_installed_gpt2_continues_from_its_cache_as_from_the_full_input() -> None:
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=40, n_positions=32)).eval()
    ids = torch.tensor([[3, 5, 7, 9, 11]])
    with torch.no_grad(), warnings.catch_warnings():
        # The name the model takes is never the deprecated one.
        warnings.filterwarnings("error", message=".*past_key_values.*deprecated")
        prefix = model(ids[:, :3], use_cache=True, **cache_argument(model, DynamicCache()))
        cache = returned_cache(prefix)
        assert cache is not None and cache.get_seq_length() == 3
        rest = model(ids[:, 3:], use_cache=True, **cache_argument(model, cache))
        full = model(ids)
    torch.testing.assert_close(rest.logits, full.logits[:, 3:], rtol=0, atol=1e-5)
