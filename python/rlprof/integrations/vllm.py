"""Rollout servers (vLLM, SGLang): the engine's model-execution step as rlprof decode steps.

vLLM loads `vllm.general_plugins` entry points in every engine process (`register()` below,
declared in python/pyproject.toml); the launcher's bootstrap does the same for any process
that imports the model runner. Both wrap the runner's step method:

  vLLM    vllm.v1.worker.gpu_model_runner.GPUModelRunner.execute_model(scheduler_output, ...)
          (the V1 runner; the CPU runner, vllm.v1.worker.cpu_model_runner.CPUModelRunner,
          inherits it) and vllm.v1.worker.gpu.model_runner.GPUModelRunner.execute_model (the V2
          runner, vLLM >= 0.3x's default where Triton exists; its dummy runs are not counted)
          vllm.v1.worker.gpu_worker.Worker.profile(is_start)   (vLLM's own profiler calls)
          vllm.v1.worker.gpu_worker.Worker.rlprof_begin_step/rlprof_end_step (added here: what
          rlprof's verl integration calls through the engine's collective_rpc)
  SGLang  sglang.srt.model_executor.model_runner.ModelRunner.forward(forward_batch, ...)

Each engine step runs inside the stage `rollout_generate` (role rollout); a step that decodes
(vLLM: no new request and at most 1 + speculative tokens per request; SGLang: a batch whose
forward_mode is decode) advances the `decode` sub-step after it, so a role-wide or
`stage: rollout_generate` schedule with `unit: decode` (and profile_token_start/end) selects
exactly those iterations. Prefill steps are recorded but not counted.

Steps: under verl (`global_profiler.tool: rlprof`), verl's `start_profile` on the rollout
replicas reaches every engine worker as `rlprof_begin_step(step)` with the trainer's step
number, and `stop_profile` as `rlprof_end_step()` (rlprof.integrations.verl_rollout); an
engine that verl started (VERL_REPLICA_RANK is set) records only between those calls. Else the
engine's own profile(is_start=True) call begins the next RL step and profile(False) ends it,
and an engine never told begins step 1 at its first model step and ends it at exit.
Identity: the process hosts role `rollout`; its rank is the replica rank (RLPROF_REPLICA, else
VERL_REPLICA_RANK, else RANK), as verl numbers Agent Loop replicas. An engine that serves verl's
reward model (verl >= 0.9, `reward.reward_model.enable`: rollout servers behind its
RewardModelManager) is told so by its first `rlprof_begin_step(step, "reward")`: it then hosts
role `reward` (rank = the reward model's replica rank) and its engine steps are the stage
`compute_rm_score`.
"""
from __future__ import annotations

import functools
import os
import sys
from typing import Any, Optional, Sequence

from rlprof.profiler import Profiler

# What the engine's steps are, by the role this engine process serves.
_STAGES = {"rollout": "rollout_generate", "reward": "compute_rm_score"}


class _State:
    role = "rollout"  # or "reward": set by the first rlprof_begin_step, before the Profiler
    profiler: Optional[Profiler] = None
    config: Any = None  # what the Profiler is made from: RLPROF_CONFIG, or verl's resolved config
    step: Optional[int] = None
    next_step = 1
    in_stage = False
    told = False  # a profile(is_start) call drives the steps
    failed = False  # the Profiler could not be made (bad config): warned once, then no-ops


def _env_int(*names: str) -> Optional[int]:
    for n in names:
        v = os.environ.get(n, "")
        if v.strip().lstrip("-").isdigit():
            return int(v)
    return None


def managed_by_verl() -> bool:
    """An engine that verl's rollout server started: its steps come from verl's
    start_profile/stop_profile (rlprof_begin_step/rlprof_end_step), never from its first model
    step (a warm-up or an unprofiled step's generation would open a window)."""
    return "VERL_REPLICA_RANK" in os.environ


