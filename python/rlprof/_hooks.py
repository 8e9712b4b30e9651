"""Lazy framework patches, installed by the launcher's bootstrap (rlprof/_bootstrap) when
rlprof's environment variables are set.

A meta-path finder watches a few module names; when the program imports one, the module runs
as usual and then the matching patch is applied to it, before anyone else can use it. Nothing
is imported ahead of the program, and modules the program never imports cost nothing. The
patches themselves live in rlprof.integrations (verl, vllm, ray).

Environment (docs/integrations.md):
  RLPROF_CONFIG     the rlprof/verl/MindSpeed-RL config file (optional for verl)
  RLPROF_OVERRIDES  KEY=VALUE overrides, one per line
  RLPROF_ENABLE     1: install the hooks even without RLPROF_CONFIG
  RLPROF_RUN_ID     one run directory for every process of the job (set here when missing)
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import os
import sys
import threading
import time
import secrets
from typing import Any, Callable, Dict, List, Optional

_Patch = Callable[[Any], None]


def _patch(integration: str, function: str, **kwargs: Any) -> _Patch:
    """A patch that imports rlprof.integrations.<integration> only when its module is imported
    and calls <function>(module, **kwargs)."""
    def apply(module: Any) -> None:
        mod = importlib.import_module("rlprof.integrations." + integration)
        getattr(mod, function)(module, **kwargs)
    return apply


# module name -> patch applied right after the module has executed.
PATCHES: Dict[str, _Patch] = {
    "verl.utils.profiler.profile": _patch("verl", "patch_dist_profiler"),
    "verl.utils.profiler.performance": _patch("verl", "patch_markers"),
    "verl.utils.profiler": _patch("verl", "patch_markers"),
    # rlprof.integrations.verl's patch, then the actor's side of an async weight sync
    "verl.workers.engine_workers": _patch("verl_async", "patch_engine_workers"),
    # verl's async recipes: rlprof.rl's facts (rlprof.integrations.verl_async)
    "verl.checkpoint_engine.base": _patch("verl_async", "patch_checkpoint_engine"),
    "verl.experimental.fully_async_policy.fully_async_trainer": _patch("verl_async", "patch_trainer"),
    "verl.experimental.fully_async_policy.fully_async_rollouter": _patch("verl_async", "patch_rollouter"),
    "verl.experimental.fully_async_policy.message_queue": _patch("verl_async", "patch_message_queue"),
    "verl.experimental.one_step_off_policy.ray_trainer": _patch("verl_async", "patch_one_step_off"),
    "verl.trainer.ppo.ray_trainer": _patch("verl_rollout", "patch_trainer"),
    "verl.trainer.ppo.v1.trainer_base": _patch("verl_rollout", "patch_trainer_v1"),
    "verl.experimental.reward_loop.reward_loop": _patch("verl_reward", "patch_reward_loop"),
    "verl.workers.rollout.llm_server": _patch("verl_rollout", "patch_server_manager"),
    # verl's trajectories as samples (rlprof.integrations.verl_samples; its trainer and LLM
    # client parts are applied by verl_rollout's patches of those modules)
    "verl.experimental.agent_loop.agent_loop": _patch("verl_samples", "patch_agent_loop"),
    "verl.experimental.agent_loop.tool_agent_loop": _patch("verl_samples", "patch_tool_agent_loop"),
    "verl.trainer.ppo.v1.agent_loop_tq": _patch("verl_samples", "patch_agent_loop_tq"),
    "verl.trainer.ppo.v1.replay_buffer": _patch("verl_samples", "patch_replay_buffer"),
    "verl.workers.rollout.vllm_rollout.vllm_async_server": _patch("verl_rollout", "patch_vllm_server"),
    # each request of a vLLM frontend as an rlprof sample (issue 33)
    "vllm.v1.engine.output_processor": _patch("vllm_samples", "patch_output_processor"),
    "vllm.v1.worker.gpu_model_runner": _patch("vllm", "patch_model_runner_module"),
    "vllm.v1.worker.cpu_model_runner": _patch("vllm", "patch_model_runner_module"),
    "vllm.v1.worker.gpu.model_runner": _patch("vllm", "patch_model_runner_module"),
    "vllm.v1.worker.gpu_worker": _patch("vllm", "patch_worker_module"),
    "sglang.srt.model_executor.model_runner": _patch("vllm", "patch_model_runner_module",
                                                     class_names=("ModelRunner",), method="forward"),
    "ray": _patch("ray", "patch_ray"),
}

_applied: Dict[str, bool] = {}
_lock = threading.Lock()


def _apply(name: str, module: Any) -> None:
    with _lock:
        if _applied.get(name):
            return
        _applied[name] = True
    try:
        PATCHES[name](module)
    except Exception as e:  # a framework version we do not know: warn, never break it
        sys.stderr.write(f"rlprof: warning: could not patch {name} ({e!r}); it runs "
                         "unprofiled\n")


class _Loader(importlib.abc.Loader):
    """Delegates to the real loader, then applies the patch."""

    def __init__(self, inner: Any, name: str) -> None:
        self._inner = inner
        self._name = name

    def create_module(self, spec: Any) -> Any:
        return self._inner.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self._inner.exec_module(module)
        _apply(self._name, module)

    def __getattr__(self, attr: str) -> Any:  # get_resource_reader, is_package, ...
        return getattr(self._inner, attr)


class _Finder(importlib.abc.MetaPathFinder):
    def __init__(self, names: Optional[set] = None) -> None:
        self._busy = threading.local()
        self.names = names  # None: every module of PATCHES

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name not in PATCHES or _applied.get(name) or (self.names is not None and name not in self.names):
            return None
        busy = getattr(self._busy, "names", None)
        if busy is None:
            busy = self._busy.names = set()
        if name in busy:
            return None
        busy.add(name)
        try:
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(name, path, target)
                if spec is not None:
                    break
            else:
                return None
        finally:
            busy.discard(name)
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _Loader(spec.loader, name)
        return spec


_finder: Optional[_Finder] = None


def overrides_from_env() -> List[str]:
    text = os.environ.get("RLPROF_OVERRIDES", "")
    return [w for w in text.splitlines() if w.strip()]


def install() -> None:
    """Installs the finder once; patches modules that are already imported."""
    global _finder
    if _finder is not None:
        return
    # One run directory for the whole job: processes started from here inherit it.
    if not os.environ.get("RLPROF_RUN_ID"):
        os.environ["RLPROF_RUN_ID"] = (time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" +
                                       secrets.token_hex(3))
    _finder = _Finder()
    sys.meta_path.insert(0, _finder)
    for name in PATCHES:
        mod = sys.modules.get(name)
        if mod is not None:
            _apply(name, mod)


def installed() -> bool:
    return _finder is not None


_only: Optional[_Finder] = None


def install_one(name: str) -> None:
    """One patch of PATCHES (an integration a program enables itself, e.g.
    rlprof.integrations.vllm_samples.enable()): applied now if the module is imported, else
    when it is; the other patches stay off unless install() runs."""
    global _only
    mod = sys.modules.get(name)
    if mod is not None:
        _apply(name, mod)
        return
    with _lock:
        if _only is None:
            _only = _Finder(set())
            sys.meta_path.insert(0, _only)
        _only.names.add(name)
