"""Rollout servers (vLLM, SGLang): the engine's model-execution step as rlprof decode steps.

vLLM loads `vllm.general_plugins` entry points in every engine process (`register()` below,
declared in python/pyproject.toml); the launcher's bootstrap does the same for any process
that imports the model runner. Both wrap the runner's step method:

  vLLM    vllm.v1.worker.gpu_model_runner.GPUModelRunner.execute_model(scheduler_output, ...)
          (the CPU runner, vllm.v1.worker.cpu_model_runner.CPUModelRunner, inherits it)
          vllm.v1.worker.gpu_worker.Worker.profile(is_start)   (verl's start/stop_profile)
  SGLang  sglang.srt.model_executor.model_runner.ModelRunner.forward(forward_batch, ...)

Each engine step runs inside the stage `rollout_generate` (role rollout); a step that decodes
(vLLM: no new request and at most 1 + speculative tokens per request; SGLang: a batch whose
forward_mode is decode) advances the `decode` sub-step after it, so a role-wide or
`stage: rollout_generate` schedule with `unit: decode` (and profile_token_start/end) selects
exactly those iterations. Prefill steps are recorded but not counted.

Steps: the engine's profile(is_start=True) call (verl's `start_profile` on the rollout
replicas) begins the next RL step and profile(False) ends it; an engine never told begins
step 1 at its first model step and ends it at exit. Identity: the process hosts role
`rollout`; its rank is the replica rank (RLPROF_REPLICA, else RANK), as verl numbers Agent
Loop replicas.
"""
from __future__ import annotations

import functools
import os
import sys
from typing import Any, Optional, Sequence

from rlprof.profiler import Profiler

_STAGE = "rollout_generate"


class _State:
    profiler: Optional[Profiler] = None
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


def profiler() -> Optional[Profiler]:
    """The engine process's Profiler (made at its first use), or None when no config is set."""
    if _State.profiler is None:
        path = os.environ.get("RLPROF_CONFIG")
        if not path or _State.failed:
            return None
        overrides = [w for w in os.environ.get("RLPROF_OVERRIDES", "").splitlines() if w.strip()]
        try:
            _State.profiler = Profiler(
                path, overrides=overrides, rank=_env_int("RLPROF_REPLICA", "RANK") or 0,
                roles=["rollout"], run_id=os.environ.get("RLPROF_RUN_ID") or None,
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
        p = profiler()
        if p is None:
            return orig(self, *args, **kwargs)
        if _State.step is None:
            if _State.told:  # between verl's stop_profile and the next start_profile
                return orig(self, *args, **kwargs)
            begin_step()
        if not _State.in_stage:
            p.begin_stage(_STAGE, "rollout")
            _State.in_stage = True
        rid = _rlprof.range_start(name)  # one range per engine step
        try:
            out = orig(self, *args, **kwargs)
        finally:
            _rlprof.range_end(rid)
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
        fn = cls.__dict__.get("profile") if cls is not None else None
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
                 "vllm.v1.worker.gpu_worker"):
        if name in sys.modules:
            _hooks._apply(name, sys.modules[name])
