"""verl 0.9's async recipes (`verl.experimental.fully_async_policy`, `.one_step_off_policy`) with
`tool: rlprof`: rlprof.rl's facts (python/rlprof/rl.py) from the recipe's own calls, no file of
verl edited.

Where each fact is recorded (docs/notes/verl-async-recipes.md maps the recipe; docs/verl-async.md
shows a run):

* the trainer (the `FullyAsyncTrainer` actor; its rlprof session is the controller's, role
  `controller`, opened on the steps verl profiles by rlprof.integrations.verl_rollout):
  - `CheckpointEngineManager.update_weights` is the stage `weight_sync`, split into
    sync/drain (`abort_replicas` + `release_kv_cache_replicas`), sync/wait
    (`build_process_group`), sync/transfer (from there to `resume_kv_cache_replicas`: the
    actor's send, the rollout workers' receive and load into vLLM, and `finalize`) and
    sync/resume (`resume_kv_cache_replicas` + `resume_generation_replicas`); at its end
    `rl.published(v)` with verl's `current_param_version` and `rl/sync_bytes` (what the actor
    worker sent, handed back through the sync's own return value and taken out again);
  - `rl.trainer_version(global_steps)` after every update (`_fit_update_local_step`): the number
    of updates done, as rl.py defines it (published versions stay in verl's param versions);
  - `rl.wait("samples")` around each `MessageQueueClient.get_sample` and `rl.queue_depth` from
    its answer; `rl.consumed(current_param_version - v)` per trajectory taken
    (`_collect_metrics_from_samples`, verl's own `trajectory_param_versions`);
* the actor worker (verl's worker profiler, role `actor`): its side of the sync
  (`ActorRolloutRefWorker.update_weights` through a checkpoint engine) is the stage
  `weight_sync` with sync/transfer and the bytes of the weights it sent;
* the rollouter (the `FullyAsyncRollouter` actor, where verl starts no profiler): a Profiler of
  its own, role `rollout` (rank 0, beside the vLLM engine's captures of that rank), with verl's
  rollout window: opened by the trainer's `rollouter._start_profiling()` after a sync, closed by
  `_stop_profiling()` before the next, the step being the count of those calls (as the engine's
  are). In it: `rl.weight_version(v)` at the window's start (v counted from the syncs the
  rollouter was told of: `reset_staleness`), `rl.generated(n, tokens)` per sample the queue
  accepted (n = its trajectories, tokens = their response tokens), the stage `rollout_generate`
  while at least one sample is being generated, and `rl.wait("staleness" | "queue_full")` while
  the processor is paused and idle (from verl's `idle_start_time` to the resume).
verl's one-step-off recipe (`OneStepOffRayTrainer`, `patch_one_step_off`) gets the trainer's side:
wait for samples, staleness, trainer version, the sync's phases and the publish (in updates).
Outside an open window every call is a no-op, as every other marker.
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
import os
import sys
from typing import Any, Callable, List, Optional

from rlprof import _rlprof
from rlprof import rl

_BYTES_KEY = "rlprof/sync_bytes"  # carried from the actor worker to the manager, then removed


def _warn(what: str, e: BaseException) -> None:
    sys.stderr.write(f"rlprof: warning: {what} ({e!r}); it runs unprofiled\n")


def _actor_class(obj: Any) -> Any:
    """The user class under a `@ray.remote` ActorClass (Ray 2.60 pickles it from here)."""
    meta = getattr(obj, "__ray_metadata__", None)
    if meta is None:
        return obj
    modified = getattr(meta, "modified_class", None)
    return getattr(modified, "__ray_actor_class__", None) or modified


def _classes(obj: Any) -> List[Any]:
    """Where a method of a `@ray.remote` class lives: Ray's modified class holds its own copies
    of the methods (wrapped for its tracing) and is what actors run; the user class is what a
    by-reference pickle finds. Both are patched."""
    out = []
    meta = getattr(obj, "__ray_metadata__", None)
    modified = getattr(meta, "modified_class", None) if meta is not None else None
    if modified is not None:
        out.append(modified)
    user = _actor_class(obj)
    if user is not None and user not in out:
        out.append(user)
    return out


def _wrap_all(obj: Any, name: str, make: Callable[[Any], Any]) -> None:
    for cls in _classes(obj):
        if name in cls.__dict__:
            _wrap(cls, name, make)


def _wrap(cls: Any, name: str, make: Callable[[Any], Any]) -> bool:
    fn = cls.__dict__.get(name) if cls is not None else None
    if fn is None or getattr(fn, "_rlprof_patched", False):
        return False
    new = make(fn)
    new._rlprof_patched = True
    setattr(cls, name, new)
    return True


# ---- the weight sync (trainer process: CheckpointEngineManager) -------------------------------

class _Sync:
    recipe: Optional[str] = None       # "fully_async" / "one_step_off" while its trainer syncs
    active = False                     # inside CheckpointEngineManager.update_weights
    version: Optional[int] = None
    transfer: Optional[Any] = None     # the open sync/transfer range


def _close_transfer() -> None:
    r, _Sync.transfer = _Sync.transfer, None
    if r is not None:
        r.__exit__(None, None, None)


def patch_checkpoint_engine(module: Any) -> None:
    """verl.checkpoint_engine.base: CheckpointEngineManager's steps as sync phases."""
    cls = getattr(module, "CheckpointEngineManager", None)
    auto_await = getattr(module, "auto_await", None)
    if cls is None or auto_await is None or getattr(cls, "_rlprof_patched", False):
        return
    cls._rlprof_patched = True

    def coroutine_of(fn: Any) -> Any:
        inner = getattr(fn, "__wrapped__", None)  # under verl's @auto_await
        return inner if inner is not None and inspect.iscoroutinefunction(inner) else None

    def phase(method: str, name: str, before: Callable[[], None] = lambda: None) -> None:
        def make(fn: Any) -> Any:
            inner = coroutine_of(fn)
            if inner is None:
                return fn

            @functools.wraps(inner)
            async def wrapped(self: Any, *args: Any, **kwargs: Any) -> Any:
                if not _Sync.active:
                    return await inner(self, *args, **kwargs)
                before()
                with rl.sync_phase(name):
                    return await inner(self, *args, **kwargs)
            return auto_await(wrapped)
        _wrap(cls, method, make)

    phase("abort_replicas", "drain")
    phase("release_kv_cache_replicas", "drain")
    phase("resume_kv_cache_replicas", "resume", before=_close_transfer)
    phase("resume_generation_replicas", "resume", before=_close_transfer)

    def make_build(fn: Any) -> Any:
        @functools.wraps(fn)
        def build_process_group(self: Any, *args: Any, **kwargs: Any) -> Any:
            if not _Sync.active:
                return fn(self, *args, **kwargs)
            with rl.sync_phase("wait"):
                out = fn(self, *args, **kwargs)
            # What follows in update_weights is the transfer: the actor's send and the rollout
            # workers' receive and load (one ray.get), then finalize.
            _Sync.transfer = rl.sync_phase("transfer", version=_Sync.version).__enter__()
            return out
        return build_process_group
    _wrap(cls, "build_process_group", make_build)

    def make_update(fn: Any) -> Any:
        inner = coroutine_of(fn)
        if inner is None:
            return fn

        @functools.wraps(inner)
        async def update_weights(self: Any, global_steps: Any = None, *args: Any, **kwargs: Any) -> Any:
            if getattr(self, "backend", None) == "naive" or _Sync.active:
                return await inner(self, global_steps, *args, **kwargs)
            recipe = _Sync.recipe
            fully_async = recipe == "fully_async"
            _Sync.active, _Sync.version = True, global_steps
            # verl's one-step-off and sync trainers time the sync in marked_timer
            # ("update_weights", a weight_sync alias); fully_async's timer is not an alias.
            stage = _annotate_stage("weight_sync", role="controller") if fully_async else contextlib.nullcontext()
            try:
                with stage:
                    out = await inner(self, global_steps, *args, **kwargs)
                    _close_transfer()
                    nbytes = out.pop(_BYTES_KEY, None) if isinstance(out, dict) else None
                    if nbytes:
                        _rlprof.counter("rl/sync_bytes", float(nbytes))
                    if global_steps is not None and recipe is not None:
                        # fully_async tags a sync with its param version; one_step_off with its
                        # global_steps s, whose weights hold s - 1 updates (s = 0 and 1: none)
                        rl.published(int(global_steps) if fully_async else max(int(global_steps) - 1, 0))
                return out
            finally:
                _close_transfer()
                _Sync.active = False
        return auto_await(update_weights)
    _wrap(cls, "update_weights", make_update)


