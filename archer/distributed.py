"""What changes when a run spans several processes: sharing work, exchanging data, averaging gradients.

Every process plays its share of the games; the trajectories are exchanged in memory (no files, no sleeps) and
every process adds all of them, in process order, to its own identical replay buffer. Each process then samples
its own minibatches (its own generator), and gradients are averaged over processes before each network's
clipping and step, so every process applies the same update and the networks stay identical. With one process
every function here is the identity. A sharded policy (``model.policy.shard=fsdp``) is the exception to full copies:
see ``archer/models/sharding.py``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TypeVar

import torch
from accelerate import Accelerator
from accelerate.utils import gather_object
from torch.distributed.tensor import DTensor

T = TypeVar("T")


def share(total: int, accelerator: Accelerator) -> int:
    """This process's share of ``total`` items; ``total`` must divide evenly."""
    world = accelerator.num_processes
    if total % world:
        raise ValueError(f"{total} games cannot be split evenly over {world} processes; use a multiple of {world}")
    return total // world


def shard(items: Sequence[T], accelerator: Accelerator) -> list[T]:
    """Every ``num_processes``-th item, starting at this process's index (the shards interleave)."""
    return list(items[accelerator.process_index :: accelerator.num_processes])


def unshard(local: list[T], total: int, accelerator: Accelerator) -> list[T]:
    """Gather the shards made by ``shard`` from every process and restore the original order."""
    if accelerator.num_processes == 1:
        return local
    gathered = gather_object([local])
    merged: list[T | None] = [None] * total
    for rank, part in enumerate(gathered):
        merged[rank :: accelerator.num_processes] = part
    return merged  # type: ignore[return-value]


def all_gather(local: list[T], accelerator: Accelerator) -> list[T]:
    """Concatenate every process's list, in process order (identical on every process)."""
    if accelerator.num_processes == 1:
        return local
    return [item for part in gather_object([local]) for item in part]


def average_gradients(parameters: Iterable[torch.nn.Parameter], accelerator: Accelerator) -> None:
    """Replace each gradient by its mean over processes (one flattened all-reduce; missing gradients count as 0).

    Sharded parameters (``DTensor``, ``model.policy.shard=fsdp``) are skipped: FSDP already averaged their
    gradients in the backward pass, and each process holds a different shard, so an all-reduce would mix them.
    """
    if accelerator.num_processes == 1:
        return
    params = [p for p in parameters if p.requires_grad and not isinstance(p, DTensor)]
    if not params:
        return
    grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
    flat = torch.cat([g.reshape(-1) for g in grads])
    torch.distributed.all_reduce(flat, op=torch.distributed.ReduceOp.SUM)
    flat /= accelerator.num_processes
    offset = 0
    for param in params:
        count = param.numel()
        param.grad = flat[offset : offset + count].view_as(param).clone()
        offset += count
