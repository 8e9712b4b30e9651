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
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

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


# ---------------------------------------------------------------------------------------------
# verl's own DistProfiler with `global_profiler.tool: rlprof` (patched in by the launcher's
# bootstrap, rlprof._hooks; nothing here is imported when profiling is off).
#
# verl (verl.utils.profiler.profile.DistProfiler.__init__) picks its backend with a fixed
# if/elif over nsys/npu/torch/torch_memory/precision_debugger and falls back to a no-op; the
# patch lets __init__ run unchanged and then puts RlprofBackend in place of the no-op when
# `config.tool == "rlprof"`. verl keeps its own gates (enable, ranks, the steps its trainer
# starts), its annotate wrapper and its finish hook.

_ROLE_WORDS = ("actor", "rollout", "ref", "critic", "reward")
_PER_ROLE_KEYS = ("discrete", "contents", "level", "stages", "schedule", "profile_token_start",
                  "profile_token_end")
_GLOBAL_KEYS = ("export", "combine", "budget", "buffer", "flush_interval_s", "backstop_s",
                "memory_interval_s", "custom_stages")


def _plain(obj: Any) -> Any:
    """A verl config value (OmegaConf DictConfig, verl BaseConfig dataclass, dict) as plain
    Python containers."""
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    try:
        from omegaconf import DictConfig, ListConfig, OmegaConf
        if isinstance(obj, (DictConfig, ListConfig)):
            return OmegaConf.to_container(obj, resolve=True)
    except ImportError:
        pass
    import dataclasses
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: _plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, Mapping):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set)):
        return [_plain(v) for v in obj]
    return obj


# What verl passes as a worker's label (DistProfiler's save_file_prefix): the fused worker's role
# string ("actor_rollout_ref", "actor_rollout", "ref", ...) or, for a TrainingWorker, its model
# type (verl 0.9: "value_model" is the critic; "language_model" is the actor's or ref's inner
# worker, whose process already has its outer worker's label, or a standalone one).
_LABELS = {"value_model": ["critic"], "critic": ["critic"], "reward_model": ["reward"],
           "rm": ["reward"], "reward": ["reward"]}

# A TrainingWorker's generic stage names, per the role that runs it.
_GENERIC_STAGES = {"critic": {"train_batch": "critic_update", "infer_batch": "compute_values"},
                   "reward": {"infer_batch": "compute_rm_score"}}


def roles_of(worker_role: Optional[str]) -> Optional[List[str]]:
    """The RL roles a verl worker hosts, from its label ("actor_rollout_ref" -> [actor,
    rollout, ref], "value_model" -> [critic]); None when it names none (then RLPROF_ROLES
    decides)."""
    if not worker_role:
        return None
    label = str(worker_role).lower().replace("-", "_")
    if label in _LABELS:
        return list(_LABELS[label])
    words = label.split("_")
    roles = [r for r in _ROLE_WORDS if r in words]
    return roles or None


def stage_for(stage: str, roles: Sequence[str]) -> Tuple[str, str]:
    """(stage, owning role) of a verl annotation in a process hosting `roles`: a TrainingWorker's
    generic names become the role's own stage (a critic's train_batch is critic_update)."""
    if len(roles) == 1 and stage in _GENERIC_STAGES.get(roles[0], {}):
        return _GENERIC_STAGES[roles[0]][stage], roles[0]
    owner = _rl_role(stage)
    if roles and owner not in roles and len(roles) == 1:
        owner = roles[0]
    return stage, owner


def _rlprof_block(tool_config: Any) -> Dict[str, Any]:
    tc = _plain(tool_config) or {}
    if not isinstance(tc, dict):
        return {}
    if isinstance(tc.get("rlprof"), dict):  # the whole tool_config mapping
        tc = tc["rlprof"]
    return {k: tc[k] for k in _PER_ROLE_KEYS if tc.get(k) is not None}


def config_from_verl(config: Any, tool_config: Any, roles: Sequence[str]) -> Dict[str, Any]:
    """rlprof's own block for a worker, from verl's in-memory ProfilerConfig of its role (used
    when no RLPROF_CONFIG names the trainer config). verl has already chosen the ranks and
    decides the steps (its trainer starts only the profiled ones), so every step and rank is
    selected here; the per-role `tool_config.rlprof` keys (schedules, stages, contents,
    discrete, token window) and `global_tool_config.rlprof` apply as in the file."""
    cfg = _plain(config) or {}
    if not isinstance(cfg, dict):
        cfg = {}
    block = _rlprof_block(tool_config if tool_config is not None else cfg.get("tool_config"))
    glob = cfg.get("global_tool_config") or {}
    if isinstance(glob, dict) and isinstance(glob.get("rlprof"), dict):
        glob = glob["rlprof"]
    out: Dict[str, Any] = {"steps": "all",
                           "save_path": cfg.get("save_path") or "outputs/rlprof"}
    if isinstance(glob, dict):
        out.update({k: glob[k] for k in _GLOBAL_KEYS if glob.get(k) is not None})
    out["roles"] = {r: dict(block, all_ranks=True) for r in roles}
    return {"rlprof": out}


