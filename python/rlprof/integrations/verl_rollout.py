"""verl's rollout servers with `tool: rlprof`: the generation captured where it runs.

verl 0.9's vLLM rollout server (`vLLMHttpServer`, a Ray actor holding vLLM's AsyncLLM, whose
engine runs the model in worker processes of its own) keeps its profiler config only for
tools `torch` and `npu` ("agent loop only support torch and npu profiler") and otherwise never
starts anything, so the generation — most of a GRPO step — would be a gap. Patched here, with
no file of verl or vLLM edited:

* the trainer (the process running verl's RayPPOTrainer loop): `_start_profiling` is called
  every step with the trainer's `global_steps`; `LLMServerManager.start_profile()` passes that
  step on (`profile_step=`) to the rollout servers when their profiler tool is rlprof;
* the server (`vLLMHttpServer.start_profile` / `stop_profile`): when its rollout profiler
  config says `tool: rlprof` and `enable`, it calls `rlprof_begin_step(step)` /
  `rlprof_end_step()` on every worker of its engine through vLLM's `collective_rpc`; verl's own
  behaviour for other tools is unchanged;
* the engine's workers (rlprof.integrations.vllm): those methods begin and end the RL step in
  the worker process, whose model-runner hook records the stage `rollout_generate` with one
  range per engine step and its decode sub-steps. Which replica records is rlprof's plan of
  verl's resolved config (rollout `ranks` are replica ranks), so the captures are those
  `rlprof plan` lists.

verl's rule for the rollout window is kept: the trainer starts it around generation on the
profiled steps (`global_profiler.steps`), in discrete and end-to-end mode alike.
"""
from __future__ import annotations

import functools
import inspect
import sys
from typing import Any, Optional


class _Trainer:
    step: Optional[int] = None  # the trainer's current global step


def _warn(what: str, e: BaseException) -> None:
    sys.stderr.write(f"rlprof: warning: {what} ({e!r}); the rollout is not recorded\n")


def _tool_is_rlprof(profiler_config: Any) -> bool:
    try:
        return (profiler_config is not None and getattr(profiler_config, "tool", None) == "rlprof"
                and bool(getattr(profiler_config, "enable", False)))
    except Exception:
        return False


def _continues_a_run(trainer: Any) -> bool:
    """The trainer's current step is inside (not the first of) a profile_continuous_steps run
    recorded by rlprof."""
    try:
        gp = trainer.config.global_profiler
        steps = list(gp.steps or [])
        step = int(trainer.global_steps)
        return (gp.tool == "rlprof" and bool(gp.get("profile_continuous_steps", False)) and
                step in steps and step - 1 in steps)
    except Exception:
        return False


def _tool_rlprof(trainer: Any) -> bool:
    try:
        return trainer.config.global_profiler.tool == "rlprof"
    except Exception:
        return False


def patch_trainer(module: Any) -> None:
    """verl.trainer.ppo.ray_trainer: RayPPOTrainer._start_profiling notes the step (every step
    calls it, profiled or not); with tool rlprof, `_start_profiling` / `_stop_profiling` also
    open and close the controller's own window (rlprof.integrations.verl, role `controller`)
    around the worker groups' ones."""
    from rlprof.integrations import verl_samples
    verl_samples.patch_trainer(module)  # the trajectories each step consumes
    cls = getattr(module, "RayPPOTrainer", None)
    fn = cls.__dict__.get("_start_profiling") if cls is not None else None
    stop_fn = cls.__dict__.get("_stop_profiling") if cls is not None else None
    if fn is None or getattr(fn, "_rlprof_patched", False):
        return
    from rlprof.integrations import verl as verl_integration
    from rlprof.integrations import verl_reward

    @functools.wraps(fn)
    def _start_profiling(self: Any, do_profile: Any = None, *args: Any, **kwargs: Any) -> Any:
        _Trainer.step = getattr(self, "global_steps", None)
        if not do_profile and _continues_a_run(self):
            # verl starts a profile_continuous_steps run once, at its first step, and stops it
            # after its last: the workers would never hear of the steps in between. Tell them
            # (rlprof's backend keeps the window open across the boundary: one capture
            # `steps<A>-<B>`, as the plan says).
            do_profile = True
        if do_profile and _Trainer.step is not None and _tool_rlprof(self):
            verl_integration.controller_start(int(_Trainer.step))
            verl_reward.trainer_begin(self, _Trainer.step)
        return fn(self, do_profile, *args, **kwargs)

    _start_profiling._rlprof_patched = True  # type: ignore[attr-defined]
    cls._start_profiling = _start_profiling
    _patch_fit(cls)
    if stop_fn is None:
        return

    @functools.wraps(stop_fn)
    def _stop_profiling(self: Any, do_profile: Any = None, *args: Any, **kwargs: Any) -> Any:
        try:
            return stop_fn(self, do_profile, *args, **kwargs)
        finally:
            if do_profile and _tool_rlprof(self):
                verl_reward.trainer_end(self)
                verl_integration.controller_stop()

    _stop_profiling._rlprof_patched = True  # type: ignore[attr-defined]
    cls._stop_profiling = _stop_profiling


