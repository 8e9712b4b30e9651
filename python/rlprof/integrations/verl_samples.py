"""verl's trajectories as rlprof samples (issue 33): each trajectory of verl's agent loop, from
its submit to its reward, joined to the vLLM requests that generated it and to the training
step that consumed it — with no file of verl or vLLM edited.

A trajectory passes through four processes, and each records its own part under one id:

* an agent loop worker (`AgentLoopWorker._run_agent_loop`, one asyncio task per trajectory)
  mints the id — `s<step>.i<index>.n<rollout_n>.<8 hex>` ("v…" on validation) — and stamps the
  trajectory's submit and end (time.monotonic_ns), each tool call (`ToolAgentLoop._call_tool`:
  name, start, end) and its streamed reward (`AgentLoopWorker._compute_score`); the id becomes
  the vLLM request id of each of its turns (`LLMServerClient._vllm_request_id`, which otherwise
  gives a fresh uuid per turn);
* the rollout server's vLLM frontend records each request (rlprof.integrations.vllm_samples):
  queue, prefill, first and last token, tokens, finish reason — under that id;
* the id and stamps go where verl sends the trajectory: verl's v1 trainer (its default) puts it
  into the TransferQueue with tags — the id and stamps join them (`agent_loop_tq`'s `tq`); the
  legacy trainer and the async recipes get the worker's output, whose `extra_fields` become
  columns (`rlprof_sample`, kept; `rlprof_stamps`, dropped by the controller);
* the controller (its rlprof window open on the profiled steps) records the loop's side of each
  trajectory it takes (`rlprof.sample`: submit, end, tool calls, reward, weight versions verl's
  `min/max_global_steps`, group = verl's `uid`) — v1: `ReplayBuffer.sample`; legacy and async
  recipes: the agent loop manager's generation — and the actor update's consumption
  (`rlprof.sample_use(id, "consumed", step, version)`; version = the updates the trained policy
  has had, as verl tags the weights it generates with: step − 1 in the synchronous trainers, so
  that staleness is verl's `(global_steps − 1) − max_global_steps`; fully_async's
  `current_param_version`; one-step-off's step); validation trajectories get the outcome
  "validation"; the groups verl's v1 ReplayBuffer evicts get "stale", "filtered" or "failed".

The analysis joins the records of one id (docs/definitions.md §5.13): one sample per trajectory,
at home in the engine's process. Under verl's `full_determinism` the vLLM request ids stay
verl's (it keeps them stable on purpose): the engine's records are then not joined.
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


class _Trajectory:
    __slots__ = ("id", "submit", "end", "tools", "reward")

    def __init__(self, tid: str) -> None:
        self.id = tid
        self.submit = time.monotonic_ns()
        self.end = 0
        self.tools: List[Tuple[str, int, int]] = []
        self.reward: Optional[Tuple[int, int]] = None

    def stamps(self) -> Tuple[int, int, Tuple[Tuple[str, int, int], ...], Optional[Tuple[int, int]]]:
        return (self.submit, self.end or time.monotonic_ns(), tuple(self.tools), self.reward)


def _attach(output: Any, t: _Trajectory) -> None:
    """The trajectory's id and stamps into a worker output's extra_fields (verl makes each key a
    column of the batch)."""
    ef = getattr(output, "extra_fields", None)
    if isinstance(ef, dict):
        ef[ID_COLUMN] = t.id
        ef[_STAMPS_COLUMN] = t.stamps()


_current: contextvars.ContextVar = contextvars.ContextVar("rlprof_verl_trajectory", default=None)

_warned = False


def _warn(what: str, e: BaseException) -> None:
    global _warned
    if not _warned:
        _warned = True
        sys.stderr.write(f"rlprof: warning: verl's trajectories: {what} ({e!r}); training continues\n")


def _plain(v: Any) -> Any:
    """A NonTensorData's / tensor's / numpy scalar's value."""
    if type(v).__name__.startswith("NonTensor"):
        v = getattr(v, "data", v)
    item = getattr(v, "item", None)
    if callable(item):
        try:
            v = item()
        except Exception:
            pass
    return v


