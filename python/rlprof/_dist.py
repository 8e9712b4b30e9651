"""torch.distributed helpers for the Profiler: identity, one run id for all ranks, and each
rank's clock offset to rank 0. Imports torch only when the program already did."""
from __future__ import annotations

import sys
import time
from typing import Any, List, Optional


def torch_if_loaded() -> Optional[Any]:
    """The torch module when the program imported it, else None (rlprof never imports it)."""
    return sys.modules.get("torch")


def initialised() -> Optional[Any]:
    """torch.distributed when a default process group exists, else None."""
    torch = torch_if_loaded()
    if torch is None:
        return None
    dist = getattr(torch, "distributed", None)
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return None
    return dist


def _device(dist: Any) -> Any:
    import torch
    backend = str(dist.get_backend())
    if backend == "nccl" and torch.cuda.is_available():
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def broadcast_str(value: str) -> str:
    """Rank 0's `value` on every rank."""
    dist = initialised()
    if dist is None:
        return value
    holder = [value]
    dist.broadcast_object_list(holder, src=0)
    return str(holder[0])


def _boot_id() -> str:
    """The running kernel's boot id: processes that share it share CLOCK_MONOTONIC (containers of
    one host included). "" where it cannot be read."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return ""


def measure_offset_to_rank0(rounds: int = 8) -> int:
    """This rank's clock offset to rank 0 in ns (added to local CLOCK_MONOTONIC timestamps it
    gives rank 0's). A rank running under the same kernel as rank 0 (same boot id) reads the very
    same clock: its offset is exactly 0, not measured (a measurement would add its own error,
    ~0.1-1 ms on a busy host). Other ranks: by round trips with rank 0: rank r sends at t1, rank 0
    answers with its clock t0, rank r receives at t2; offset = t0 - (t1 + t2) / 2 from the round
    trip with the smallest t2 - t1 (best of `rounds`). Collective: every rank must call it. Rank
    0 gets 0."""
    dist = initialised()
    if dist is None or dist.get_world_size() == 1:
        return 0
    import torch
    dev = _device(dist)
    rank, world = dist.get_rank(), dist.get_world_size()
    boots: List[Any] = [None] * world
    dist.all_gather_object(boots, _boot_id())
    buf = torch.zeros(1, dtype=torch.int64, device=dev)
    best_rtt, best_offset = None, 0
    for peer in range(1, world):
        if boots[peer] and boots[peer] == boots[0]:
            continue  # one kernel, one clock: both sides know to skip
        for _ in range(rounds):
            if rank == 0:
                dist.recv(buf, src=peer)
                buf.fill_(time.monotonic_ns())
                dist.send(buf, dst=peer)
            elif rank == peer:
                t1 = time.monotonic_ns()
                dist.send(buf, dst=0)
                dist.recv(buf, src=0)
                t2 = time.monotonic_ns()
                t0 = int(buf.item())
                rtt = t2 - t1
                if best_rtt is None or rtt < best_rtt:
                    best_rtt, best_offset = rtt, t0 - (t1 + t2) // 2
    dist.barrier()
    return int(best_offset) if rank != 0 else 0