def _config_source() -> Any:
    from rlprof.integrations import verl_config
    resolved = verl_config.resolved_from_env()
    if resolved is not None:
        return resolved, []
    path = os.environ.get("RLPROF_CONFIG")
    if not path:
        return None, []
    return path, [w for w in os.environ.get("RLPROF_OVERRIDES", "").splitlines() if w.strip()]


def profiler() -> Optional[Profiler]:
    """The engine process's Profiler (made at its first use), or None when no config is set."""
    if _State.profiler is None:
        if _State.failed:
            return None
        src, overrides = _config_source()
        if src is None:
            return None
        try:
            _State.profiler = Profiler(
                src, overrides=overrides,
                rank=_env_int("RLPROF_REPLICA", "VERL_REPLICA_RANK", "RANK") or 0,
                roles=[_State.role], run_id=os.environ.get("RLPROF_RUN_ID") or None,
                measure_clock_offset=False)
        except Exception as e:  # a bad config never stops the server: one warning
            _State.failed = True
            sys.stderr.write(f"rlprof: error: cannot start rlprof in the rollout engine ({e}); "
                             "this process records nothing, the engine continues\n")
            return None
        import atexit
        atexit.register(end_step)  # runs before the Profiler's own shutdown (LIFO)
    return _State.profiler


def begin_step(step: Optional[int] = None) -> None:
    p = profiler()
    if p is None:
        return
    end_step()
    n = _State.next_step if step is None else int(step)
    p.start(n)
    _State.step, _State.next_step = n, n + 1


def end_step() -> None:
    p = _State.profiler
    if p is None or _State.step is None:
        return
    if _State.in_stage:
        p.end_stage()
        _State.in_stage = False
    p.stop()
    p.flush()
    _State.step = None


def is_decode_vllm(scheduler_output: Any) -> bool:
    """A vLLM SchedulerOutput that only decodes: no new request, and every scheduled request
    runs one token (plus its speculative tokens)."""
    if scheduler_output is None:
        return False
    if getattr(scheduler_output, "scheduled_new_reqs", None):
        return False
    counts = getattr(scheduler_output, "num_scheduled_tokens", None) or {}
    if not counts:
        return False
    spec = getattr(scheduler_output, "scheduled_spec_decode_tokens", None) or {}
    return all(n <= 1 + len(spec.get(r, ())) for r, n in counts.items())


def is_decode_sglang(forward_batch: Any) -> bool:
    mode = getattr(forward_batch, "forward_mode", None)
    fn = getattr(mode, "is_decode", None)
    try:
        return bool(fn()) if callable(fn) else False
    except Exception:
        return False