def _mint(trajectory: Any) -> str:
    try:
        head = "v" if bool(_plain(trajectory.get("validate"))) else "s"
        return (f"{head}{int(_plain(trajectory.get('step', -1)))}.i{_plain(trajectory.get('sample_index'))}"
                f".n{int(_plain(trajectory.get('rollout_n', 0)))}.{uuid.uuid4().hex[:8]}")
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

def _make_run_agent_loop(fn: Any) -> Any:
    @functools.wraps(fn)
    async def _run_agent_loop(self: Any, sampling_params: Any, trajectory: Any, *args: Any, **kwargs: Any) -> Any:
        t = _Trajectory(_mint(trajectory))
        token = _current.set(t)
        try:
            out = await fn(self, sampling_params, trajectory, *args, **kwargs)
        finally:
            _current.reset(token)
        try:
            if out is not None:  # the legacy worker's output (the v1 worker put it into the queue)
                if not t.end:
                    t.end = time.monotonic_ns()
                _attach(out, t)
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
        t.end = time.monotonic_ns()  # the trajectory is done: generated and scored
        if scores:
            t.reward = (t0, t.end)
        try:
            for o in outputs:
                _attach(o, t)
        except Exception as e:
            _warn("a trajectory's id could not be attached", e)
        return out
    return _compute_score


def patch_agent_loop(module: Any) -> None:
    """verl.experimental.agent_loop.agent_loop: the worker's side (ids, stamps, reward) and the
    manager's (records the loop's side of each trajectory of a recorded step)."""
    worker = getattr(module, "AgentLoopWorker", None)
    if worker is not None:
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


def _versions(first: Any, last: Any) -> Any:
    """verl's min / max_global_steps as rlprof.sample's `version`: (first, last), or the one known."""
    v0, v1 = _int(first), _int(last)
    return (v0, v1) if v0 is not None and v1 is not None else (v0 if v0 is not None else v1)


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
        version = _versions(v0s[i] if v0s is not None else None, v1s[i] if v1s is not None else None)
        group = str(groups[i]) if groups is not None and i < len(groups) and groups[i] is not None else None
        n += bool(rlprof.sample(str(tid), submit=submit, end=end, tools=tools, reward=reward,
                                version=version, group=group))
        if validate:
            rlprof.sample_use(str(tid), "validation", at=end)
    return n


def _make_manager_generate(fn: Any) -> Any:
    @functools.wraps(fn)
    async def generate_sequences(self: Any, prompts: Any, *args: Any, **kwargs: Any) -> Any:
        out = await fn(self, prompts, *args, **kwargs)
        try:
            if recording():
                record_generation(prompts, out)
            else:
                out.non_tensor_batch.pop(_STAMPS_COLUMN, None)
            _ensure_id_column(out)
        except Exception as e:
            _warn("a generation's trajectories could not be recorded", e)
        return out
    return generate_sequences


def _ensure_id_column(out: Any) -> None:
    """Every generation's output has the id column (None where no id was minted): the async
    recipes concatenate samples generated inside and outside rlprof's windows, and verl's concat
    wants the same columns in each."""
    nt = getattr(out, "non_tensor_batch", None)
    if nt is not None and ID_COLUMN not in nt:
        import numpy as np
        col = np.empty(len(out), dtype=object)
        col[:] = None
        nt[ID_COLUMN] = col


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
        try:  # the policy step s trains has had s − 1 updates: verl tags the weights it made so
            step = _int(getattr(self, "global_steps", None))
            if not _AsyncUpdate.depth:  # an async recipe's _fit_update_actor recorded them
                record_consumed(batch, step, None if step is None else step - 1)
        except Exception as e:
            _warn("a step's consumed trajectories could not be recorded", e)
        return fn(self, batch, *args, **kwargs)

    _update_actor._rlprof_samples = True  # type: ignore[attr-defined]
    cls._update_actor = _update_actor


# -- verl's async recipes ------------------------------------------------------------------------

class _AsyncUpdate:
    depth = 0  # inside an async recipe's _fit_update_actor (one trainer thread)


