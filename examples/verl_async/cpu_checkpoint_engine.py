"""A CPU checkpoint engine for verl 0.9's disaggregated (async) recipes: example code for running
verl without GPUs, like examples/verl_grpo/cpu_platform (not part of rlprof).

verl's default engine for fully_async / one_step_off (`nccl`) imports cupy and broadcasts CUDA
buffers over NCCL. This one moves the same buckets over gloo, with CPU buffers:

  * actor rank 0 is the sender; each rollout worker (verl's CheckpointEngineWorker, one per
    rollout rank) is a receiver; other actor ranks only walk their weight generator (producing
    a weight can be collective over the actor group);
  * every sync builds a private gloo group (a TCPStore hosted by the sender, a
    `ProcessGroupGloo` object that is not registered as torch.distributed's default group, so the
    FSDP worker's own default group is untouched) and drops it in `finalize`;
  * weights are cut into buckets of `update_weights_bucket_megabytes`; per bucket the sender
    broadcasts a length-prefixed pickled header (tensor metadata, last-bucket flag) and then the
    bucket; receivers rebuild the tensors and yield them to verl's server adapter.

Use it with
    actor_rollout_ref.rollout.checkpoint_engine.custom_backend_module=cpu_checkpoint_engine
    actor_rollout_ref.rollout.checkpoint_engine.backend=cpu_gloo
and this folder on PYTHONPATH (examples/verl_async/run.sh does both).
"""
from __future__ import annotations

import asyncio
import datetime
import logging
import os
import pickle
import time
from dataclasses import dataclass
from typing import Any, AsyncGenerator, Generator, List, Optional, Tuple

import ray
import torch
import torch.distributed as dist

from verl.checkpoint_engine.base import CheckpointEngine, CheckpointEngineRegistry
from verl.workers.rollout.utils import ensure_async_iterator

logger = logging.getLogger(__name__)
logger.setLevel(os.getenv("VERL_LOGGING_LEVEL", "WARN"))

_TIMEOUT = datetime.timedelta(seconds=int(os.getenv("CPU_CKPT_TIMEOUT_S", "600")))


@dataclass
class _Master:
    host: str
    port: int


@dataclass
class _Entry:
    """One tensor (or a slice of a large one) inside a bucket."""
    name: str
    shape: Tuple[int, ...]
    dtype: torch.dtype
    offset: int          # in the bucket, bytes
    nbytes: int          # of this slice
    part_offset: int     # of this slice in the whole tensor, bytes
    total_nbytes: int    # of the whole tensor


