"""Example code, not part of rlprof: one call verl 0.9.1 makes that vLLM 0.32 no longer takes.

verl's rollout server pauses its engine before each weight sync with
`AsyncLLM.pause_generation(wait_for_inflight_requests=False, clear_cache=...)`
(verl/workers/rollout/vllm_rollout/vllm_async_server.py:992, `abort_all_requests`). vLLM 0.32's
`AsyncLLM.pause_generation(*, mode="abort", clear_cache=True)` (vllm/v1/engine/async_llm.py:952)
has replaced that flag by `mode`, so the call raises TypeError and the first weight sync of
fully_async / one_step_off fails (verl's synchronous trainer never pauses, so it is not hit there).
Here the old flag is translated (False -> mode "abort", True -> mode "wait") after vLLM's module
is imported. Loaded in every verl process by verl's plugin hook
(`VERL_USE_EXTERNAL_MODULES=...,verl_vllm_compat`, examples/verl_async/run.sh).
"""
from __future__ import annotations

import functools
import importlib.abc
import importlib.util
import inspect
import sys
from types import ModuleType
from typing import Any

_TARGET = "vllm.v1.engine.async_llm"


def _patch(module: ModuleType) -> None:
    cls = getattr(module, "AsyncLLM", None)
    fn = getattr(cls, "pause_generation", None)
    if fn is None or getattr(fn, "_compat", False):
        return
    params = inspect.signature(fn).parameters
    if "wait_for_inflight_requests" in params or "mode" not in params:
        return  # a vLLM that still takes the flag, or one this shim does not know

    @functools.wraps(fn)
    async def pause_generation(self: Any, *args: Any, wait_for_inflight_requests: Any = None,
                               **kwargs: Any) -> Any:
        if wait_for_inflight_requests is not None and "mode" not in kwargs:
            kwargs["mode"] = "wait" if wait_for_inflight_requests else "abort"
        return await fn(self, *args, **kwargs)

    pause_generation._compat = True  # type: ignore[attr-defined]
    cls.pause_generation = pause_generation


class _AfterImport(importlib.abc.MetaPathFinder):
    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != _TARGET:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        execute = spec.loader.exec_module

        def exec_module(module: ModuleType) -> None:
            execute(module)
            _patch(module)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


if _TARGET in sys.modules:
    _patch(sys.modules[_TARGET])
else:
    sys.meta_path.insert(0, _AfterImport())