def _annotate_stage(name: str, role: str) -> Any:
    from rlprof.profiler import annotate
    return annotate(name, role=role)


# ---- the actor worker's side of the sync ------------------------------------------------------

def _counting(weights: Any, box: List[int]) -> Any:
    def size(t: Any) -> int:
        try:
            return int(t.numel()) * int(t.element_size())
        except Exception:
            return 0
    if hasattr(weights, "__aiter__"):
        async def agen() -> Any:
            async for name, t in weights:
                box[0] += size(t)
                yield name, t
        return agen()

    def gen() -> Any:
        for name, t in weights:
            box[0] += size(t)
            yield name, t
    return gen()


def patch_actor_worker(module: Any) -> None:
    """verl.workers.engine_workers: ActorRolloutRefWorker.update_weights through a checkpoint
    engine (the disaggregated recipes) is the actor's `weight_sync` stage, with sync/transfer and
    the bytes the engine was given (counted on the weight generator it sends)."""
    cls = getattr(module, "ActorRolloutRefWorker", None)

    def make(fn: Any) -> Any:
        if not inspect.iscoroutinefunction(fn):
            return fn

        @functools.wraps(fn)
        async def update_weights(self: Any, global_steps: Any = None, mode: str = "auto", *args: Any,
                                 **kwargs: Any) -> Any:
            engine = getattr(self, "checkpoint_engine", None)
            try:
                backend = mode if mode != "auto" else self.config.rollout.checkpoint_engine.backend
            except Exception:
                backend = "naive"
            if engine is None or backend in ("naive", "delta_sharded"):
                return await fn(self, global_steps, mode, *args, **kwargs)
            box = [0]
            send = engine.send_weights

            async def send_weights(weights: Any, *a: Any, **k: Any) -> Any:
                return await send(_counting(weights, box), *a, **k)

            engine.send_weights = send_weights
            try:
                with _annotate_stage("weight_sync", role="actor"):
                    with rl.sync_phase("transfer", version=global_steps):
                        out = await fn(self, global_steps, mode, *args, **kwargs)
                        if box[0]:
                            _rlprof.counter("rl/sync_bytes", float(box[0]))
            finally:
                with contextlib.suppress(AttributeError):
                    del engine.send_weights
            if isinstance(out, dict) and box[0]:
                out = dict(out)
                out[_BYTES_KEY] = box[0]
            return out
        return update_weights
    _wrap(cls, "update_weights", make)


