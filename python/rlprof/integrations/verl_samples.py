"""verl's trajectories as rlprof samples (issue 33): each trajectory of verl's agent loop, from
its submit to its reward, joined to the vLLM requests that generated it and to the training
step that consumed it — with no file of verl or vLLM edited.

A trajectory passes through four processes, and each records its own part under one id:

* the controller (the process running RayPPOTrainer.fit, with its rlprof window open on the
  profiled steps: rlprof.integrations.verl) asks, through the batch's meta_info, for ids on that
  step's generation (`AgentLoopManager.generate_sequences`);
* an agent loop worker (`AgentLoopWorker._run_agent_loop`, one asyncio task per trajectory)
  mints the id — `s<step>.i<index>.n<rollout_n>.<8 hex>` ("v…" on validation) — and stamps the
  trajectory's submit and end (time.monotonic_ns), each tool call
  (`ToolAgentLoop._call_tool`: name, start, end) and its streamed reward
  (`AgentLoopWorker._compute_score`); the id becomes the vLLM request id of each of its turns
  (`LLMServerClient._vllm_request_id`, which otherwise gives a fresh uuid per turn), and the id
  and stamps ride back in the output's `extra_fields` — verl makes each key a column;
* the rollout server's vLLM frontend records each request (rlprof.integrations.vllm_samples):
  queue, prefill, first and last token, tokens, finish reason — under that id;
* the controller, when the generation returns, records the loop's side of each trajectory
  (`rlprof.sample`: submit, end, tool calls, reward, weight versions `min/max_global_steps`,
  group = verl's `uid`), drops the stamps column and keeps `rlprof_sample` (the id) in the batch;
  `RayPPOTrainer._update_actor` records `rlprof.sample_use(id, "consumed", step, version)` for
  every row it trains on (version = the step: verl's synchronous trainer is on-policy);
  validation trajectories get the outcome "validation".

The analysis joins the records of one id (docs/definitions.md §5.13): one sample per trajectory,
at home in the engine's process. Nothing is done on steps rlprof does not record, nor under
verl's `full_determinism` (whose request ids verl keeps stable on purpose).
"""
from __future__ import annotations

import contextvars
import functools
import inspect
import sys
import time
import uuid
from typing import Any, List, Optional, Tuple

import rlprof
from rlprof._rlprof import recording

ID_COLUMN = "rlprof_sample"    # the trajectory's id, a column of the batch
_STAMPS_COLUMN = "rlprof_stamps"  # (submit, end, tools, reward), dropped by the controller
_FLAG = "rlprof_samples"       # meta_info key: this generation's trajectories are recorded


class _Trajectory:
    __slots__ = ("id", "tools", "reward")

    def __init__(self, tid: str) -> None:
        self.id = tid
        self.tools: List[Tuple[str, int, int]] = []
        self.reward: Optional[Tuple[int, int]] = None


_on: contextvars.ContextVar = contextvars.ContextVar("rlprof_verl_samples_on", default=False)
_current: contextvars.ContextVar = contextvars.ContextVar("rlprof_verl_trajectory", default=None)

_warned = False


def _warn(what: str, e: BaseException) -> None:
    global _warned
    if not _warned:
        _warned = True
        sys.stderr.write(f"rlprof: warning: verl's trajectories: {what} ({e!r}); training continues\n")


def _mint(trajectory: Any) -> str:
    try:
        head = "v" if trajectory.get("validate") else "s"
        return (f"{head}{int(trajectory.get('step', -1))}.i{trajectory.get('sample_index')}"
                f".n{int(trajectory.get('rollout_n', 0))}.{uuid.uuid4().hex[:8]}")
    except Exception:
        return uuid.uuid4().hex


def _wrap_coroutine(cls: Any, name: str, make: Any, module: Any) -> None:
    """cls.name := make(coroutine function underneath); verl's @auto_await re-applied when the
    method wore it (its caller-frame test must see verl's caller, not ours)."""
    fn = cls.__dict__.get(name)
    if fn is None or getattr(fn, "_rlprof_samples", False):
        return
    auto_await = getattr(module, "auto_await", None)
    inner = getattr(fn, "__wrapped__", None) if not inspect.iscoroutinefunction(fn) else None
    if inner is not None and auto_await is not None and inspect.iscoroutinefunction(inner):
        new = auto_await(make(inner))
    elif inspect.iscoroutinefunction(fn):
        new = make(fn)
    else:
        return
    new._rlprof_samples = True
    setattr(cls, name, new)


