"""rlprof: a profiler for distributed RL post-training (verl, MindSpeed-RL, plain PyTorch).

    import rlprof
    prof = rlprof.Profiler("grpo_verl.yaml", role="actor")   # verl / MindSpeed-RL / native YAML
    for step in range(1, 9):
        with prof.step(step):
            with rlprof.annotate("rollout_generate", role="rollout"):
                for t in range(max_new_tokens):
                    prof.sub_step("decode")
                    ...
            actor_update(batch)          # decorated with @rlprof.annotate("actor_update", role="actor")
    prof.shutdown()
    print(prof.captures())

The capture windows (steps, ranks, roles, stages, schedules) come from the config; outside a
window every call here is a cheap no-op. `import rlprof` does not load torch; operator capture
(rlprof.torch) is loaded when a Profiler's contents include operators. rlprof.analysis (pandas
DataFrames of the analysis, imported on first use) reads captures and traces. See docs/python.md.
"""
import importlib.util as _importlib_util

from rlprof._rlprof import (  # noqa: F401  (re-exported)
    counter,
    mark,
    range_end,
    range_start,
    recording,
    set_thread_name,
)
from rlprof.profiler import (  # noqa: F401
    Profiler,
    annotate,
    current,
    sub_step,
)
from rlprof.samples import sample, sample_kept, sample_use  # noqa: F401

from rlprof._rlprof import __version__  # noqa: E402,F401  CMakeLists.txt project(VERSION), via the runtime

# Whether operator capture was built (rlprof.torch, which loads libtorch, is imported only by a
# Profiler that captures operators, or explicitly).
HAVE_TORCH_OPS: bool = _importlib_util.find_spec("rlprof._torch_ops") is not None



def __getattr__(name: str):
    # `rlprof.analysis` (pandas DataFrames) is imported on first use: `import rlprof` stays
    # free of pandas.
    if name == "analysis":
        import importlib

        return importlib.import_module("rlprof.analysis")
    raise AttributeError(f"module 'rlprof' has no attribute '{name}'")


__all__ = [
    "Profiler",
    "annotate",
    "current",
    "sub_step",
    "range_start",
    "range_end",
    "mark",
    "counter",
    "recording",
    "set_thread_name",
    "sample",
    "sample_use",
    "sample_kept",
    "HAVE_TORCH_OPS",
]