@CheckpointEngineRegistry.register("cpu_gloo")
class CPUGlooCheckpointEngine(CheckpointEngine):
    def __init__(self, bucket_size: int, is_master: bool = False, **_: Any) -> None:
        self.bucket_size = int(bucket_size)
        self.is_master = is_master
        self.rank: Optional[int] = None
        self.world_size: Optional[int] = None
        self._store: Any = None
        self._pg: Any = None
        self.last_bytes = 0

    # ---- topology ---------------------------------------------------------------------------
    def prepare(self) -> Optional[_Master]:
        if not self.is_master:
            return None
        host = ray.util.get_node_ip_address().strip("[]")
        # port 0: the store picks a free port; it lives until finalize()
        self._store = dist.TCPStore(host, 0, is_master=True, wait_for_workers=False,
                                    timeout=_TIMEOUT)
        return _Master(host=host, port=self._store.port)

    @classmethod
    def build_topology(cls, actor_wg_world_size: int, rollout_world_size: int, metadata: List[Any]):
        master = metadata[0]
        assert isinstance(master, _Master), "actor rank 0 must be the checkpoint engine master"
        world = 1 + rollout_world_size
        actor = {"rank": [0] + [-1] * (actor_wg_world_size - 1),
                 "world_size": [world] * actor_wg_world_size,
                 "master": [master] * actor_wg_world_size}
        rollout = {"rank": list(range(1, world)), "world_size": [world] * rollout_world_size,
                   "master": [master] * rollout_world_size}
        return actor, rollout

    def init_process_group(self, rank: int, world_size: int, master: _Master) -> None:
        self.rank, self.world_size = rank, world_size
        if rank < 0:
            return
        if self._store is None:
            self._store = dist.TCPStore(master.host, master.port, is_master=False, timeout=_TIMEOUT)
        # A fresh namespace per group: the store outlives nothing but this sync.
        self._pg = dist.ProcessGroupGloo(dist.PrefixStore("cpu_ckpt", self._store), rank,
                                         world_size, _TIMEOUT)

    def finalize(self) -> None:
        self._pg = None
        self._store = None
        self.rank = self.world_size = None

    # ---- transport --------------------------------------------------------------------------
    def _bcast(self, t: torch.Tensor) -> None:
        self._pg.broadcast(t, 0).wait()

    def _send_bucket(self, buf: torch.Tensor, entries: List[_Entry], last: bool) -> None:
        n = max((e.offset + e.nbytes for e in entries), default=0)
        head = pickle.dumps((entries, last, n))
        self._bcast(torch.tensor([len(head)], dtype=torch.int64))
        self._bcast(torch.frombuffer(bytearray(head), dtype=torch.uint8))
        if n:
            self._bcast(buf[:n])

    def _recv_bucket(self) -> Tuple[List[_Entry], bool, torch.Tensor]:
        size = torch.zeros(1, dtype=torch.int64)
        self._bcast(size)
        head = torch.empty(int(size.item()), dtype=torch.uint8)
        self._bcast(head)
        entries, last, n = pickle.loads(head.numpy().tobytes())
        buf = torch.empty(n, dtype=torch.uint8)   # a fresh buffer per bucket: yielded views stay valid
        if n:
            self._bcast(buf)
        return entries, last, buf

    @torch.no_grad()
    async def send_weights(self, weights: Generator[Tuple[str, torch.Tensor], None, None],
                           global_steps: Optional[int] = None):
        assert self.rank is not None and self.rank <= 0, "rollout workers do not send"
        if self.rank < 0:  # walk the generator: producing a weight can be collective
            async for _ in ensure_async_iterator(weights):
                pass
            return {}
        start, total = time.time(), 0
        buf = torch.empty(self.bucket_size, dtype=torch.uint8)
        entries: List[_Entry] = []
        offset = 0
        async for name, weight in ensure_async_iterator(weights):
            w = weight.detach()
            if w.device.type != "cpu":
                w = w.cpu()
            raw = w.contiguous().view(-1).view(torch.uint8)
            total_nbytes, part = raw.numel(), 0
            while part < total_nbytes or total_nbytes == 0:
                if offset == self.bucket_size:
                    await asyncio.to_thread(self._send_bucket, buf, entries, False)
                    entries, offset = [], 0
                n = min(self.bucket_size - offset, total_nbytes - part)
                buf[offset:offset + n] = raw[part:part + n]
                entries.append(_Entry(name, tuple(w.shape), w.dtype, offset, n, part, total_nbytes))
                offset = min(self.bucket_size, (offset + n + 15) // 16 * 16)  # dtype views stay aligned
                part += n
                total += n
                if total_nbytes == 0:
                    break
        await asyncio.to_thread(self._send_bucket, buf, entries, True)
        self.last_bytes = total
        logger.info("cpu_gloo: sent %d bytes in %.3f s", total, time.time() - start)
        return {}

    @torch.no_grad()
    async def receive_weights(self, global_steps: Optional[int] = None
                              ) -> AsyncGenerator[Tuple[str, torch.Tensor], None]:
        assert self.rank is not None and self.rank > 0, "rank 0 does not receive"
        partial: dict = {}
        total, last = 0, False
        while not last:
            entries, last, buf = await asyncio.to_thread(self._recv_bucket)
            for e in entries:
                total += e.nbytes
                piece = buf[e.offset:e.offset + e.nbytes]
                if e.nbytes == e.total_nbytes:
                    yield e.name, piece.view(e.dtype).view(e.shape)
                    continue
                whole = partial.get(e.name)
                if whole is None:
                    whole = partial[e.name] = torch.empty(e.total_nbytes, dtype=torch.uint8)
                whole[e.part_offset:e.part_offset + e.nbytes] = piece
                if e.part_offset + e.nbytes == e.total_nbytes:
                    del partial[e.name]
                    yield e.name, whole.view(e.dtype).view(e.shape)
        self.last_bytes = total
        assert not partial, f"incomplete tensors: {sorted(partial)}"