# -- the agent loop worker -----------------------------------------------------------------------

def _make_worker_generate(fn: Any) -> Any:
    @functools.wraps(fn)
    async def generate_sequences(self: Any, batch: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            on = bool(batch.meta_info.get(_FLAG))
        except Exception:
            on = False
        token = _on.set(on)  # the tasks it creates (one per trajectory) inherit it
        try:
            return await fn(self, batch, *args, **kwargs)
        finally:
            _on.reset(token)
    return generate_sequences


def _make_run_agent_loop(fn: Any) -> Any:
    @functools.wraps(fn)
    async def _run_agent_loop(self: Any, sampling_params: Any, trajectory: Any, *args: Any, **kwargs: Any) -> Any:
        if not _on.get():
            return await fn(self, sampling_params, trajectory, *args, **kwargs)
        t = _Trajectory(_mint(trajectory))
        token = _current.set(t)
        t0 = time.monotonic_ns()
        try:
            out = await fn(self, sampling_params, trajectory, *args, **kwargs)
        finally:
            _current.reset(token)
        try:
            out.extra_fields[ID_COLUMN] = t.id
            out.extra_fields[_STAMPS_COLUMN] = (t0, time.monotonic_ns(), tuple(t.tools), t.reward)
        except Exception as e:
            _warn("a trajectory's id could not be attached", e)
        return out
    return _run_agent_loop


def _make_compute_score(fn: Any) -> Any:
    @functools.wraps(fn)
    async def _compute_score(self: Any, outputs: Any, *args: Any, **kwargs: Any) -> Any:
        t = _current.get()
        if t is None:
            return await fn(self, outputs, *args, **kwargs)
        try:  # verl scores here only when the reward loop streams and no score is there yet
            scores = getattr(self, "reward_loop_worker_handles", None) is not None and outputs[-1].reward_score is None
        except Exception:
            scores = False
        t0 = time.monotonic_ns()
        out = await fn(self, outputs, *args, **kwargs)
        if scores:
            t.reward = (t0, time.monotonic_ns())
        return out
    return _compute_score


def patch_agent_loop(module: Any) -> None:
    """verl.experimental.agent_loop.agent_loop: the worker's side (ids, stamps, reward) and the
    manager's (asks for ids on recorded steps; records the loop's side of each trajectory)."""
    worker = getattr(module, "AgentLoopWorker", None)
    if worker is not None:
        _wrap_coroutine(worker, "generate_sequences", _make_worker_generate, module)
        _wrap_coroutine(worker, "_run_agent_loop", _make_run_agent_loop, module)
        _wrap_coroutine(worker, "_compute_score", _make_compute_score, module)
    manager = getattr(module, "AgentLoopManager", None)
    if manager is not None:
        _wrap_coroutine(manager, "generate_sequences", _make_manager_generate, module)


# -- the tool agent loop and the LLM client (agent loop worker) -----------------------------------

def patch_tool_agent_loop(module: Any) -> None:
    """verl.experimental.agent_loop.tool_agent_loop: each tool call's name, start and end."""
    cls = getattr(module, "ToolAgentLoop", None)
    if cls is None:
        return

    def make(fn: Any) -> Any:
        @functools.wraps(fn)
        async def _call_tool(self: Any, tool_call: Any, *args: Any, **kwargs: Any) -> Any:
            t = _current.get()
            if t is None:
                return await fn(self, tool_call, *args, **kwargs)
            t0 = time.monotonic_ns()
            try:
                return await fn(self, tool_call, *args, **kwargs)
            finally:
                t.tools.append((str(getattr(tool_call, "name", "tool")), t0, time.monotonic_ns()))
        return _call_tool

    _wrap_coroutine(cls, "_call_tool", make, module)


def patch_llm_client(module: Any) -> None:
    """verl.workers.rollout.llm_server: a recorded trajectory's id is the vLLM request id of each
    of its turns (they run one after another)."""
    cls = getattr(module, "LLMServerClient", None)
    fn = cls.__dict__.get("_vllm_request_id") if cls is not None else None
    if fn is None or getattr(fn, "_rlprof_samples", False):
        return

    @functools.wraps(fn)
    def _vllm_request_id(self: Any, request_id: Any, *args: Any, **kwargs: Any) -> Any:
        t = _current.get()
        if t is not None:
            try:
                if not getattr(self.config.actor_rollout_ref.rollout, "full_determinism", False):
                    return t.id
            except Exception:
                pass
        return fn(self, request_id, *args, **kwargs)

    _vllm_request_id._rlprof_samples = True  # type: ignore[attr-defined]
    cls._vllm_request_id = _vllm_request_id


# -- the controller ------------------------------------------------------------------------------

def _column(batch: Any, key: str) -> Any:
    try:
        return batch.non_tensor_batch.get(key)
    except Exception:
        return None


def _int(v: Any) -> Optional[int]:
    try:
        return None if v is None else int(v)
    except (TypeError, ValueError):
        return None


def record_generation(prompts: Any, output: Any) -> int:
    """The loop's side of each trajectory of `output` (verl's generation of `prompts`) as an
    rlprof sample; validation trajectories get the outcome "validation". Drops the stamps column.
    Returns how many were recorded."""
    ids, stamps = _column(output, ID_COLUMN), _column(output, _STAMPS_COLUMN)
    if stamps is not None:
        output.non_tensor_batch.pop(_STAMPS_COLUMN, None)
    if ids is None or stamps is None:
        return 0
    groups = _column(prompts, "uid")
    if groups is None or len(groups) != len(ids):
        groups = _column(output, "uid")
    v0s, v1s = _column(output, "min_global_steps"), _column(output, "max_global_steps")
    validate = bool(getattr(prompts, "meta_info", {}).get("validate", False))
    n = 0
    for i, tid in enumerate(ids):
        if tid is None or stamps[i] is None:
            continue
        submit, end, tools, reward = stamps[i]
        v0 = _int(v0s[i]) if v0s is not None else None
        v1 = _int(v1s[i]) if v1s is not None else None
        version = (v0, v1) if v0 is not None and v1 is not None else (v0 if v0 is not None else v1)
        group = str(groups[i]) if groups is not None and i < len(groups) and groups[i] is not None else None
        n += bool(rlprof.sample(str(tid), submit=submit, end=end, tools=tools, reward=reward,
                                version=version, group=group))
        if validate:
            rlprof.sample_use(str(tid), "validation", at=end)
    return n


def _make_manager_generate(fn: Any) -> Any:
    @functools.wraps(fn)
    async def generate_sequences(self: Any, prompts: Any, *args: Any, **kwargs: Any) -> Any:
        on = recording()
        if on:
            try:
                prompts.meta_info[_FLAG] = True
            except Exception:
                on = False
        try:
            out = await fn(self, prompts, *args, **kwargs)
        finally:
            if on:
                prompts.meta_info.pop(_FLAG, None)
        if on:
            try:
                record_generation(prompts, out)
            except Exception as e:
                _warn("a generation's trajectories could not be recorded", e)
        return out
    return generate_sequences


def record_consumed(batch: Any, step: Any, version: Any = None) -> int:
    """`rlprof.sample_use(id, "consumed", step, version)` for each trajectory of `batch`."""
    ids = _column(batch, ID_COLUMN)
    if ids is None or not recording():
        return 0
    s = _int(step)
    v = _int(version) if version is not None else s
    at = time.monotonic_ns()
    return sum(bool(rlprof.sample_use(str(tid), "consumed", step=s, version=v, at=at)) for tid in ids if tid is not None)


def patch_trainer(module: Any) -> None:
    """verl.trainer.ppo.ray_trainer: RayPPOTrainer._update_actor consumes the batch's
    trajectories at the trainer's step."""
    cls = getattr(module, "RayPPOTrainer", None)
    fn = cls.__dict__.get("_update_actor") if cls is not None else None
    if fn is None or getattr(fn, "_rlprof_samples", False):
        return

    @functools.wraps(fn)
    def _update_actor(self: Any, batch: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            record_consumed(batch, getattr(self, "global_steps", None))
        except Exception as e:
            _warn("a step's consumed trajectories could not be recorded", e)
        return fn(self, batch, *args, **kwargs)

    _update_actor._rlprof_samples = True  # type: ignore[attr-defined]
    cls._update_actor = _update_actor