class _Shared:
    """The process's one rlprof Profiler, shared by every DistProfiler of the process (verl's
    engine workers hold an outer and an inner one; verl colocates the workers of roles that
    share a resource pool — actor/rollout/ref and the critic, by default — in one process), and
    the step it has open."""
    profiler: Optional[Profiler] = None
    roles: List[str] = []
    labelled: List[str] = []  # the roles of every rlprof DistProfiler made in this process
    step: Optional[int] = None
    depth = 0
    auto_step = 0
    failed = False  # the Profiler could not be made (bad config): warned once, then no-ops


def _shared_profiler(rank: Optional[int], config: Any, tool_config: Any,
                     worker_role: Optional[str]) -> Profiler:
    if _Shared.profiler is None:
        import os
        roles = roles_of(worker_role)
        path = os.environ.get("RLPROF_CONFIG")
        overrides = [w for w in os.environ.get("RLPROF_OVERRIDES", "").splitlines() if w.strip()]
        # Every role whose worker lives in this process (colocated workers), in the order they
        # were made; else RLPROF_ROLES, else actor.
        roles = list(dict.fromkeys(_Shared.labelled + (roles or [])))
        if not roles:
            env_roles = [r for r in os.environ.get("RLPROF_ROLES", "").split(",") if r]
            roles = env_roles or ["actor"]
        _Shared.roles = list(roles)
        # verl's config as verl resolved it (published by the main process), else RLPROF_CONFIG,
        # else this role's block (rlprof.integrations.verl_config).
        from rlprof.integrations import verl_config
        resolved = verl_config.resolved_from_env()
        if resolved is not None:
            src, path = resolved, None
        else:
            src = path if path else config_from_verl(config, tool_config, roles)
        world = os.environ.get("WORLD_SIZE")
        # Only the ranks verl selects get here, so the Profiler must not run collectives:
        # the run id comes from the launcher (RLPROF_RUN_ID), no clock-offset exchange.
        _Shared.profiler = Profiler(
            src, overrides=overrides if path else (), rank=rank, roles=roles,
            world_size=int(world) if world and world.isdigit() else None,
            run_id=os.environ.get("RLPROF_RUN_ID") or None, measure_clock_offset=False)
    return _Shared.profiler


