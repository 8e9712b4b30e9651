"""Runs torch-tb-profiler (TensorBoard's PyTorch profiler plugin) on one Kineto trace and prints its
per-step time breakdown ("Overview" → step time breakdown) as JSON.

Run with a Python where `torch_tb_profiler` imports (the peers test environment, .venv-peers):

    .venv-peers/bin/python python/tests/peers/tb_step_time.py TRACE.json

The plugin's own pipeline on the trace: RunProfileData.parse (its file preprocessing, event
parsing, step detection, device-side step extension and OverallParser), without TensorBoard (its
profiler package imports numpy and pandas only). Prints
{"version", "steps": [{"step", "kernel", "memcpy", "memset", "communication", "runtime",
"dataloader", "cpu_exec", "other", "total"}]} in the trace's time unit (µs), untouched.
"""
import json
import logging
import os
import sys
import tempfile


def main() -> None:
    trace = os.path.abspath(sys.argv[1])
    logging.disable(logging.CRITICAL)
    import warnings

    warnings.simplefilter("ignore")  # the plugin's later source warns that it is deprecated
    import torch_tb_profiler
    from torch_tb_profiler.profiler.data import RunProfileData
    from torch_tb_profiler.profiler.event_parser import ProfileRole

    with tempfile.TemporaryDirectory() as cache:
        profile = RunProfileData.parse("worker0", "span", trace, cache)
    roles = [("kernel", ProfileRole.Kernel), ("memcpy", ProfileRole.Memcpy), ("memset", ProfileRole.Memset),
             ("communication", ProfileRole.Communication), ("runtime", ProfileRole.Runtime),
             ("dataloader", ProfileRole.DataLoader), ("cpu_exec", ProfileRole.CpuOp),
             ("other", ProfileRole.Other), ("total", ProfileRole.Total)]
    steps = []
    for name, costs in zip(profile.steps_names, profile.steps_costs):
        row = {"step": int(name)}
        row.update({k: costs.costs[r] for k, r in roles})
        steps.append(row)
    print(json.dumps({"version": torch_tb_profiler.__version__, "module": os.path.dirname(torch_tb_profiler.__file__),
                      "steps": steps}))


if __name__ == "__main__":
    main()
