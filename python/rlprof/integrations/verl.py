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
"rollout_generate"); the owning RL role is the first word ("actor", "rollout", "ref",
"critic", "reward") unless `rl_role=` says otherwise.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Optional, Sequence

from rlprof.profiler import Profiler, annotate as _annotate

_ROLE_OF_STAGE = {
    "rollout_generate": "rollout",
    "generate_sequences": "rollout",
    "actor_compute_log_prob": "actor",
    "actor_update": "actor",
    "ref_compute_log_prob": "ref",
    "compute_values": "critic",
    "critic_update": "critic",
    "compute_rm_score": "reward",
}


def _rl_role(stage: str) -> str:
    if stage in _ROLE_OF_STAGE:
        return _ROLE_OF_STAGE[stage]
    return stage.split("_", 1)[0]


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
            unit = counts or ("decode" if scheduled and owner == "rollout" else
                              "mini_batch" if scheduled else None)

            @functools.wraps(fn)
            def wrapper(*args: Any, **kw: Any) -> Any:
                with _annotate(stage, role=owner, counts=unit):
                    return fn(*args, **kw)
            return wrapper
        return decorator
