"""PyTorch operator capture (`contents: [ops]`, `shapes`): a global at::RecordFunction callback
that records every aten operator, autograd function and `record_function` scope that runs
while a capture window is open (docs/python.md).

Importing this module loads libtorch (the hook lives in its own extension, rlprof._torch_ops,
so that `import rlprof` stays fast). A Profiler whose contents include operators imports it by
itself; import it explicitly to check availability or read the counters:

    import rlprof.torch
    rlprof.torch.stats()   # {'ops': ..., 'communication': ..., 'enabled': ..., ...}

Raises ImportError when rlprof was built without libtorch.
"""
from __future__ import annotations

from typing import Any, Dict

from rlprof import _torch_ops


def stats() -> Dict[str, Any]:
    """Operators and collectives recorded so far in this process, and the callback's state
    (installed, enabled, shapes)."""
    return _torch_ops.stats()
