"""The facts of an asynchronous RL run, recorded the same way by every framework (issue 32).

    import rlprof, rlprof.rl as rl

    rl.weight_version(v)                 # a rollout worker now generates with version v
    with rl.wait("weights"):             # idle, and why: samples | weights | staleness | queue_full
        ...
    with rl.sync_phase("transfer", version=v, nbytes=n):   # a phase of the weight sync
        dist.broadcast(buf, src=0, group=g)
    rl.published(v)                      # the trainer made version v available
    rl.trainer_version(u)                # the trainer's policy is now version u (updates done)
    rl.generated(n, tokens=t)            # a rollout process made n samples (the unit its queue holds), t tokens
    rl.consumed(staleness=u - v)         # a trainer took a sample made with version v
    rl.queue_depth(n)                    # samples waiting in the queue

What they record (names the analysis reads, docs/python.md "Asynchronous RL"):
  counters  rl/weight_version, rl/published_version, rl/trainer_version, rl/staleness,
            rl/generated, rl/generated_tokens, rl/queue_depth, rl/sync_bytes
  ranges    wait/<cause>, sync/<phase> (phase: drain, gather, wait, transfer, load, resume)
Outside a capture window every call is a cheap no-op, as every other marker.
"""
from __future__ import annotations

from typing import Any, Optional

from rlprof._rlprof import counter, range_end, range_start

WAIT_CAUSES = ("samples", "weights", "staleness", "queue_full")
SYNC_PHASES = ("drain", "gather", "wait", "transfer", "load", "resume")


def weight_version(version: int) -> None:
    """The weights this rollout process generates with from now on."""
    counter("rl/weight_version", float(version))


def published(version: int) -> None:
    """Version `version` of the weights is available to the rollout processes."""
    counter("rl/published_version", float(version))


def trainer_version(version: int) -> None:
    """The trainer's policy after an update: the number of updates done."""
    counter("rl/trainer_version", float(version))


def generated(n: int = 1, tokens: Optional[int] = None) -> None:
    """This rollout process made `n` samples (whatever unit its queue holds: a response, a group),
    `tokens` tokens in all when given (the pools' tokens per second)."""
    counter("rl/generated", float(n))
    if tokens is not None:
        counter("rl/generated_tokens", float(tokens))


def consumed(staleness: int) -> None:
    """A trainer took a sample made `staleness` versions before its own."""
    counter("rl/staleness", float(staleness))


def queue_depth(n: int) -> None:
    counter("rl/queue_depth", float(n))


class _Range:
    __slots__ = ("name", "rid")

    def __init__(self, name: str) -> None:
        self.name = name
        self.rid = 0

    def __enter__(self) -> "_Range":
        self.rid = range_start(self.name)
        return self

    def __exit__(self, *exc: Any) -> None:
        range_end(self.rid)


def wait(cause: str) -> _Range:
    """A range of idle time, by cause: `samples` (a trainer starved), `weights` (a rollout process
    waits for newer weights), `staleness` (held back by the staleness bound), `queue_full`."""
    if cause not in WAIT_CAUSES:
        raise ValueError(f"rlprof.rl.wait: cause {cause!r}: one of {', '.join(WAIT_CAUSES)}")
    return _Range("wait/" + cause)


def sync_phase(phase: str, version: Optional[int] = None, nbytes: Optional[int] = None) -> _Range:
    """A phase of the weight sync, on the side that spends it (trainer or rollout process)."""
    if phase not in SYNC_PHASES:
        raise ValueError(f"rlprof.rl.sync_phase: phase {phase!r}: one of {', '.join(SYNC_PHASES)}")
    if nbytes is not None:
        counter("rl/sync_bytes", float(nbytes))
    if version is not None:
        counter("rl/sync_version", float(version))
    return _Range("sync/" + phase)
