"""Ray: rlprof's environment reaches every worker process.

A local cluster that `ray.init()` starts inherits the driver's environment (its raylet and
workers are the driver's descendants), so the launcher's variables are there already. A job
that joins a running cluster (`ray.init(address=...)`, RAY_ADDRESS, `ray job submit`) does
not: the patch below adds rlprof's variables (RLPROF_*, and PYTHONPATH with the bootstrap
directory first) to the job's `runtime_env.env_vars`, which Ray applies to every worker of
the job. Variables the job sets itself win. Installed by rlprof._hooks when `ray` is imported.

Called from verl's run_ppo, the patch first publishes verl's resolved profiler config to the
job (rlprof.integrations.verl_config), before the cluster's processes exist.
"""
from __future__ import annotations

import functools
import os
import sys
from typing import Any, Dict


def job_env_vars() -> Dict[str, str]:
    """rlprof's variables for a Ray job's workers."""
    env = {k: v for k, v in os.environ.items() if k.startswith("RLPROF_")}
    boot = os.environ.get("RLPROF_BOOTSTRAP_DIR")
    if boot:
        parts = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        if boot not in parts:
            parts.insert(0, boot)
        env["PYTHONPATH"] = os.pathsep.join(parts)
    return env


def _joins_cluster(args: Any, kwargs: Dict[str, Any]) -> bool:
    address = kwargs.get("address", args[0] if args else None)
    if address is None:
        address = os.environ.get("RAY_ADDRESS")
    return bool(address) and address != "local"


def with_env_vars(runtime_env: Any, env: Dict[str, str]) -> Dict[str, Any]:
    """runtime_env with rlprof's env_vars added (the job's own values win)."""
    out = dict(runtime_env or {})
    merged = dict(env)
    merged.update(dict(out.get("env_vars") or {}))
    out["env_vars"] = merged
    return out


def patch_ray(module: Any) -> None:
    init = getattr(module, "init", None)
    if init is None or getattr(init, "_rlprof_patched", False):
        return

    @functools.wraps(init)
    def patched_init(*args: Any, **kwargs: Any) -> Any:
        if "verl" in sys.modules:  # verl's run_ppo: its resolved config, for every process
            from rlprof.integrations import verl_config
            cfg = verl_config.find_in_frames(sys._getframe(1))
            if cfg is not None:
                verl_config.publish(cfg)
        if _joins_cluster(args, kwargs):
            kwargs["runtime_env"] = with_env_vars(kwargs.get("runtime_env"), job_env_vars())
        return init(*args, **kwargs)

    patched_init._rlprof_patched = True  # type: ignore[attr-defined]
    module.init = patched_init