def _patch_fit(cls: Any) -> None:
    """The trainer's fit loop makes the controller's Profiler before its first step (so that
    the first profiled step's window opens when verl starts profiling, not after rlprof's
    setup: issue 28, the window within 1 % of verl's timing_s/step)."""
    fit = cls.__dict__.get("fit")
    if fit is None or getattr(fit, "_rlprof_patched", False):
        return
    from rlprof.integrations import verl as verl_integration

    @functools.wraps(fit)
    def patched_fit(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            steps = self.config.global_profiler.get("steps", None)
        except Exception:
            steps = None
        if steps and _tool_rlprof(self):
            verl_integration.controller_prepare()
        return fit(self, *args, **kwargs)

    patched_fit._rlprof_patched = True  # type: ignore[attr-defined]
    cls.fit = patched_fit


def _v1_continues_a_run(trainer: Any) -> bool:
    try:
        gp = trainer.config.global_profiler
        return (gp.tool == "rlprof" and bool(gp.get("profile_continuous_steps", False)) and
                bool(trainer.curr_step_profile) and bool(trainer.prev_step_profile))
    except Exception:
        return False


def patch_trainer_v1(module: Any) -> None:
    """verl.trainer.ppo.v1.trainer_base (verl 0.9's default trainer, `trainer.use_v1: true`:
    PPOTrainer and its sync / colocated-async / separate-async subclasses). Its
    `_start_profiling()` / `_stop_profiling()` decide from the trainer's own flags and run inside
    the `step` timer; patched like the legacy trainer's: the step noted for the rollout servers,
    the steps inside a profile_continuous_steps run told to the workers, and the controller's
    window opened there and closed when the `step` timer ends."""
    from rlprof.integrations import verl_samples
    verl_samples.patch_trainer_v1(module)  # the trajectories each step consumes
    cls = getattr(module, "PPOTrainer", None)
    start = cls.__dict__.get("_start_profiling") if cls is not None else None
    stop = cls.__dict__.get("_stop_profiling") if cls is not None else None
    if start is None or stop is None or getattr(start, "_rlprof_patched", False):
        return
    from rlprof.integrations import verl as verl_integration
    from rlprof.integrations import verl_reward

    @functools.wraps(start)
    def _start_profiling(self: Any, *args: Any, **kwargs: Any) -> Any:
        _Trainer.step = getattr(self, "global_steps", None)
        profiled = bool(getattr(self, "curr_step_profile", False))
        if profiled and _Trainer.step is not None and _tool_rlprof(self):
            verl_integration.controller_start(int(_Trainer.step))
            verl_reward.trainer_begin(self, _Trainer.step)
        if _v1_continues_a_run(self):
            # verl starts a continuous run only at its first step: let it start this one too
            # (rlprof's backends carry the open window over: one capture steps<A>-<B>).
            saved, self.prev_step_profile = self.prev_step_profile, False
            try:
                return start(self, *args, **kwargs)
            finally:
                self.prev_step_profile = saved
        return start(self, *args, **kwargs)

    @functools.wraps(stop)
    def _stop_profiling(self: Any, *args: Any, **kwargs: Any) -> Any:
        was = bool(getattr(self, "curr_step_profile", False))
        try:
            return stop(self, *args, **kwargs)
        finally:
            nxt = bool(getattr(self, "curr_step_profile", False))  # verl moved next into curr
            try:
                continuous = bool(self.config.global_profiler.get("profile_continuous_steps", False))
            except Exception:
                continuous = False
            if was and not (continuous and nxt) and _tool_rlprof(self):
                verl_reward.trainer_end(self)
                verl_integration.controller_stop(after_step_timer=True)

    _start_profiling._rlprof_patched = True  # type: ignore[attr-defined]
    _stop_profiling._rlprof_patched = True  # type: ignore[attr-defined]
    cls._start_profiling = _start_profiling
    cls._stop_profiling = _stop_profiling
    _patch_fit(cls)


def patch_server_manager(module: Any) -> None:
    """verl.workers.rollout.llm_server: LLMServerManager.start_profile passes the trainer's step
    to servers whose profiler tool is rlprof; a recorded trajectory's id names its vLLM requests
    (rlprof.integrations.verl_samples)."""
    from rlprof.integrations import verl_samples
    verl_samples.patch_llm_client(module)
    cls = getattr(module, "LLMServerManager", None)
    fn = cls.__dict__.get("start_profile") if cls is not None else None
    if fn is None or getattr(fn, "_rlprof_patched", False):
        return

    # verl 0.9.1 decorates it with @auto_await, which decides by its caller's frame whether to
    # hand back the coroutine (an async caller: fully_async's rollouter awaits it) or to run it:
    # the coroutine underneath is wrapped and auto_await applied again, so that the caller stays
    # verl's own.
    inner = getattr(fn, "__wrapped__", None)
    auto_await = getattr(module, "auto_await", None)
    if inner is not None and auto_await is not None and inspect.iscoroutinefunction(inner):
        @functools.wraps(inner)
        async def start_profile_async(self: Any, *args: Any, **kwargs: Any) -> Any:
            rollout = getattr(self, "rollout_config", None)
            if _tool_is_rlprof(getattr(rollout, "profiler", None)) and _Trainer.step is not None:
                kwargs.setdefault("profile_step", int(_Trainer.step))
            return await inner(self, *args, **kwargs)

        start_profile = auto_await(start_profile_async)
    else:
        @functools.wraps(fn)
        def start_profile(self: Any, *args: Any, **kwargs: Any) -> Any:
            rollout = getattr(self, "rollout_config", None)
            if _tool_is_rlprof(getattr(rollout, "profiler", None)) and _Trainer.step is not None:
                kwargs.setdefault("profile_step", int(_Trainer.step))
            return fn(self, *args, **kwargs)

    start_profile._rlprof_patched = True  # type: ignore[attr-defined]
    cls.start_profile = start_profile


def patch_vllm_server(module: Any) -> None:
    """verl.workers.rollout.vllm_rollout.vllm_async_server: vLLMHttpServer drives rlprof's
    steps in its engine's workers."""
    cls = getattr(module, "vLLMHttpServer", None)
    if cls is None or getattr(cls, "_rlprof_patched", False):
        return
    init, start, stop = cls.__init__, cls.start_profile, cls.stop_profile

    @functools.wraps(init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self._rlprof_on = _tool_is_rlprof(getattr(getattr(self, "config", None), "profiler", None))
        self._rlprof_calls = 0

    @functools.wraps(start)
    async def start_profile(self: Any, **kwargs: Any) -> Any:
        step = kwargs.pop("profile_step", None)
        out = await start(self, **kwargs)
        if getattr(self, "_rlprof_on", False) and getattr(self, "node_rank", 0) == 0:
            self._rlprof_calls += 1
            if step is None:  # a trainer rlprof does not know: count verl's calls
                step = self._rlprof_calls
            try:
                await self.engine.collective_rpc("rlprof_begin_step", args=(int(step),))
                # Each request this server finishes until stop_profile: a sample, recorded by
                # its engine's first worker (rlprof.integrations.vllm_samples).
                from rlprof.integrations import vllm_samples
                vllm_samples.start_forwarding()
            except Exception as e:  # never break generation
                self._rlprof_on = False
                _warn(f"rollout replica {getattr(self, 'replica_rank', '?')}: cannot start rlprof "
                      "in the vLLM engine", e)
        return out

    @functools.wraps(stop)
    async def stop_profile(self: Any, **kwargs: Any) -> Any:
        if getattr(self, "_rlprof_on", False) and getattr(self, "node_rank", 0) == 0:
            try:
                from rlprof.integrations import vllm_samples
                records, dropped = vllm_samples.stop_forwarding()
                if dropped:
                    sys.stderr.write(f"rlprof: warning: rollout replica {getattr(self, 'replica_rank', '?')}: "
                                     f"{dropped} samples over the limit of one step were not recorded\n")
                if records:
                    await self.engine.collective_rpc("rlprof_samples", args=(records,))
            except Exception as e:  # never break generation
                sys.stderr.write(f"rlprof: warning: rollout replica {getattr(self, 'replica_rank', '?')}: "
                                 f"its samples could not be recorded ({e!r})\n")
            try:
                await self.engine.collective_rpc("rlprof_end_step")
            except Exception as e:
                self._rlprof_on = False
                _warn(f"rollout replica {getattr(self, 'replica_rank', '?')}: cannot stop rlprof "
                      "in the vLLM engine", e)
        return await stop(self, **kwargs)

    async def rlprof_begin_reward_step(self: Any, step: int) -> bool:
        """Actor method (a reward model's server; verl never profiles those): begins RL step
        `step` in its engine's workers as role `reward` (rlprof.integrations.verl_reward)."""
        if getattr(self, "node_rank", 0) != 0:
            return False
        out = await self.engine.collective_rpc("rlprof_begin_step", args=(int(step), "reward"))
        return any(bool(x) for x in (out or []))

    async def rlprof_end_reward_step(self: Any) -> None:
        if getattr(self, "node_rank", 0) == 0:
            await self.engine.collective_rpc("rlprof_end_step")

    cls.__init__ = __init__
    cls.start_profile = start_profile
    cls.stop_profile = stop_profile
    cls.rlprof_begin_reward_step = rlprof_begin_reward_step
    cls.rlprof_end_reward_step = rlprof_end_reward_step
    cls._rlprof_patched = True
