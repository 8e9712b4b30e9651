"""verl >= 0.9's reward loop with `tool: rlprof`: each sample's scoring recorded where it runs.

verl 0.9 scores samples in its reward loop's workers (`RewardLoopWorker`, `reward.num_workers`
Ray actors made by the controller's `RewardLoopManager`): the Agent Loop sends each finished
sample to one of them while generation goes on (streaming reward), or the controller sends its
batch (`compute_rm_score`). verl starts no profiler there. Patched here, with no file of verl
edited:

* `RewardLoopWorker` gets two actor methods, `rlprof_begin_step(step, index)` and
  `rlprof_end_step()`: the worker's one rlprof Profiler (role `reward`, rank = its index, made
  from verl's resolved config) begins and ends the RL step;
* the trainer's profiling calls (rlprof.integrations.verl_rollout, both of verl's trainers) call
  them on every reward loop worker, and wait, when the config's reward block
  (`reward_model.profiler`) is enabled — which workers record is the plan's choice (its ranks
  are the worker indices);
* a served reward model (`reward.reward_model.enable`: vLLM servers behind the
  RewardModelManager, which verl never profiles either) is driven the same way: its servers get
  `rlprof_begin_reward_step(step)` / `rlprof_end_reward_step()` (rlprof.integrations.verl_rollout)
  and its engine's workers record role `reward` (rank = the reward model's replica rank), each
  engine step the stage `compute_rm_score` (rlprof.integrations.vllm);
* in the worker, `compute_score` (one sample; many run at once on the worker's event loop) is the
  stage `compute_rm_score` while at least one call is in flight, with one range `compute_score`
  per call (ranges may overlap; stages nest, so the stage is the union of the calls).
"""
from __future__ import annotations

import functools
import os
import sys
from typing import Any, Callable, List, Optional


class _Worker:
    """This process's reward-loop recording (one RewardLoopWorker per process)."""
    profiler: Any = None
    failed = False
    open = False
    inflight = 0


def _warn(what: str, e: BaseException) -> None:
    sys.stderr.write(f"rlprof: warning: {what} ({e!r}); the reward loop is not recorded\n")


def _begin_step(self: Any, step: int, index: int) -> bool:
    """Actor method: begins RL step `step` in this reward loop worker (rank `index`)."""
    if _Worker.failed:
        return False
    try:
        if _Worker.profiler is None:
            from rlprof.integrations import verl_config
            from rlprof.profiler import Profiler
            src = verl_config.resolved_from_env()
            if src is None:
                _Worker.failed = True
                return False
            _Worker.profiler = Profiler(src, rank=int(index), roles=["reward"],
                                        run_id=os.environ.get("RLPROF_RUN_ID") or None,
                                        measure_clock_offset=False)
        prof = _Worker.profiler
        if _Worker.open:
            prof.stop()
        prof.start(int(step))
        _Worker.open = True
        return bool(prof.enabled)
    except Exception as e:  # never stop scoring
        _Worker.failed = True
        _warn(f"reward loop worker {index}: cannot start rlprof", e)
        return False


def _end_step(self: Any) -> None:
    """Actor method: ends the RL step in this reward loop worker and writes its capture."""
    prof = _Worker.profiler
    if prof is None or not _Worker.open:
        return
    _Worker.open = False
    try:
        prof.stop()
        prof.flush()
    except Exception as e:
        _warn("reward loop worker: cannot end the step", e)


def patch_reward_loop(module: Any) -> None:
    """verl.experimental.reward_loop.reward_loop: RewardLoopWorker records its scoring."""
    cls = getattr(module, "RewardLoopWorker", None)
    fn = cls.__dict__.get("compute_score") if cls is not None else None
    if fn is None or getattr(fn, "_rlprof_patched", False):
        return
    from rlprof import _rlprof

    @functools.wraps(fn)
    async def compute_score(self: Any, *args: Any, **kwargs: Any) -> Any:
        prof = _Worker.profiler
        if prof is None or not _Worker.open:
            return await fn(self, *args, **kwargs)
        if _Worker.inflight == 0:
            prof.begin_stage("compute_rm_score", "reward")
        _Worker.inflight += 1
        rid = _rlprof.range_start("compute_score")
        try:
            return await fn(self, *args, **kwargs)
        finally:
            _rlprof.range_end(rid)
            _Worker.inflight -= 1
            if _Worker.inflight == 0:
                prof.end_stage()

    compute_score._rlprof_patched = True  # type: ignore[attr-defined]
    cls.compute_score = compute_score
    cls.rlprof_begin_step = _begin_step
    cls.rlprof_end_step = _end_step


# ---- the trainer's side (called from rlprof.integrations.verl_rollout's trainer patches) ----

def _workers(trainer: Any) -> List[Any]:
    manager = getattr(trainer, "reward_loop_manager", None)
    workers = getattr(manager, "reward_loop_workers", None)
    return list(workers or [])


def _reward_block_on() -> bool:
    from rlprof.integrations import verl_config
    src = verl_config.resolved_from_env() or {}
    block = (src.get("reward_model") or {}).get("profiler") or {}
    return isinstance(block, dict) and bool(block.get("enable"))


def _servers(trainer: Any) -> List[Any]:
    """The reward model's servers (verl >= 0.9, `reward.reward_model.enable`): vLLM servers of
    the RewardModelManager's replicas, replica rank order (each replica's node-0 server drives
    its engine)."""
    manager = getattr(getattr(trainer, "reward_loop_manager", None), "reward_model_manager", None)
    out = []
    for replica in list(getattr(manager, "rollout_replicas", None) or []):
        servers = list(getattr(replica, "servers", None) or [])
        if servers and hasattr(servers[0], "rlprof_begin_reward_step"):
            out.append(servers[0])
    return out


class _Trainer:
    failed = False
    servers_failed = False


def _wait_all(flag: str, what: str, calls: Callable[[], List[Any]]) -> None:
    """Makes the actor calls (`calls()` returns their object refs) and waits for them; the first
    failure turns that group off for the run (`_Trainer.<flag>`) with one warning, and training
    goes on."""
    try:
        import ray
        ray.get(calls(), timeout=120)
    except Exception as e:  # an older verl without the patched class, a dead worker: go on
        setattr(_Trainer, flag, True)
        _warn(f"cannot {what}", e)


def trainer_begin(trainer: Any, step: Optional[int]) -> None:
    """Begins `step` in every reward loop worker and reward model server (and waits), when the
    reward block is on."""
    if step is None or not _reward_block_on():
        return
    workers = [] if _Trainer.failed else _workers(trainer)
    if workers:
        _wait_all("failed", "start rlprof in the reward loop's workers",
                  lambda: [w.rlprof_begin_step.remote(int(step), i) for i, w in enumerate(workers)])
    servers = [] if _Trainer.servers_failed else _servers(trainer)
    if servers:
        _wait_all("servers_failed", "start rlprof in the reward model's servers",
                  lambda: [s.rlprof_begin_reward_step.remote(int(step)) for s in servers])


def trainer_end(trainer: Any) -> None:
    """Ends the step in every reward loop worker and reward model server (and waits for their
    captures)."""
    if not _reward_block_on():
        return
    workers = [] if _Trainer.failed else _workers(trainer)
    if workers:
        _wait_all("failed", "end the step in the reward loop's workers",
                  lambda: [w.rlprof_end_step.remote() for w in workers])
    servers = [] if _Trainer.servers_failed else _servers(trainer)
    if servers:
        _wait_all("servers_failed", "end the step in the reward model's servers",
                  lambda: [s.rlprof_end_reward_step.remote() for s in servers])
