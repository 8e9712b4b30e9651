"""Each sample's life (issue 33): one record per finished sample, and what became of it.

    import time, rlprof
    t0 = time.monotonic_ns()                       # every time: time.monotonic_ns()
    ... the engine generates ...
    rlprof.sample("req-17", submit=t0, scheduled=t1, first_token=t2, last_token=t3,
                  prompt_tokens=64, completion_tokens=200, finish_reason="stop",
                  group="prompt-3", version=4, replica=0,
                  tools=[("search", t4, t5)], reward=(t6, t7))
    ... in the trainer, when it takes the sample (or drops it) ...
    rlprof.sample_use("req-17", "consumed", step=12, version=5)
    rlprof.sample_use("req-18", "stale")           # dropped, and why

Records land in the open capture window of this process (False when none is open, or when the
config's `sample_rate` leaves the id out — the same ids in every process). rlprof's vLLM source
(rlprof.integrations.vllm_samples) makes them for every request of a vLLM engine by itself.
Analysis: `rlprof summary RUN --view samples`, the `samples` and `sample_tail` tables.
"""
from __future__ import annotations

from typing import Iterable, Optional, Sequence, Tuple, Union

from rlprof._rlprof import recording, sample_kept, sample_record, sample_use as _sample_use

__all__ = ["sample", "sample_use", "sample_kept"]


def _ns(v: Optional[int]) -> int:
    return int(v) if v is not None and v > 0 else 0


def _n(v: Optional[int]) -> int:
    return int(v) if v is not None and v >= 0 else -1


def sample(id: str, *, submit: Optional[int] = None, queued: Optional[int] = None,
           scheduled: Optional[int] = None, first_token: Optional[int] = None,
           last_token: Optional[int] = None, end: Optional[int] = None,
           prompt_tokens: Optional[int] = None, completion_tokens: Optional[int] = None,
           cached_tokens: Optional[int] = None, preemptions: Optional[int] = None,
           finish_reason: Optional[str] = None, group: Optional[str] = None,
           version: Union[None, int, Tuple[int, int]] = None, replica: Optional[int] = None,
           tools: Iterable[Tuple[str, int, int]] = (), reward: Optional[Tuple[int, int]] = None,
           spans: Sequence[Tuple[str, Optional[str], int, int]] = ()) -> bool:
    """One finished sample. Times are CLOCK_MONOTONIC nanoseconds (time.monotonic_ns()); leave
    out what is unknown. submit: handed to the engine; queued → scheduled: its wait for a batch
    slot; scheduled → first_token: prefill; first_token → last_token: decode; end: done (default
    the last token). `version`: the weight version it was generated with, or (first, last) when
    a sync interrupted it. `tools`: (name, start, end) per tool call; `reward`: (start, end);
    `spans`: any other (phase, label, start, end)."""
    if not recording():
        return False
    if isinstance(version, tuple):
        v0, v1 = _n(version[0]), _n(version[1])
    else:
        v0 = v1 = _n(version)
    all_spans = [("tool", str(name), int(a), int(b)) for name, a, b in tools]
    if reward is not None:
        all_spans.append(("reward", None, int(reward[0]), int(reward[1])))
    all_spans.extend((str(p), None if lab is None else str(lab), int(a), int(b)) for p, lab, a, b in spans)
    return sample_record(str(id), _ns(submit), _ns(queued), _ns(scheduled), _ns(first_token), _ns(last_token),
                         _ns(end), _n(prompt_tokens), _n(completion_tokens), _n(cached_tokens),
                         _n(preemptions), finish_reason, group, v0, v1, _n(replica), all_spans)


def sample_use(id: str, outcome: str = "consumed", *, step: Optional[int] = None,
               version: Optional[int] = None, at: Optional[int] = None) -> bool:
    """What became of sample `id`: "consumed" by training step `step` (whose policy is
    `version`), or the reason it was dropped ("stale", "filtered", "truncated", "overflow", …).
    `at`: when (time.monotonic_ns(); default now)."""
    if not recording():
        return False
    return _sample_use(str(id), str(outcome), _n(step), _n(version), _ns(at))
