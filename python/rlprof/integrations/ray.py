"""Ray: rlprof's environment reaches every worker process.

A local cluster that `ray.init()` starts inherits the driver's environment (its raylet and
workers are the driver's descendants), so the launcher's variables are there already. A job
that joins a running cluster (`ray.init(address=...)`, RAY_ADDRESS, `ray job submit`) does
not: the patch below adds rlprof's variables (RLPROF_*, and PYTHONPATH with the bootstrap
directory first) to the job's `runtime_env.env_vars`, which Ray applies to every worker of
the job. Variables the job sets itself win. Installed by rlprof._hooks when `ray` is imported.

Called from verl's run_ppo, the patch first publishes verl's resolved profiler config to the
job (rlprof.integrations.verl_config), before the cluster's processes exist.

A local cluster started from a Python whose path a shell would split or expand (a space, a
quote, a `$`: a venv inside ".../ci run é ü/project") is started through a shell-safe path
of the same interpreter (shell_safe_python): Ray starts every worker of a job or actor that has
a runtime_env through `bash -c "exec <python> ..."` with the interpreter's path unquoted
(ray/_private/runtime_env/context.py, Ray 2.60), so such a worker never starts
(docs/reliability.md, "Paths").
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import stat
import sys
import tempfile
from typing import Any, Dict, Iterator, Optional


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


# What shlex.quote leaves unquoted, letters of every script included: bash splits words on
# ASCII blanks and its special characters are ASCII (a path with only accents starts fine).
_SHELL_UNSAFE = re.compile(r"[^\w@%+=:,./-]")


def _shell_safe(path: str) -> bool:
    return bool(path) and not _SHELL_UNSAFE.search(path)


def _own_private_dir(path: str) -> bool:
    """path is a real directory (not a link) of this user that no one else can write to."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return (stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid()
            and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH))


def _prefix_link(prefix: str) -> Optional[str]:
    """A shell-safe link to the directory prefix: <tmp>/rlprof-<uid>/py-<hash of prefix>, in a
    folder only this user can write to (made 0700; an existing one that is a link, another
    user's, or writable by others is not used). The same prefix gets the same link, so nothing
    accumulates and nothing needs removing while a cluster may still use it."""
    for tmp in dict.fromkeys((tempfile.gettempdir(), "/tmp")):
        if not _shell_safe(tmp) or not os.path.isdir(tmp):
            continue
        base = os.path.join(tmp, f"rlprof-{os.getuid()}")
        try:
            os.mkdir(base, 0o700)
        except FileExistsError:
            pass
        except OSError:
            continue
        if not _own_private_dir(base):
            continue
        link = os.path.join(base, "py-" + hashlib.sha256(os.fsencode(prefix)).hexdigest()[:16])
        try:
            if os.path.islink(link) and os.readlink(link) == prefix:
                return link
            part = f"{link}.{os.getpid()}"
            with contextlib.suppress(FileNotFoundError):
                os.unlink(part)
            os.symlink(prefix, part)
            os.replace(part, link)
            return link
        except OSError:
            continue
    return None


def shell_safe_python() -> Optional[str]:
    """A path of this interpreter, with this environment (venv or prefix), that needs no shell
    quoting; None when sys.executable needs none or no such path can be had.

    The interpreter finds its environment from the path it is started by (pyvenv.cfg, or the
    standard library, beside it), so the path keeps sys.executable's place inside sys.prefix
    and replaces the prefix: by its real path when that is shell-safe (a venv reached through
    a link, like scripts/setup's), else by a link to it (_prefix_link)."""
    exe = sys.executable
    if not exe or _shell_safe(exe):
        return None
    prefix = os.path.abspath(sys.prefix)
    if not os.path.abspath(exe).startswith(prefix + os.sep):
        real = os.path.realpath(exe)  # outside its prefix: no venv to keep (a plain interpreter)
        return real if sys.prefix == sys.base_prefix and _shell_safe(real) else None
    rel = os.path.relpath(os.path.abspath(exe), prefix)
    if not _shell_safe(rel):
        return None
    real = os.path.realpath(prefix)
    if _shell_safe(real) and os.path.samefile(os.path.join(real, rel), exe):
        return os.path.join(real, rel)
    link = _prefix_link(prefix)
    return os.path.join(link, rel) if link else None


@contextlib.contextmanager
def _cluster_python() -> Iterator[None]:
    """sys.executable replaced by shell_safe_python() while ray.init starts the local cluster's
    processes (Ray reads sys.executable for the raylet's worker command and the runtime-env
    agent, whose path it later puts unquoted into `bash -c`); restored afterwards."""
    if os.name != "posix":  # the shell start is Linux/macOS's (Windows quotes differently)
        yield
        return
    safe = None
    try:
        safe = shell_safe_python()
    except Exception:  # never a reason for ray.init to fail
        pass
    if safe is None:
        if not _shell_safe(sys.executable):
            sys.stderr.write(f"rlprof: warning: Ray may not start workers that have a runtime_env: "
                             f"this Python's path ({sys.executable}) needs shell quoting, which "
                             f"Ray does not do, and rlprof found no path without it\n")
        yield
        return
    orig = sys.executable
    sys.executable = safe
    try:
        yield
    finally:
        sys.executable = orig


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
        with _cluster_python():  # a local cluster: its processes start from this interpreter
            return init(*args, **kwargs)

    patched_init._rlprof_patched = True  # type: ignore[attr-defined]
    module.init = patched_init
