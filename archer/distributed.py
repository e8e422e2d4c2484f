"""What changes when a run spans several processes: sharing work, exchanging data, averaging gradients.

Every process plays its share of the games; the trajectories are exchanged in memory (no files, no sleeps) and
every process adds all of them, in process order, to its own identical replay buffer. Each process then samples
its own minibatches (its own generator), and gradients are averaged over processes before each network's
clipping and step, so every process applies the same update and the networks stay identical. With one process
every function here is the identity. A sharded policy (``model.policy.shard=fsdp``) is the exception to full copies:
see ``archer/models/sharding.py``.

``Placement`` gathers all of this into the one object the trainer, evaluation and checkpointing consult: which
process this is, on which device, how work splits, and whether the policy is sharded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from datetime import timedelta
from typing import Any, TypeVar

import torch
from accelerate import Accelerator
from accelerate.utils import DistributedType, InitProcessGroupKwargs, gather_object
from torch import nn
from torch.distributed.tensor import DTensor

from archer.models.loading import policy_weights
from archer.models.sharding import full_state, gathered, is_sharded, shard_like, shard_policy

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


def make_accelerator(process_group_timeout_s: float) -> Accelerator:
    """The run's ``Accelerator`` (on the CPU when there is no GPU), after refusing settings archer would ignore."""
    timeout = InitProcessGroupKwargs(timeout=timedelta(seconds=process_group_timeout_s))
    accelerator = Accelerator(cpu=not torch.cuda.is_available(), kwargs_handlers=[timeout])
    check_launch(accelerator)
    return accelerator


def check_launch(accelerator: Accelerator) -> None:
    """Refuse Accelerate settings that would be silently ignored: archer never calls ``accelerator.prepare``.

    Raises:
        ValueError: an Accelerate FSDP or DeepSpeed launch, or Accelerate mixed precision.
    """
    if accelerator.distributed_type in (DistributedType.FSDP, DistributedType.DEEPSPEED):
        raise ValueError(
            f"launched with an Accelerate {accelerator.distributed_type.value} config, which archer does not use: "
            "launch with scripts/accelerate/multi_gpu.yaml or sharded_7b.yaml, and set model.policy.shard=fsdp to "
            "shard the policy"
        )
    if accelerator.mixed_precision != "no":
        raise ValueError(
            f"launched with Accelerate mixed_precision={accelerator.mixed_precision}, which archer does not use; set "
            "mixed_precision 'no' and choose each network's precision with model.policy.dtype and model.critic.dtype"
        )


class Placement:
    """Where a run's work and weights live: this process among ``num_processes``, its device, and whether the policy
    is sharded (``model.policy.shard=fsdp``).

    The one object through which the trainer, evaluation and checkpointing split work, exchange results and handle a
    sharded policy; they never test for sharding themselves. With one process (or no ``accelerator``, for
    single-process tools) every method is the identity.

    Args:
        accelerator: the run's accelerator; ``None`` for one process on the GPU if there is one, else the CPU.
        shard_policy: shard the policy that ``place_policy`` receives (it is, with more than one process).
    """

    def __init__(self, accelerator: Accelerator | None = None, shard_policy: bool = False) -> None:
        self.accelerator = accelerator
        self.shard_policy = shard_policy
        #: Whether ``place_policy`` sharded the policy.
        self.sharded = False

    @property
    def process_index(self) -> int:
        return self.accelerator.process_index if self.accelerator is not None else 0

    @property
    def num_processes(self) -> int:
        return self.accelerator.num_processes if self.accelerator is not None else 1

    @property
    def is_main_process(self) -> bool:
        return self.process_index == 0

    @property
    def device(self) -> torch.device:
        if self.accelerator is not None:
            return self.accelerator.device
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")

    def wait(self) -> None:
        """Wait until every process gets here."""
        if self.accelerator is not None:
            self.accelerator.wait_for_everyone()

    def main_process_first(self) -> Any:
        """A context in which the main process runs first (so it alone builds what the others then load)."""
        return self.accelerator.main_process_first() if self.accelerator is not None else nullcontext()

    # ---- splitting work ----------------------------------------------------------------------------------------

    def share(self, total: int) -> int:
        """This process's share of ``total`` games (``share``)."""
        return share(total, self.accelerator) if self.accelerator is not None else total

    def shard(self, items: Sequence[T]) -> list[T]:
        """This process's items of ``items`` (``shard``)."""
        return shard(items, self.accelerator) if self.accelerator is not None else list(items)

    def unshard(self, local: list[T], total: int) -> list[T]:
        """Every process's ``shard`` results, in the original order (``unshard``)."""
        return unshard(local, total, self.accelerator) if self.accelerator is not None else local

    def all_gather(self, local: list[T]) -> list[T]:
        """Every process's list, in process order (``all_gather``)."""
        return all_gather(local, self.accelerator) if self.accelerator is not None else local

    # ---- the policy's weights ----------------------------------------------------------------------------------

    def place_policy(self, model: nn.Module) -> nn.Module:
        """``model`` on this process's device, sharded first if asked (call it before building optimisers:
        sharding replaces the parameters)."""
        if self.shard_policy and self.accelerator is not None:
            model = shard_policy(model, self.accelerator)
            self.sharded = is_sharded(model)
        return model.to(self.device)

    @contextmanager
    def gathered(self, model: nn.Module) -> Iterator[None]:
        """Hold a sharded ``model``'s full weights for a whole phase of play (``sharding.gathered``); a collective.
        Nothing happens for an unsharded model."""
        with gathered(model):
            yield

    def on_main(self, make: Callable[[], Any]) -> Any:
        """``make()`` for the main process, sharded tensors gathered whole (``sharding.full_state``); ``None`` on the
        other processes. Every process must call it: with a sharded policy every process runs ``make`` and the
        gathering is a collective; otherwise only the main process runs ``make``."""
        if self.sharded:
            state = full_state(make(), self.is_main_process)
            return state if self.is_main_process else None
        return make() if self.is_main_process else None

    def full_weights(self, model: nn.Module) -> dict[str, torch.Tensor] | None:
        """The full weights to export for a sharded ``model`` (a collective), ``None`` for an unsharded one (it
        writes its own)."""
        return full_state(policy_weights(model), self.is_main_process) if is_sharded(model) else None

    def split_like(self, state: Any, live: Callable[[], Any]) -> Any:
        """Loaded full tensors ``state`` split like the live state that ``live`` returns (``sharding.shard_like``;
        e.g. ``module.state_dict``); ``state`` itself, without calling ``live``, when the policy is not sharded."""
        return shard_like(state, live()) if self.sharded else state
