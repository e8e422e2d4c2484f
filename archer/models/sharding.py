"""A fully sharded policy (FSDP2) for models too large to keep a full copy of on every process (7B and up).

With ``model.policy.shard: fsdp`` the policy's parameters, gradients and optimiser states are split over the
processes with ``torch.distributed.fsdp.fully_shard``: every transformer block is one unit, the rest of the model
(embeddings, final norm, head) another. What this changes for the rest of the trainer:

- Training forwards and backwards gather each block's weights just in time and reduce-scatter its gradient,
  averaged over processes; the parameters are ``DTensor``s, which ``average_gradients`` therefore skips.
- Generation gathers the whole model once (``gathered``: per ``generate`` call, or once around a whole rollout
  phase) and then decodes without collectives. Per-token gathering would need every process to make the same
  number of forward passes, which rollouts cannot promise: one process's games end turns before another's.
- Checkpoints hold full tensors (``full_state``), so a sharded run writes exactly the checkpoint an unsharded run
  writes; loading splits them again (``shard_like``; optimiser states lazily, ``shard_optimizer_state``).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
from accelerate import Accelerator
from torch import nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import FSDPModule, fully_shard
from torch.distributed.tensor import DTensor, distribute_tensor

# Set on the root module while ``gathered`` holds the full weights, so nested uses gather nothing.
_GATHERED = "_archer_gathered"


def is_sharded(model: nn.Module) -> bool:
    """Whether ``model`` was sharded by ``shard_policy``."""
    return isinstance(model, FSDPModule)


def _block_classes(model: nn.Module) -> set[str]:
    """Class names of the model's transformer blocks (Hugging Face's ``_no_split_modules``, e.g. ``GPT2Block``)."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return set(getattr(base, "_no_split_modules", None) or ())


def shard_policy(model: nn.Module, accelerator: Accelerator) -> nn.Module:
    """Shard ``model`` over all processes (FSDP2) and make its ``generate`` gather the full weights first.

    Call it before any optimiser is built: the parameters become ``DTensor`` shards. With one process the model is
    returned unchanged. The model may still be on the CPU: FSDP moves each unit to ``accelerator.device`` as it
    shards it, so the device holds one unit in full at a time, never the whole model.

    Args:
        model: a Hugging Face causal LM, plain or ``peft.PeftModel``.
        accelerator: gives the processes and the device.

    Returns:
        The same module object, now an ``FSDPModule``.

    Raises:
        ValueError: the model declares no transformer block class (``_no_split_modules``) to shard by.
    """
    if accelerator.num_processes == 1:
        return model
    blocks = _block_classes(model)
    units = [module for module in model.modules() if type(module).__name__ in blocks]
    if not units:
        raise ValueError(
            f"model.policy.shard=fsdp: {type(model).__name__} declares no transformer block class "
            "(_no_split_modules) to shard by; use model.policy.shard=none"
        )
    mesh = init_device_mesh(accelerator.device.type, (accelerator.num_processes,))
    for unit in units:
        fully_shard(unit, mesh=mesh, reshard_after_forward=True)
    # The root keeps its (small) weights gathered from forward to backward, FSDP2's own choice for a root.
    fully_shard(model, mesh=mesh, reshard_after_forward=False)
    # FSDP takes the first unit to run a forward as its root, and a peft model's generate reaches the blocks without
    # the root's forward: run the root once now (one token), then free its gathered weights.
    with torch.no_grad():
        model(input_ids=torch.zeros((1, 1), dtype=torch.long, device=accelerator.device))
    model.reshard()
    generate = model.generate

    @functools.wraps(generate)
    def gathered_generate(*args: Any, **kwargs: Any) -> Any:
        # synced_gpus would keep finished processes stepping in lock-step; with the weights gathered there are
        # no collectives inside generate, so each process stops when its own sequences are done.
        with gathered(model):
            return generate(*args, synced_gpus=False, **kwargs)

    model.generate = gathered_generate
    return model


@contextmanager
def gathered(model: nn.Module) -> Iterator[None]:
    """Hold the full weights of a sharded ``model`` on every process, so forwards inside need no collectives.

    Entering and leaving are collectives (every process must do both); nested uses and unsharded models do
    nothing. The gathered weights cost a full copy of the model per process while the block runs.
    """
    if not is_sharded(model) or getattr(model, _GATHERED, False):
        yield
        return
    units = [module for module in model.modules() if isinstance(module, FSDPModule)]
    for unit in units:
        unit.set_reshard_after_forward(False, recurse=False)
        unit.unshard()
    setattr(model, _GATHERED, True)
    try:
        yield
    finally:
        setattr(model, _GATHERED, False)
        for unit in units:
            unit.set_reshard_after_forward(unit is not model, recurse=False)
            unit.reshard()


def full_state(value: Any, keep: bool) -> Any:
    """``value`` (nested dicts, lists and tensors) with every ``DTensor`` replaced by its full tensor on the CPU.

    A collective: every process must call it on the same structure. Only processes with ``keep`` get the full
    tensors (the others get ``None`` in their place), so the full copy costs host memory on the saving process only.
    """
    if isinstance(value, DTensor):
        full = value.full_tensor()
        return full.cpu() if keep else None
    if isinstance(value, dict):
        return {key: full_state(item, keep) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(full_state(item, keep) for item in value)
    return value


def shard_like(value: Any, live: Any) -> Any:
    """``value`` (e.g. a loaded checkpoint) with each tensor split like the ``DTensor`` at the same place in ``live``.

    ``live`` is the current state (``module.state_dict()``); places where it holds no ``DTensor`` keep ``value``
    as it is. Every process holds the full tensor, so splitting needs no communication.
    """
    if isinstance(live, DTensor) and isinstance(value, torch.Tensor) and not isinstance(value, DTensor):
        return distribute_tensor(value.to(live.device), live.device_mesh, live.placements, src_data_rank=None)
    if isinstance(value, dict) and isinstance(live, dict):
        return {key: shard_like(item, live[key]) if key in live else item for key, item in value.items()}
    return value


def shard_optimizer_state(optimizer: torch.optim.Optimizer) -> None:
    """Split full-size state tensors of sharded parameters (as loaded from a checkpoint) like their parameter.

    ``Optimizer.load_state_dict`` restores a checkpoint's full tensors as they are; a step on ``DTensor``
    parameters needs them sharded. Tensors already sharded, and scalars such as Adam's ``step``, are left alone.
    """
    for group in optimizer.param_groups:
        for param in group["params"]:
            if not isinstance(param, DTensor):
                continue
            state = optimizer.state.get(param, {})
            for key, item in state.items():
                if isinstance(item, torch.Tensor) and not isinstance(item, DTensor) and item.shape == param.shape:
                    state[key] = shard_like(item, param)


def sharded_grad_norm(parameters: Iterable[nn.Parameter]) -> torch.Tensor | None:
    """The total L2 norm of the parameters' gradients when any of them is sharded, else ``None``.

    Sharded gradients contribute through a collective (every process must call this); unsharded ones are
    already identical on every process.
    """
    grads = [p.grad for p in parameters if p.grad is not None]
    sharded = [g for g in grads if isinstance(g, DTensor)]
    if not sharded:
        return None
    norms = [torch.nn.utils.get_total_norm(sharded).full_tensor()]
    plain = [g for g in grads if not isinstance(g, DTensor)]
    if plain:
        norms.append(torch.nn.utils.get_total_norm(plain).to(norms[0].device))
    return torch.linalg.vector_norm(torch.stack(norms))
