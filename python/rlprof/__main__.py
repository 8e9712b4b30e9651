"""`python -m rlprof` and the `rlprof` console script.

`run` and `env` (the launcher, rlprof/launch.py) and `analyse … --ray [ADDRESS]` (analysis on a
Ray cluster, rlprof/distributed.py; the C++ `rlprof analyse --ray` execs this) are handled here;
every other subcommand
(plan, export, analyse, summary, compare, report, cluster, version) runs rlprof's C++ command,
installed next to this package by `pip install ./python` (rlprof/_bin/rlprof), or found on
PATH / RLPROF_CLI.
"""
from __future__ import annotations

import os
import shutil
import sys
from typing import List, Optional


def _cli() -> Optional[str]:
    env = os.environ.get("RLPROF_CLI")
    if env and os.access(env, os.X_OK):
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    for p in (os.path.join(here, "_bin", "rlprof"),                 # pip install
              os.path.join(os.path.dirname(here), "..", "bin", "rlprof")):  # build tree
        if os.access(p, os.X_OK):
            return os.path.abspath(p)
    me = os.path.realpath(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    found = shutil.which("rlprof")
    if found and os.path.realpath(found) != me:
        with open(found, "rb") as f:  # not a console-script wrapper of this module
            if f.read(2) != b"#!":
                return found
    return None


def main(argv: Optional[List[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "run":
        from rlprof import launch
        return launch.run(args[1:])
    if args and args[0] == "env":
        from rlprof import launch
        return launch.env_lines(args[1:])
    if args and args[0] in ("analyse", "analyze") and any(a == "--ray" or a.startswith("--ray=") for a in args):
        from rlprof import distributed
        return distributed.main(args[1:])
    cli = _cli()
    if cli is None:
        sys.stderr.write("rlprof: the C++ command is not installed (only `rlprof run` and "
                         "`rlprof env` work without it); build it with CMake or reinstall "
                         "with `pip install ./python`\n")
        return 2
    os.execv(cli, [cli] + args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