def _model_step(orig: Any, is_decode: Any) -> Any:
    from rlprof import _rlprof
    name = orig.__name__

    @functools.wraps(orig)
    def step(self: Any, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("dummy_run"):  # the V2 runner's warm-up and memory-profiling passes
            return orig(self, *args, **kwargs)
        # Between two start_profile/stop_profile pairs, or an engine verl has not told yet:
        # nothing to record, and no Profiler made yet (verl's first call names the role).
        if _State.step is None and (_State.told or managed_by_verl()):
            return orig(self, *args, **kwargs)
        p = profiler()
        if p is None:
            return orig(self, *args, **kwargs)
        if _State.step is None:
            begin_step()
        # A reward model engine scores only while it runs a step: the stage is each step (its
        # window is the trainer's whole step, mostly idle). A rollout engine's stage is the
        # generation phase, opened at the step's start.
        per_step = _State.role != "rollout"
        if not _State.in_stage:
            p.begin_stage(_STAGES[_State.role], _State.role)
            _State.in_stage = True
        rid = _rlprof.range_start(name)  # one range per engine step
        try:
            out = orig(self, *args, **kwargs)
        finally:
            _rlprof.range_end(rid)
            if per_step and _State.in_stage:
                p.end_stage()
                _State.in_stage = False
        batch = args[0] if args else next(iter(kwargs.values()), None)
        if is_decode(batch):
            p.sub_step("decode")
        return out
    step._rlprof_patched = True  # type: ignore[attr-defined]
    return step


def _profile(orig: Any) -> Any:
    @functools.wraps(orig)
    def profile(self: Any, is_start: bool = True, *args: Any, **kwargs: Any) -> Any:
        out = orig(self, is_start, *args, **kwargs)
        _State.told = True
        if is_start:
            begin_step()
        else:
            end_step()
        return out
    profile._rlprof_patched = True  # type: ignore[attr-defined]
    return profile


def rlprof_begin_step(worker: Any, step: Optional[int] = None, role: str = "rollout") -> bool:
    """`Worker.rlprof_begin_step(step, role)`, reached through the engine's collective_rpc by
    verl's rollout server's start_profile (role `rollout`) or by the reward model's servers
    (role `reward`, rlprof.integrations.verl_reward): begins RL step `step` in this engine
    process. Returns whether this process records it (its rank and the step are selected)."""
    if _State.profiler is None and not _State.failed and role in _STAGES:
        _State.role = role  # an engine serves one model: its first call names the role
    _State.told = True
    begin_step(step)
    p = _State.profiler
    if p is None or _State.step is None:
        return False
    if _State.role != "rollout":  # the reward model's stage is each engine step (_model_step)
        return bool(p.enabled)
    # The stage is verl's generation phase as the engine sees it: from verl's start_profile
    # (inside its `gen` timer) to its stop_profile, engine steps and idle waits alike (the
    # engine-step ranges inside it show when the engine was busy).
    p.begin_stage(_STAGES[_State.role], _State.role)
    _State.in_stage = True
    return bool(p.enabled)


def rlprof_end_step(worker: Any) -> None:
    """`Worker.rlprof_end_step()`: verl's stop_profile; ends the step and flushes its captures."""
    _State.told = True
    end_step()


def rlprof_samples(worker: Any, records: Sequence[Any]) -> int:
    """`Worker.rlprof_samples(records)`: the rollout server's finished requests
    (rlprof.integrations.vllm_samples, forwarded by verl's server before its stop_profile),
    recorded as samples in this engine's open window by its first worker. Returns how many."""
    if getattr(worker, "rank", 0) != 0 or _State.step is None:
        return 0
    import rlprof
    n = 0
    for r in records:
        r = dict(r)
        n += bool(rlprof.sample(r.pop("id"), **r))
    return n


def patch_model_runner_module(module: Any, class_names: Sequence[str] = ("GPUModelRunner",
                                                                         "CPUModelRunner"),
                              method: str = "execute_model") -> None:
    decode = is_decode_sglang if method == "forward" else is_decode_vllm
    for name in class_names:
        cls = getattr(module, name, None)
        fn = cls.__dict__.get(method) if cls is not None else None
        if fn is None or getattr(fn, "_rlprof_patched", False):
            continue
        setattr(cls, method, _model_step(fn, decode))


def patch_worker_module(module: Any, class_names: Sequence[str] = ("Worker",)) -> None:
    for name in class_names:
        cls = getattr(module, name, None)
        if cls is None:
            continue
        # Methods the engine's collective_rpc("rlprof_begin_step", ...) finds on every worker.
        cls.rlprof_begin_step = rlprof_begin_step
        cls.rlprof_end_step = rlprof_end_step
        cls.rlprof_samples = rlprof_samples
        fn = cls.__dict__.get("profile")
        if fn is None or getattr(fn, "_rlprof_patched", False):
            continue
        setattr(cls, "profile", _profile(fn))


def register() -> None:
    """vLLM's `vllm.general_plugins` entry point: installs rlprof's import hooks in this
    engine process when rlprof's variables are set (a no-op otherwise)."""
    if not (os.environ.get("RLPROF_CONFIG") or
            os.environ.get("RLPROF_ENABLE", "") not in ("", "0")):
        return
    from rlprof import _hooks
    _hooks.install()
    for name in ("vllm.v1.worker.gpu_model_runner", "vllm.v1.worker.cpu_model_runner",
                 "vllm.v1.worker.gpu.model_runner", "vllm.v1.worker.gpu_worker"):
        if name in sys.modules:
            _hooks._apply(name, sys.modules[name])
