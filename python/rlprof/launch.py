"""`rlprof run [--config F] [KEY=VALUE ...] -- COMMAND ...`: runs COMMAND with rlprof's
variables set and the bootstrap directory first on PYTHONPATH, so every Python process the
command starts (the driver, torchrun's children, Ray's workers, inference servers) imports
rlprof's bootstrap, which patches verl and vLLM as they are imported. Like
opentelemetry-instrument or ddtrace-run; nothing in the command's sources changes.

`rlprof env [--config F] [KEY=VALUE ...]` prints the same variables as shell `export` lines,
for launch scripts that cannot be changed to go through `rlprof run`.
"""
from __future__ import annotations

import os
import secrets
import shlex
import sys
import time
from typing import Dict, List, Optional, Sequence, Tuple

USAGE = ("usage: rlprof run [--config FILE] [KEY=VALUE ...] -- COMMAND [ARGS ...]\n"
         "       rlprof env [--config FILE] [KEY=VALUE ...]\n")


def bootstrap_dir() -> str:
    """The directory holding rlprof's sitecustomize.py."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bootstrap")


def parse(argv: Sequence[str], need_command: bool = True
          ) -> Tuple[Optional[str], List[str], List[str]]:
    """(config, overrides, command) from the words after `run`."""
    args = list(argv)
    command: List[str] = []
    if "--" in args:
        i = args.index("--")
        args, command = args[:i], args[i + 1:]
    config: Optional[str] = None
    overrides: List[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("--config", "-c"):
            if i + 1 >= len(args):
                raise ValueError("--config needs a file")
            config = args[i + 1]
            i += 2
            continue
        if a.startswith("--config="):
            config = a.split("=", 1)[1]
        elif "=" in a and not a.startswith("-"):
            overrides.append(a)
        else:
            raise ValueError(f"unexpected argument {a!r} (overrides are KEY=VALUE; the command "
                             "follows --)")
        i += 1
    if need_command and not command:
        raise ValueError("no command: put it after --")
    return config, overrides, command


def environment(config: Optional[str], overrides: Sequence[str],
                base: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """The variables `rlprof run` sets (on top of `base`, by default os.environ)."""
    env = dict(os.environ if base is None else base)
    boot = bootstrap_dir()
    env["RLPROF_ENABLE"] = "1"
    env["RLPROF_BOOTSTRAP_DIR"] = boot
    if config is not None:
        env["RLPROF_CONFIG"] = os.path.abspath(config)
    if overrides:
        env["RLPROF_OVERRIDES"] = "\n".join(overrides)
    if not env.get("RLPROF_RUN_ID"):
        env["RLPROF_RUN_ID"] = (time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" +
                                secrets.token_hex(3))
    # NVTX's tool library: every process's NVTX ranges (torch, vLLM, C++ code) reach rlprof. An
    # injection the user chose (nsys's, another tool's) is kept.
    nvtx = os.path.join(os.path.dirname(boot), "librlprof_nvtx.so")
    if not env.get("NVTX_INJECTION64_PATH") and os.path.isfile(nvtx):
        env["NVTX_INJECTION64_PATH"] = nvtx
    parts = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != boot]
    env["PYTHONPATH"] = os.pathsep.join([boot] + parts)
    return env


def _missing(config: Optional[str], what: str) -> bool:
    if config is not None and not os.path.isfile(config):
        sys.stderr.write(f"rlprof {what}: config file not found: {config}\n")
        return True
    return False


def run(argv: Sequence[str]) -> int:
    """Exit codes as the C++ command's: 1 usage, 2 bad input, 127 command not found."""
    try:
        config, overrides, command = parse(argv)
    except ValueError as e:
        sys.stderr.write(f"rlprof run: {e}\n{USAGE}")
        return 1
    if _missing(config, "run"):
        return 2
    env = environment(config, overrides)
    try:
        os.execvpe(command[0], command, env)
    except OSError as e:
        sys.stderr.write(f"rlprof run: cannot run {command[0]!r}: {e.strerror}\n")
        return 127
    return 0  # not reached


def env_lines(argv: Sequence[str]) -> int:
    try:
        config, overrides, _ = parse(argv, need_command=False)
    except ValueError as e:
        sys.stderr.write(f"rlprof env: {e}\n{USAGE}")
        return 1
    if _missing(config, "env"):
        return 2
    env = environment(config, overrides, base={})
    env.pop("RLPROF_RUN_ID")  # one per job: the first process chooses it
    env["PYTHONPATH"] = env["PYTHONPATH"] + "${PYTHONPATH:+:$PYTHONPATH}"
    for k in sorted(env):
        v = env[k]
        q = ('"' + v.replace('"', '\\"') + '"') if k == "PYTHONPATH" else shlex.quote(v)
        if k == "NVTX_INJECTION64_PATH":  # keep an injection the shell already has
            q = '"${NVTX_INJECTION64_PATH:-' + v.replace('"', '\\"') + '}"'
        print(f"export {k}={q}")
    return 0