def patch_fully_async_rollouter(module: Any) -> None:
    """verl.experimental.fully_async_policy.fully_async_rollouter: the rollouter's generation of
    each sample (`FullyAsyncAgentLoopManager.generate_sequences_single`) mints ids and records
    the loop's side while the rollouter's window is open."""
    cls = getattr(module, "FullyAsyncAgentLoopManager", None)
    if cls is not None:
        _wrap_coroutine(cls, "generate_sequences_single", _make_manager_generate, module)


def patch_update_actor(cls: Any, version_attr: str) -> None:
    """A separate-pool trainer's `_fit_update_actor` (verl's fully_async: version
    `current_param_version`, the version verl counts staleness against; one-step-off:
    `global_steps`) consumes the batch's trajectories at `global_steps`."""
    fn = getattr(cls, "_fit_update_actor", None) if cls is not None else None
    if fn is None or cls.__dict__.get("_rlprof_samples_update", False) or inspect.iscoroutinefunction(fn):
        return

    @functools.wraps(fn)
    def _fit_update_actor(self: Any, batch: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            step = getattr(self, "global_steps", None)
            record_consumed(batch, step, getattr(self, version_attr, step))
        except Exception as e:
            _warn("a step's consumed trajectories could not be recorded", e)
        _AsyncUpdate.depth += 1  # the legacy trainer's _update_actor it calls records nothing
        try:
            return fn(self, batch, *args, **kwargs)
        finally:
            _AsyncUpdate.depth -= 1

    cls._fit_update_actor = _fit_update_actor
    cls._rlprof_samples_update = True


# -- verl's v1 trainer (TransferQueue) -----------------------------------------------------------

class _TagsProxy:
    """agent_loop_tq's `tq` (the transfer_queue module): `async_kv_batch_put` from inside a
    trajectory adds its id and stamps to each key's tags — what the v1 controller sees of it."""

    def __init__(self, real: Any) -> None:
        self._real = real

    def __getattr__(self, name: str) -> Any:
        if name == "_real" or (name.startswith("__") and name.endswith("__")):
            raise AttributeError(name)  # unpickling probes these before _real exists
        return getattr(self._real, name)

    def __reduce__(self) -> Any:  # Ray pickles the worker class with its module's globals
        return (_TagsProxy, (self._real,))

    async def async_kv_batch_put(self, *args: Any, **kwargs: Any) -> Any:
        t = _current.get()
        tags = kwargs.get("tags")
        if t is not None and isinstance(tags, list):
            try:
                submit, end, tools, reward = t.stamps()
                st = [submit, end, [list(x) for x in tools], list(reward) if reward else None]
                for tag in tags:
                    if isinstance(tag, dict):
                        tag[ID_COLUMN] = t.id
                        tag[_STAMPS_COLUMN] = st
            except Exception as e:
                _warn("a trajectory's id could not be tagged", e)
        return await self._real.async_kv_batch_put(*args, **kwargs)


def patch_agent_loop_tq(module: Any) -> None:
    """verl.trainer.ppo.v1.agent_loop_tq: the v1 worker's puts carry the trajectory's tags."""
    real = getattr(module, "tq", None)
    if real is None or isinstance(real, _TagsProxy):
        return
    module.tq = _TagsProxy(real)


def _record_from_tags(batch: Any, validate: bool) -> int:
    keys, tags = getattr(batch, "keys", None) or [], getattr(batch, "tags", None) or []
    seen, n = set(), 0
    for key, tag in zip(keys, tags):
        tid = tag.get(ID_COLUMN) if isinstance(tag, dict) else None
        st = tag.get(_STAMPS_COLUMN) if tid else None
        if not tid or tid in seen or not st:
            continue
        seen.add(tid)
        submit, end, tools, reward = st
        version = _versions(tag.get("min_global_steps"), tag.get("max_global_steps"))
        group = str(key).split("_")[0]  # verl's key: {uid}_{session}_{index}
        n += bool(rlprof.sample(str(tid), submit=submit, end=end, tools=[tuple(x) for x in tools],
                                reward=tuple(reward) if reward else None, version=version, group=group))
        if validate:
            rlprof.sample_use(str(tid), "validation", at=end)
    return n


def patch_replay_buffer(module: Any) -> None:
    """verl.trainer.ppo.v1.replay_buffer: what the v1 controller takes from the queue — the loop's
    side of each trajectory, recorded in its window (validation's: outcome "validation")."""
    for name in ("ReplayBuffer", "ReplayBufferAsync"):
        cls = getattr(module, name, None)
        fn = cls.__dict__.get("sample") if cls is not None else None
        if fn is None or getattr(fn, "_rlprof_samples", False) or inspect.iscoroutinefunction(fn):
            continue

        def make(fn: Any) -> Any:
            @functools.wraps(fn)
            def sample(self: Any, *args: Any, **kwargs: Any) -> Any:
                out = fn(self, *args, **kwargs)
                try:
                    if recording():
                        part = kwargs.get("partition_id", args[1] if len(args) > 1 else "train")
                        batch = out[0] if isinstance(out, tuple) else out
                        _record_from_tags(batch, part == "val")
                except Exception as e:
                    _warn("the trajectories taken from verl's queue could not be recorded", e)
                return out
            sample._rlprof_samples = True  # type: ignore[attr-defined]
            return sample

        cls.sample = make(fn)
    _patch_evictions(getattr(module, "ReplayBuffer", None))


# verl's reasons to evict a group (ReplayBuffer's eviction_reasons: stale, dapo, failed) as outcomes
_EVICTIONS = (("stale", 0), ("filtered", 1), ("failed", 2))


def _patch_evictions(cls: Any) -> None:
    """ReplayBuffer._evict_terminal_groups: the groups verl drops — too stale, filtered by DAPO's
    filter_groups, failed — are samples with that outcome (their trajectories recorded first)."""
    fn = cls.__dict__.get("_evict_terminal_groups") if cls is not None else None
    if fn is None or getattr(fn, "_rlprof_samples", False):
        return

    @functools.wraps(fn)
    def _evict_terminal_groups(self: Any, global_steps: Any, partition_id: Any, eviction_reasons: Any,
                               *args: Any, **kwargs: Any) -> Any:
        try:
            if recording():
                part = self.partitions.get(partition_id, {})
                at = time.monotonic_ns()
                for outcome, i in _EVICTIONS:
                    uids = eviction_reasons[i]
                    if not uids:
                        continue
                    keys = [k for k in part if str(k).split("_")[0] in uids]  # verl's key: {uid}_…
                    tags = [part[k] for k in keys]
                    _record_from_tags(type("Batch", (), {"keys": keys, "tags": tags}), False)
                    for tid in {t.get(ID_COLUMN) for t in tags if isinstance(t, dict)}:
                        if tid:
                            rlprof.sample_use(str(tid), outcome, step=_int(global_steps), at=at)
        except Exception as e:
            _warn("the trajectories verl evicted could not be recorded", e)
        return fn(self, global_steps, partition_id, eviction_reasons, *args, **kwargs)

    _evict_terminal_groups._rlprof_samples = True  # type: ignore[attr-defined]
    cls._evict_terminal_groups = _evict_terminal_groups


def patch_trainer_v1(module: Any) -> None:
    """verl.trainer.ppo.v1.trainer_base: PPOTrainer._update_actor consumes its batch's
    trajectories (their ids are the batch's tags) at the trainer's step."""
    cls = getattr(module, "PPOTrainer", None)
    fn = cls.__dict__.get("_update_actor") if cls is not None else None
    if fn is None or getattr(fn, "_rlprof_samples", False):
        return

    @functools.wraps(fn)
    def _update_actor(self: Any, batch: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            if recording():
                step = _int(getattr(self, "global_steps", None))
                version = None if step is None else step - 1  # verl: staleness = (step − 1) − max_global_steps
                at = time.monotonic_ns()
                for tid in {t.get(ID_COLUMN) for t in (getattr(batch, "tags", None) or []) if isinstance(t, dict)}:
                    if tid:
                        rlprof.sample_use(str(tid), "consumed", step=step, version=version, at=at)
        except Exception as e:
            _warn("a step's consumed trajectories could not be recorded", e)
        return fn(self, batch, *args, **kwargs)

    _update_actor._rlprof_samples = True  # type: ignore[attr-defined]
    cls._update_actor = _update_actor