def patch_engine_workers(module: Any) -> None:
    """verl.workers.engine_workers: rlprof.integrations.verl's patch, then the sync's."""
    from rlprof.integrations import verl as verl_integration
    verl_integration.patch_engine_workers(module)
    patch_actor_worker(module)


# ---- the trainer (FullyAsyncTrainer actor) ---------------------------------------------------

def patch_trainer(module: Any) -> None:
    """verl.experimental.fully_async_policy.fully_async_trainer: published (through the
    manager), trainer_version, consumed."""
    cls = getattr(module, "FullyAsyncTrainer", None)
    if cls is None:
        return
    from rlprof.integrations import verl_samples
    for c in _classes(cls):  # the trajectories it consumes
        verl_samples.patch_update_actor(c, "current_param_version")

    def make_update_weights(fn: Any) -> Any:
        @functools.wraps(fn)
        async def _fit_update_weights(self: Any, *args: Any, **kwargs: Any) -> Any:
            _Sync.recipe = "fully_async"
            try:
                return await fn(self, *args, **kwargs)
            finally:
                _Sync.recipe = None
        return _fit_update_weights

    def make_local_step(fn: Any) -> Any:
        @functools.wraps(fn)
        def _fit_update_local_step(self: Any, *args: Any, **kwargs: Any) -> Any:
            out = fn(self, *args, **kwargs)
            try:  # the update is done: global_steps counts them (incremented after the step)
                rl.trainer_version(int(self.global_steps))
            except Exception:
                pass
            return out
        return _fit_update_local_step

    def make_collect(fn: Any) -> Any:
        @functools.wraps(fn)
        def _collect_metrics_from_samples(self: Any, batch: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                versions = batch.meta_info.get("trajectory_param_versions")
                if versions is not None:
                    now = int(self.current_param_version)
                    for v in versions:
                        rl.consumed(now - int(v))
            except Exception:
                pass
            return fn(self, batch, *args, **kwargs)
        return _collect_metrics_from_samples

    _wrap_all(cls, "_fit_update_weights", make_update_weights)
    _wrap_all(cls, "_fit_update_local_step", make_local_step)
    _wrap_all(cls, "_collect_metrics_from_samples", make_collect)


# ---- the message queue's client (pickled into the trainer and the rollouter) -----------------

_sample: contextvars.ContextVar = contextvars.ContextVar("rlprof_rollout_sample", default=None)


# Module-level accessors: Ray pickles the patched actor classes by value from the process that
# creates them (closures included); a closure must reach the ContextVar through these
# (pickled by reference), not hold it.
def _sample_set(sample: Any) -> Any:
    return _sample.set(sample)


def _sample_reset(token: Any) -> None:
    _sample.reset(token)


def _sample_get() -> Any:
    return _sample.get()


def _sample_size(sample: Any) -> tuple:
    """(trajectories, response tokens) of a RolloutSample."""
    batch = getattr(sample, "full_batch", None)
    n = 1
    tokens = None
    try:
        n = len(batch)
        mask = batch.batch["response_mask"] if "response_mask" in batch.batch.keys() else None
        tokens = int(mask.sum().item()) if mask is not None else None
    except Exception:
        pass
    return n, tokens


def patch_message_queue(module: Any) -> None:
    """verl.experimental.fully_async_policy.message_queue: the trainer's wait for samples and the
    queue depth it is told; the rollouter's accepted samples."""
    cls = getattr(module, "MessageQueueClient", None)

    def make_get(fn: Any) -> Any:
        @functools.wraps(fn)
        async def get_sample(self: Any, *args: Any, **kwargs: Any) -> Any:
            with rl.wait("samples"):
                out = await fn(self, *args, **kwargs)
            if isinstance(out, tuple) and len(out) == 2 and out[0] is not None:
                try:
                    rl.queue_depth(int(out[1]))
                except Exception:
                    pass
            return out
        return get_sample

    def make_put(fn: Any) -> Any:
        @functools.wraps(fn)
        async def put_sample(self: Any, sample: Any, *args: Any, **kwargs: Any) -> Any:
            ok = await fn(self, sample, *args, **kwargs)
            made = _sample_get()
            if ok and sample is not None and made is not None:
                n, tokens = _sample_size(made)
                rl.generated(n, tokens=tokens)
            return ok
        return put_sample

    _wrap(cls, "get_sample", make_get)
    _wrap(cls, "put_sample", make_put)


# ---- the rollouter (FullyAsyncRollouter actor): a Profiler of its own ------------------------

class _Rollouter:
    profiler: Any = None
    failed = False
    open = False
    calls = 0          # verl's _start_profiling calls: the window's step
    syncs = 0          # reset_staleness calls: the version it generates with is syncs - 1
    inflight = 0
    stage_open = False
    cause = "staleness"
    wait: Optional[Any] = None


def _rollouter_profiler() -> Any:
    if _Rollouter.failed:
        return None
    if _Rollouter.profiler is None:
        try:
            from rlprof.integrations import verl_config
            from rlprof.profiler import Profiler
            src = verl_config.resolved_from_env()
            if src is None:
                _Rollouter.failed = True
                return None
            _Rollouter.profiler = Profiler(src, rank=0, roles=["rollout"], world_size=1,
                                           run_id=os.environ.get("RLPROF_RUN_ID") or None,
                                           measure_clock_offset=False)
        except Exception as e:
            _Rollouter.failed = True
            _warn("verl's fully-async rollouter", e)
            return None
    return _Rollouter.profiler


def _stage(on: bool) -> None:
    prof = _Rollouter.profiler
    if prof is None or not _Rollouter.open or on == _Rollouter.stage_open:
        return
    if on:
        prof.begin_stage("rollout_generate", "rollout")
    else:
        prof.end_stage()
    _Rollouter.stage_open = on


def _end_wait() -> None:
    w, _Rollouter.wait = _Rollouter.wait, None
    if w is not None:
        w.__exit__(None, None, None)


def _close_rollouter_window() -> None:
    prof = _Rollouter.profiler
    if prof is None or not _Rollouter.open:
        return
    try:
        _stage(False)
        _end_wait()
        prof.stop()
        prof.flush()
    except Exception as e:
        _warn("verl's fully-async rollouter window", e)
    _Rollouter.open = False


def _idle_property() -> property:
    """`idle_start_time` as a property: verl assigns it only when the paused processor has
    drained and starts to wait for the resume (rollouter:942; and once in __init__)."""
    def get(self: Any) -> Any:
        return self.__dict__.get("idle_start_time")

    def set_(self: Any, value: Any) -> None:
        self.__dict__["idle_start_time"] = value
        if getattr(self, "paused", False) and _Rollouter.open and _Rollouter.wait is None:
            _Rollouter.wait = rl.wait(_Rollouter.cause).__enter__()
    return property(get, set_)


def patch_rollouter(module: Any) -> None:
    """verl.experimental.fully_async_policy.fully_async_rollouter: the rollouter's window,
    weight version, generation stage and pauses."""
    from rlprof.integrations import verl_samples
    verl_samples.patch_fully_async_rollouter(module)  # each sample's trajectory id
    actor = getattr(module, "FullyAsyncRollouter", None)
    cls = _actor_class(actor)
    if cls is None or getattr(cls, "_rlprof_patched", False):
        return
    cls._rlprof_patched = True

    def enabled(self: Any) -> bool:
        try:
            return self.config.global_profiler.tool == "rlprof"
        except Exception:
            return False

    def make_start(fn: Any) -> Any:
        @functools.wraps(fn)
        async def _start_profiling(self: Any, *args: Any, **kwargs: Any) -> Any:
            out = await fn(self, *args, **kwargs)
            # After its end signal (`running` False) the rollouter makes nothing more: a window
            # verl opens after its last sync would hold nothing and never be closed.
            if enabled(self) and getattr(self, "running", True):
                prof = _rollouter_profiler()
                if prof is not None:
                    try:
                        _Rollouter.calls += 1
                        if _Rollouter.open:
                            _stage(False)
                            _end_wait()
                            prof.stop()
                        prof.start(_Rollouter.calls)
                        _Rollouter.open = True
                        rl.weight_version(max(_Rollouter.syncs - 1, 0))
                        _stage(_Rollouter.inflight > 0)
                    except Exception as e:
                        _Rollouter.failed = True
                        _warn("verl's fully-async rollouter window", e)
            return out
        return _start_profiling

    def make_stop(fn: Any) -> Any:
        @functools.wraps(fn)
        async def _stop_profiling(self: Any, *args: Any, **kwargs: Any) -> Any:
            _close_rollouter_window()
            return await fn(self, *args, **kwargs)
        return _stop_profiling

    def make_fit(fn: Any) -> Any:
        @functools.wraps(fn)
        async def fit(self: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                return await fn(self, *args, **kwargs)
            finally:
                _close_rollouter_window()
        return fit

    def make_process(fn: Any) -> Any:
        @functools.wraps(fn)
        async def _process_single_sample_streaming(self: Any, rollout_sample: Any, *args: Any,
                                                   **kwargs: Any) -> Any:
            token = _sample_set(rollout_sample)  # this task's sample, for put_sample
            _Rollouter.inflight += 1
            _stage(True)
            try:
                return await fn(self, rollout_sample, *args, **kwargs)
            finally:
                _Rollouter.inflight -= 1
                if _Rollouter.inflight == 0:
                    _stage(False)
                _sample_reset(token)
        return _process_single_sample_streaming

    def make_should_pause(fn: Any) -> Any:
        @functools.wraps(fn)
        async def _should_pause_generation(self: Any, *args: Any, **kwargs: Any) -> Any:
            pause = await fn(self, *args, **kwargs)
            if pause:
                try:  # verl tests the queue first; a sample over the staleness bound says why
                    _Rollouter.cause = ("staleness" if self.staleness_samples >= self.max_required_samples
                                        else "queue_full")
                except Exception:
                    _Rollouter.cause = "staleness"
            elif getattr(self, "paused", False):
                _end_wait()  # the monitor loop resumes it
            return pause
        return _should_pause_generation

    def make_reset(fn: Any) -> Any:
        @functools.wraps(fn)
        async def reset_staleness(self: Any, *args: Any, **kwargs: Any) -> Any:
            _end_wait()
            _Rollouter.syncs += 1
            return await fn(self, *args, **kwargs)
        return reset_staleness

    _wrap_all(actor, "_start_profiling", make_start)
    _wrap_all(actor, "_stop_profiling", make_stop)
    _wrap_all(actor, "fit", make_fit)
    _wrap_all(actor, "_process_single_sample_streaming", make_process)
    _wrap_all(actor, "_should_pause_generation", make_should_pause)
    _wrap_all(actor, "reset_staleness", make_reset)
    if "idle_start_time" not in cls.__dict__:
        cls.idle_start_time = _idle_property()


# ---- verl's one-step-off recipe (OneStepOffRayTrainer, in the TaskRunner process) -------------

def patch_one_step_off(module: Any) -> None:
    """verl.experimental.one_step_off_policy.ray_trainer: the trainer's facts. Generation runs as
    an asyncio task of the same process (no rollouter): its samples are not counted as
    `generated` (the process would read as a generating one); verl never opens the rollout's
    window in this recipe."""
    cls = getattr(module, "OneStepOffRayTrainer", None)
    if cls is None or cls.__dict__.get("_rlprof_patched", False):
        return
    cls._rlprof_patched = True
    from rlprof.integrations import verl_samples
    verl_samples.patch_update_actor(cls, "global_steps")  # the trajectories it consumes
    update_weights = getattr(cls, "_fit_update_weights", None)   # SeparateRayPPOTrainer's, shared
    update_actor = getattr(cls, "_fit_update_actor", None)       # with fully_async: overridden
    generate = cls.__dict__.get("_fit_generate")                 # here for this class only

    if update_weights is not None and not inspect.iscoroutinefunction(update_weights):
        @functools.wraps(update_weights)
        def _fit_update_weights(self: Any, *args: Any, **kwargs: Any) -> Any:
            _Sync.recipe = "one_step_off"
            try:
                return update_weights(self, *args, **kwargs)
            finally:
                _Sync.recipe = None
        cls._fit_update_weights = _fit_update_weights

    if update_actor is not None and not inspect.iscoroutinefunction(update_actor):
        @functools.wraps(update_actor)
        def _fit_update_actor(self: Any, *args: Any, **kwargs: Any) -> Any:
            out = update_actor(self, *args, **kwargs)
            try:
                rl.trainer_version(int(self.global_steps))
            except Exception:
                pass
            return out
        cls._fit_update_actor = _fit_update_actor

    if generate is not None and inspect.iscoroutinefunction(generate):
        @functools.wraps(generate)
        async def _fit_generate(self: Any, batch_data_future: Any, *args: Any, **kwargs: Any) -> Any:
            if batch_data_future is not None:
                pending = batch_data_future

                async def waited() -> Any:
                    with rl.wait("samples"):
                        return await pending
                batch_data_future = waited()
            out = await generate(self, batch_data_future, *args, **kwargs)
            try:
                # the batch of step s was made with weights tagged t (t - 1 updates; none for
                # t <= 1); the policy it trains has s - 1 updates
                step = int(self.global_steps)
                for t in out[0].non_tensor_batch["max_global_steps"]:
                    rl.consumed((step - 1) - max(int(t) - 1, 0))
            except Exception:
                pass
            return out
        cls._fit_generate = _fit_generate
