"""A DistProfiler-shaped adapter for verl workers.

verl's workers hold a `DistProfiler` and call `start(role=..., profile_step=...)`, `stop()` and
decorate their stage methods with `@DistProfiler.annotate(color=..., role=...)`. This adapter
has the same shape, driven by the verl config with `global_profiler.tool: rlprof`:

    from rlprof.integrations.verl import DistProfiler
    profiler = DistProfiler(rank=rank, config="ppo_trainer.yaml", roles=["actor", "rollout", "ref"])
    profiler.start(role="actor", profile_step=3)

    class ActorWorker:
        @DistProfiler.annotate(role="actor_update")      # stage name; verl passes it as role
        def update_actor(self, batch): ...

    profiler.stop()

Stage names: verl names the stage by `role=` on annotate (e.g. "actor_update",
"rollout_generate"); the owning RL role comes from rlprof's stage vocabulary (else the first
word) unless `rl_role=` says otherwise. A stage follows the schedule the config gives it;
`scheduled=` and `counts=` are accepted and not needed.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Optional, Sequence

from rlprof import _rlprof
from rlprof.profiler import Profiler, annotate as _annotate


def _rl_role(stage: str) -> str:
    """The RL role owning a stage, from rlprof's stage vocabulary (src/config/stages.h);
    unknown stages: their first word."""
    return _rlprof.stage_role(stage) or stage.split("_", 1)[0]


class DistProfiler:
    """start(role, profile_step) / stop() / annotate(role=...) over an rlprof Profiler."""

    def __init__(self, rank: Optional[int] = None, config: Any = None,
                 overrides: Sequence[str] = (), roles: Optional[Sequence[str]] = None,
                 profiler: Optional[Profiler] = None, **kwargs: Any) -> None:
        if profiler is None:
            if config is None:
                raise ValueError("rlprof DistProfiler needs a config or a Profiler")
            profiler = Profiler(config, overrides=overrides, rank=rank, roles=roles, **kwargs)
        self.profiler = profiler
        self._open = False

    def start(self, role: Optional[str] = None, profile_step: Optional[int] = None,
              **kwargs: Any) -> None:
        if profile_step is None:
            return
        if self._open:
            self.profiler.stop()
        self.profiler.start(int(profile_step))
        self._open = True

    def stop(self) -> None:
        if self._open:
            self.profiler.stop()
            self._open = False

    def check_enable(self) -> bool:
        return self.profiler.enabled

    @staticmethod
    def annotate(message: Optional[str] = None, color: Optional[str] = None,
                 role: Optional[str] = None, rl_role: Optional[str] = None,
                 scheduled: bool = False, counts: Optional[str] = None,
                 **kwargs: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """verl's `@DistProfiler.annotate(color=..., role="actor_update")`."""
        def decorator(fn: Callable[..., Any]) -> Callable[..., Any]:
            stage = role or message or fn.__name__
            owner = rl_role or _rl_role(stage)

            @functools.wraps(fn)
            def wrapper(*args: Any, **kw: Any) -> Any:
                with _annotate(stage, role=owner):
                    return fn(*args, **kw)
            return wrapper
        return decorator
