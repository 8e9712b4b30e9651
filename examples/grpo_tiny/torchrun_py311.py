#!/usr/bin/python3
"""`torchrun` for Debian's torch 1.13 on Python 3.11: the same command line, working.

    PYTHONPATH=build/python python3 examples/grpo_tiny/torchrun_py311.py --nproc_per_node 2 \\
        examples/grpo_tiny/grpo_tiny.py --steps 8

torch 1.13's launcher turns `--redirects` / `--tee` ("0" by default) into a `Std` flag by
iterating the IntFlag's members; since Python 3.11 that iteration skips the zero member (NONE)
and combined ones (ALL), so the lookup returns None and `torchrun` dies with
"'NoneType' object has no attribute 'get'". This wrapper parses those values by constructing
the flag from its number, then runs torch's own launcher unchanged.
"""
import re
import sys

from torch.distributed.elastic.multiprocessing import api


def _std_from_str(vm: str):
    if re.fullmatch(r"[0-3]", vm):
        return api.Std(int(vm))
    if re.fullmatch(r"(\d+:[0-3],)*\d+:[0-3]", vm):
        return {int(i): api.Std(int(v)) for i, v in (m.split(":") for m in vm.split(","))}
    raise ValueError(f"{vm} does not match <[0-3]> or <local_rank:[0-3],...>")


api.Std.from_str = staticmethod(_std_from_str)

if __name__ == "__main__":
    from torch.distributed.run import main

    sys.exit(main())
