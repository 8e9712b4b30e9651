"""rlprof.mstx: the mstx marker calls of Ascend code (torch_npu.npu.mstx, MindSpeed-RL's
``mstx_timer_decorator``) on any machine, recorded by rlprof — and, where torch_npu is
installed, also sent to torch_npu's mstx so MindStudio Insight shows them.

    from rlprof import mstx
    rid = mstx.range_start("rollout")          # same signature as torch_npu.npu.mstx
    ...
    mstx.range_end(rid)
    mstx.mark("weights synced")

    @mstx.mstx_timer_decorator                 # MindSpeed-RL's decorator: a range per call,
    def update(self, batch): ...               # named by the function's __qualname__

    with mstx.mstx_range("reshard"): ...       # or as a decorator: @mstx.mstx_range("reshard")

rlprof records the ranges (async ranges: a range may end on another thread, as mstx allows)
and marks only inside capture windows; outside one each call costs a few hundred
nanoseconds. ``domain`` and ``stream`` are passed on to torch_npu; rlprof keeps the range name.
Switch the forwarding off with ``RLPROF_MSTX_NPU=0`` (or ``set_npu_forwarding(False)``).
Thread-safety: every call may come from any thread.
"""
from __future__ import annotations

import functools
import importlib.util
import itertools
import os
import sys
import threading
from typing import Any, Callable, Dict, Tuple, TypeVar

from rlprof._rlprof import mark as _rl_mark
from rlprof._rlprof import range_end as _rl_range_end
from rlprof._rlprof import range_start as _rl_range_start

__all__ = ["mark", "range_start", "range_end", "mstx_range", "mstx_timer_decorator",
           "npu_forwarding", "set_npu_forwarding"]

F = TypeVar("F", bound=Callable[..., Any])

# torch_npu's mstx module: resolved on the first call (importing torch_npu loads torch, so
# `import rlprof.mstx` itself stays cheap). None = not available / switched off.
_npu: Any = None
_npu_resolved = False
_npu_lock = threading.Lock()
# Ids this module hands out when torch_npu also has a range open: ours → (rlprof's, torch_npu's).
_pairs: Dict[int, Tuple[int, Any]] = {}
_ids = itertools.count(1 << 62)  # never collides with rlprof's range ids (< 2^64, tagged)


def _resolve_npu() -> Any:
    global _npu, _npu_resolved
    with _npu_lock:
        if _npu_resolved:
            return _npu
        _npu_resolved = True
        if os.environ.get("RLPROF_MSTX_NPU", "1") == "0":
            return None
        try:
            if "torch_npu" not in sys.modules and importlib.util.find_spec("torch_npu") is None:
                return None
            import torch_npu  # type: ignore  # noqa: F401
            _npu = torch_npu.npu.mstx
        except Exception:  # an unusable torch_npu: rlprof's own markers only
            _npu = None
        return _npu


def npu_forwarding() -> bool:
    """True when calls are also sent to torch_npu's mstx."""
    return (_npu if _npu_resolved else _resolve_npu()) is not None


def set_npu_forwarding(on: bool, module: Any = None) -> None:
    """Switch forwarding to torch_npu's mstx on or off. `module`: an object with torch_npu.npu.mstx's
    mark / range_start / range_end to send to instead (tests, or another mstx binding)."""
    global _npu, _npu_resolved
    if on and module is None:
        with _npu_lock:
            _npu_resolved = False
        _resolve_npu()
        return
    with _npu_lock:
        _npu_resolved = True
        _npu = module if on else None


def mark(message: str, stream: Any = None, domain: str = "default") -> None:
    """An instant event named `message`."""
    _rl_mark(message)
    npu = _npu if _npu_resolved else _resolve_npu()
    if npu is not None:
        npu.mark(message, stream, domain)


def range_start(message: str, stream: Any = None, domain: str = "default") -> int:
    """Opens a range named `message`; returns its id for range_end (0 = nothing recorded)."""
    rid = _rl_range_start(message)
    npu = _npu if _npu_resolved else _resolve_npu()
    if npu is None:
        return rid
    nid = npu.range_start(message, stream, domain)
    ours = next(_ids)
    _pairs[ours] = (rid, nid)
    return ours


def range_end(range_id: int, domain: str = "default") -> None:
    """Closes the range `range_id` (from any thread)."""
    pair = _pairs.pop(range_id, None)
    if pair is None:
        _rl_range_end(range_id)
        return
    _rl_range_end(pair[0])
    if _npu is not None:
        _npu.range_end(pair[1], domain)


class mstx_range:  # noqa: N801  (torch_npu's name)
    """A range as a context manager or a decorator: ``with mstx_range("x"):`` / ``@mstx_range("x")``."""

    def __init__(self, message: str, stream: Any = None, domain: str = "default") -> None:
        self.message, self.stream, self.domain = message, stream, domain
        self._local = threading.local()

    def __enter__(self) -> "mstx_range":
        stack = getattr(self._local, "ids", None)
        if stack is None:
            stack = self._local.ids = []
        stack.append(range_start(self.message, self.stream, self.domain))
        return self

    def __exit__(self, *exc: Any) -> None:
        range_end(self._local.ids.pop(), self.domain)

    def __call__(self, func: F) -> F:
        message, stream, domain = self.message, self.stream, self.domain

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            rid = range_start(message, stream, domain)
            try:
                return func(*args, **kwargs)
            finally:
                range_end(rid, domain)
        return wrapper  # type: ignore[return-value]


def mstx_timer_decorator(func: F) -> F:
    """MindSpeed-RL's decorator: one range per call, named ``func.__qualname__``. Unlike the
    original, the range also ends when the function raises."""
    name = func.__qualname__

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        rid = range_start(name)
        try:
            return func(*args, **kwargs)
        finally:
            range_end(rid)
    return wrapper  # type: ignore[return-value]