class RlprofBackend:
    """verl DistProfiler backend (the `_impl`): start/stop/step/annotate."""

    def __init__(self, rank: int, config: Any = None, tool_config: Any = None,
                 save_file_prefix: Optional[str] = None, **kwargs: Any) -> None:
        self.rank = rank
        self.config = config
        self.tool_config = tool_config
        self.worker_role = save_file_prefix
        self._mine = False
        for r in roles_of(save_file_prefix) or []:
            if r not in _Shared.labelled:
                _Shared.labelled.append(r)

    @property
    def profiler(self) -> Profiler:
        return _shared_profiler(self.rank, self.config, self.tool_config, self.worker_role)

    def start(self, role: Optional[str] = None, profile_step: Optional[int] = None,
              **kwargs: Any) -> None:
        if _Shared.failed:
            return
        try:
            prof = self.profiler
        except Exception as e:  # a bad config never stops training: one warning, no captures
            import sys
            _Shared.failed = True
            sys.stderr.write(f"rlprof: error: verl rank {self.rank}: cannot start rlprof ({e}); "
                             "this process records nothing, training continues\n")
            return
        if profile_step is None:  # rollout servers' start_profile(): count the calls
            _Shared.auto_step += 1
            profile_step = _Shared.auto_step
        step = int(profile_step)
        if _Shared.step == step:  # another DistProfiler of this process opened it
            _Shared.depth += 1
            self._mine = True
            return
        if _Shared.step is not None:
            prof.stop()
        prof.start(step)
        _Shared.step, _Shared.depth = step, 1
        self._mine = True

    def stop(self) -> None:
        if not self._mine or _Shared.step is None:
            return
        self._mine = False
        _Shared.depth -= 1
        if _Shared.depth <= 0:
            self.profiler.stop()
            self.profiler.flush()
            _Shared.step, _Shared.depth = None, 0

    def step(self) -> None:
        """verl advances its profiler once per update mini-batch."""
        if _Shared.profiler is not None:
            _Shared.profiler.sub_step("mini_batch")

    def annotate(self, message: Optional[str] = None, color: Optional[str] = None,
                 domain: Optional[str] = None, category: Optional[str] = None,
                 role: Optional[str] = None, **kwargs: Any
                 ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def decorator(fn: Callable[..., Any]) -> Callable[..., Any]:
            # The worker's own label first: a colocated critic's train_batch is critic_update.
            stage, owner = stage_for(role or message or fn.__name__,
                                     roles_of(self.worker_role) or _Shared.roles)

            @functools.wraps(fn)
            def wrapper(*args: Any, **kw: Any) -> Any:
                with _annotate(stage, role=owner):
                    return fn(*args, **kw)
            return wrapper
        return decorator


def patch_dist_profiler(module: Any) -> None:
    """Makes verl.utils.profiler.profile.DistProfiler build RlprofBackend for tool rlprof."""
    cls = getattr(module, "DistProfiler")
    if getattr(cls.__init__, "_rlprof_patched", False):
        return
    orig = cls.__init__

    @functools.wraps(orig)
    def __init__(self: Any, rank: int, config: Any = None, tool_config: Any = None,
                 save_file_prefix: Optional[str] = None, **kwargs: Any) -> None:
        orig(self, rank, config=config, tool_config=tool_config,
             save_file_prefix=save_file_prefix, **kwargs)
        if getattr(self, "_tool", None) == "rlprof":
            self._impl = RlprofBackend(rank=rank, config=self.config,
                                       tool_config=self.tool_config,
                                       save_file_prefix=save_file_prefix)
            tc = _rlprof_block(self.tool_config)
            self._discrete = bool(tc.get("discrete", False))

    __init__._rlprof_patched = True  # type: ignore[attr-defined]
    cls.__init__ = __init__


# verl's marker functions (mark_start_range/mark_end_range/mark_annotate/marked_timer): each
# also records an rlprof range, or an rlprof stage when the name is one of rlprof's stages
# (docs/config.md, "Stage vocabulary"). Without an open window they cost one check.

def _stage_or_range(name: Optional[str]) -> Any:
    n = name or "range"
    owner = _rlprof.stage_role(n)
    if owner and _Controller.profiler is not None:
        # verl's controller times each stage of the step around the worker groups' calls:
        # its lane records them under its own role (the workers record their side).
        owner = "controller"
    return _annotate(n, role=owner) if owner else _annotate(n)


class _Controller:
    """verl's single controller (the process running RayPPOTrainer.fit, verl's TaskRunner) with
    tool rlprof: its Profiler (role `controller`, rank 0), opened and closed with the worker
    groups' profilers on every step verl profiles (rlprof.integrations.verl_rollout)."""
    profiler: Optional[Profiler] = None
    failed = False
    step: Optional[int] = None
    close_after_step = False  # close when verl's `step` timer ends (its v1 trainer)


def controller_prepare() -> bool:
    """Makes the controller's Profiler (its config loaded, its writer started) ahead of the
    first profiled step — at the start of verl's fit loop — so that making it is not inside
    that step's window or timer. Returns whether the controller records."""
    if _Controller.failed:
        return False
    if _Controller.profiler is not None:
        return True
    try:
        import os
        from rlprof.integrations import verl_config
        src = verl_config.resolved_from_env()
        if src is None:  # the main process published nothing: not a verl tool-rlprof job
            _Controller.failed = True
            return False
        _Controller.profiler = Profiler(
            src, rank=0, roles=["controller"], world_size=1,
            run_id=os.environ.get("RLPROF_RUN_ID") or None, measure_clock_offset=False)
        return True
    except Exception as e:  # never stop training
        import sys
        _Controller.failed = True
        sys.stderr.write(f"rlprof: warning: verl's controller is not recorded ({e!r}); "
                         "training continues\n")
        return False


def controller_start(step: int) -> None:
    """Opens the controller's window on `step` (before verl starts its workers' profilers);
    in a profile_continuous_steps run the open window carries on (one capture)."""
    if not controller_prepare():
        return
    try:
        prof = _Controller.profiler
        if _Controller.step is not None:
            prof.stop()
        prof.start(int(step))
        _Controller.step = int(step)
    except Exception as e:  # never stop training
        import sys
        _Controller.failed = True
        sys.stderr.write(f"rlprof: warning: verl's controller is not recorded ({e!r}); "
                         "training continues\n")


def controller_stop(after_step_timer: bool = False) -> None:
    """Closes the controller's window (after verl stopped its workers' profilers); with
    `after_step_timer`, when verl's `step` timer ends instead (verl's v1 trainer stops its
    profilers inside that timer, before the step's last stages: update_weights)."""
    if after_step_timer:
        _Controller.close_after_step = _Controller.step is not None
        return
    _Controller.close_after_step = False
    prof = _Controller.profiler
    if prof is None or _Controller.step is None:
        return
    try:
        prof.stop()
        prof.flush()
    except Exception as e:
        import sys
        sys.stderr.write(f"rlprof: warning: verl's controller window did not close ({e!r})\n")
    _Controller.step = None


def _wrap_marked_timer(orig: Callable[..., Any]) -> Callable[..., Any]:
    import contextlib

    @contextlib.contextmanager
    @functools.wraps(orig)
    def marked_timer(name: str, timing_raw: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            with orig(name, timing_raw, *args, **kwargs) as v:
                with _stage_or_range(name):
                    yield v
        finally:
            if name == "step" and _Controller.close_after_step:
                controller_stop()  # verl's v1 trainer: the window holds its whole `step` timer
    return marked_timer


_open_ranges: Dict[Any, List[int]] = {}


def _wrap_start_range(orig: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(orig)
    def mark_start_range(message: Optional[str] = None, *args: Any, **kwargs: Any) -> Any:
        rid = orig(message, *args, **kwargs)
        ours = _rlprof.range_start(message or "range")
        # Keyed by the id the caller gets back (None from verl's no-op markers: then the most
        # recent open one, as nested ranges close).
        _open_ranges.setdefault(rid, []).append(ours)
        return rid
    return mark_start_range


def _wrap_end_range(orig: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(orig)
    def mark_end_range(range_id: Any, *args: Any, **kwargs: Any) -> Any:
        out = orig(range_id, *args, **kwargs)
        ids = _open_ranges.get(range_id)
        if ids:
            _rlprof.range_end(ids.pop())
            if not ids:
                del _open_ranges[range_id]
        return out
    return mark_end_range


def _wrap_mark_annotate(orig: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(orig)
    def mark_annotate(message: Optional[str] = None, *args: Any, **kwargs: Any) -> Any:
        inner = orig(message, *args, **kwargs)

        def decorator(fn: Callable[..., Any]) -> Callable[..., Any]:
            wrapped = inner(fn)
            name = message or fn.__name__

            @functools.wraps(fn)
            def wrapper(*a: Any, **kw: Any) -> Any:
                with _stage_or_range(name):
                    return wrapped(*a, **kw)
            return wrapper
        return decorator
    return mark_annotate


_WRAPPERS = {"marked_timer": _wrap_marked_timer, "mark_start_range": _wrap_start_range,
             "mark_end_range": _wrap_end_range, "mark_annotate": _wrap_mark_annotate}


def patch_markers(module: Any) -> None:
    """Wraps the marker functions a verl module exports (verl.utils.profiler, .performance)."""
    for name, wrap in _WRAPPERS.items():
        fn = getattr(module, name, None)
        if fn is None or getattr(fn, "_rlprof_patched", False):
            continue
        new = wrap(fn)
        new._rlprof_patched = True  # type: ignore[attr-defined]
        setattr(module, name, new)


def patch_engine_workers(module: Any) -> None:
    """verl 0.9's TrainingWorker (the critic, a standalone reward model) annotates only
    `train_batch`; its `infer_batch` (the critic's values, the reward model's scores) is a stage
    too: recorded as compute_values / compute_rm_score when the process hosts that one role and
    rlprof is its profiler (verl's own gates apply: enable, rank, step)."""
    cls = getattr(module, "TrainingWorker", None)
    fn = cls.__dict__.get("infer_batch") if cls is not None else None
    if fn is None or getattr(fn, "_rlprof_patched", False):
        return

    @functools.wraps(fn)
    def infer_batch(self: Any, *args: Any, **kwargs: Any) -> Any:
        prof = getattr(self, "profiler", None)
        impl = getattr(prof, "_impl", None)
        if (not isinstance(impl, RlprofBackend) or _Shared.profiler is None or
                not (prof.check_enable() and prof.check_this_step() and prof.check_this_rank())):
            return fn(self, *args, **kwargs)
        stage, owner = stage_for("infer_batch", roles_of(impl.worker_role) or _Shared.roles)
        if stage == "infer_batch":  # an actor's or ref's inner worker: its outer stage covers it
            return fn(self, *args, **kwargs)
        with _annotate(stage, role=owner):
            return fn(self, *args, **kwargs)

    infer_batch._rlprof_patched = True  # type: ignore[attr-defined]
    cls.infer_batch = infer_batch
