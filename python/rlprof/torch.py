"""PyTorch contents of a capture (docs/config.md, contents): the torch sources that the session
switches with its capture windows.

- ``ops`` / ``shapes``: a global at::RecordFunction callback records every aten operator,
  autograd function and ``record_function`` scope (with input shapes when asked).
- ``stack``: the Python call stack (file:line:function, innermost first, at most 32 frames) of
  each operator launched from Python, recorded at the operator's start.
- ``memory``: allocator events (alloc / free with size, device and the operator they happen in)
  and per-device ``allocated_bytes`` / ``reserved_bytes`` counters, from PyTorch's allocator
  reporting; with CUDA also the caching allocator's memory history, written as a snapshot into
  the capture at window close, on demand (``memory_snapshot()``) and at an out-of-memory error.
- ``module``: ``nn.Module`` forwards as ranges named by qualified path (``TinyLM.layers.0.attn``)
  through torch's global module hooks, installed only while a window is open.

Importing this module loads libtorch (the sources live in their own extension,
rlprof._torch_ops, so that ``import rlprof`` stays fast). A Profiler whose contents include a
torch content imports it by itself; import it explicitly to read the counters:

    import rlprof.torch
    rlprof.torch.stats()   # {'ops': ..., 'modules': ..., 'allocations': ..., 'stacks': ...}

Contents that cannot be honoured here (``memory`` device history without CUDA; ``module``
without global module hooks) are named once, at the first window that asks for them, as a
RuntimeWarning and as a ``not honoured: ...`` capture event (docs/config.md).

Raises ImportError when rlprof was built without libtorch.
"""
from __future__ import annotations

import os
import pickle
import sys
import warnings
from typing import Any, Dict, List, Optional

import torch

from rlprof import _rlprof, _torch_ops

# TorchContent bits (python/src/torch_hooks.h).
_OPS, _SHAPES, _STACK, _MEMORY, _MODULE = 1, 2, 4, 8, 16

_root_names: Dict[int, str] = {}  # id(module) -> the name given with name_module()


def _framework_roots() -> List[Any]:
    """Where torch and rlprof really are in this process (both the path Python reports and the
    resolved one): operators' stack frames under them are recorded as framework frames."""
    import rlprof
    out = []
    for label, mod in (("torch", torch), ("rlprof", rlprof)):
        d = os.path.dirname(os.path.abspath(mod.__file__))
        for path in dict.fromkeys((d, os.path.realpath(d))):
            out.append((label, path))
    return out


_torch_ops._set_framework_roots(_framework_roots())


def stats() -> Dict[str, Any]:
    """What the torch sources recorded so far in this process (operators, collectives, stacks,
    allocator events, module ranges) and their state."""
    return _torch_ops.stats()


def name_module(module: "torch.nn.Module", name: str) -> None:
    """Names a root module in module paths (default: its class name), e.g.
    ``name_module(model, "actor")`` makes ``actor.layers.0.attn``."""
    _root_names[id(module)] = name


# ---- contents that cannot be honoured ----

def not_honoured(contents: int) -> List[str]:
    """The selected torch contents (TorchContent bits) that this machine / torch cannot record
    in full, as 'content: reason' lines."""
    out = []
    if contents & _MEMORY and not _cuda_ready():
        out.append("memory: no CUDA device: device allocator counters and the CUDA memory "
                   "history snapshot are not recorded (CPU allocator events are)")
    if contents & _MODULE and not hasattr(torch.nn.modules.module, "register_module_forward_pre_hook"):
        out.append(f"module: torch {torch.__version__} has no global module hooks")
    return out


def _cuda_ready() -> bool:
    try:
        return bool(torch.cuda.is_available())
    except Exception:
        return False


_warned: set = set()


def _not_honoured_bits(contents: int) -> int:
    bits = 0
    if contents & _MEMORY and not _cuda_ready():
        bits |= _MEMORY
    if contents & _MODULE and not hasattr(torch.nn.modules.module, "register_module_forward_pre_hook"):
        bits |= _MODULE
    return bits


def _name_not_honoured(contents: int) -> None:
    for line in not_honoured(contents):
        _torch_ops._note("not honoured: " + line)  # into every window that asks for it
        if line not in _warned:
            _warned.add(line)
            warnings.warn("rlprof: " + line, RuntimeWarning, stacklevel=2)


# ---- module ranges ----

class _Modules:
    """torch's global forward pre/post hooks, installed only while a window is open. The hooks
    are closures over locals (no attribute lookups on the hot path); a module's (path, class)
    is computed once per window."""

    def __init__(self) -> None:
        self.handles: List[Any] = []
        self.names: Dict[Any, Any] = {}  # module -> (qualified path, class name), this window
        self.active: List[Any] = []      # modules whose forward is running (naming only)

    def install(self) -> None:
        if self.handles:
            return
        mm = torch.nn.modules.module
        if not hasattr(mm, "register_module_forward_pre_hook"):
            return
        self.names.clear()
        self.active.clear()
        names, active, name_of = self.names, self.active, self._name
        enter, leave = _torch_ops._module_enter, _torch_ops._module_exit
        get, push, pop = names.get, active.append, active.pop

        def pre(module: Any, args: Any) -> None:
            n = get(module)
            if n is None:
                n = name_of(module)
            push(module)
            enter(module, n[0], n[1])

        def post(module: Any, args: Any, output: Any) -> None:
            leave(module)
            if active and active[-1] is module:
                pop()
            elif module in active:  # an inner forward raised before its hook ran
                del active[active.index(module):]

        self.handles = [mm.register_module_forward_pre_hook(pre)]
        try:  # always_call: the end is reported even when the forward raises
            self.handles.append(mm.register_module_forward_hook(post, always_call=True))
        except TypeError:  # a torch without always_call: an enclosing module's end closes it
            self.handles.append(mm.register_module_forward_hook(post))

    def remove(self) -> None:
        for h in self.handles:
            h.remove()
        self.handles = []
        self.active.clear()
        self.names.clear()  # no module outlives its window because of rlprof

    def _name(self, module: Any) -> Any:
        parent = self.active[-1] if self.active else None
        if parent is None:
            name = _root_names.get(id(module)) or type(module).__name__
        else:
            base = self.names[parent][0] if parent in self.names else type(parent).__name__
            attr = None
            for k, v in parent._modules.items():  # a direct child (the usual case)
                if v is module:
                    attr = k
                    break
            if attr is None:  # deeper: through containers whose forward is not called
                for k, v in parent.named_modules(remove_duplicate=False):
                    if v is module:
                        attr = k
                        break
            name = f"{base}.{attr if attr else type(module).__name__}"
        n = (name, type(module).__name__)
        self.names[module] = n
        return n


_modules = _Modules()


# ---- CUDA memory history ----

_history_on = False
_oom_attached = False


def _cuda_history(on: bool) -> None:
    global _history_on, _oom_attached
    if on == _history_on or not _cuda_ready():
        return
    try:
        torch.cuda.memory._record_memory_history("all" if on else None)
        _history_on = on
        if on and not _oom_attached and hasattr(torch._C, "_cuda_attach_out_of_memory_observer"):
            torch._C._cuda_attach_out_of_memory_observer(_on_oom)  # torch keeps every one attached
            _oom_attached = True
    except Exception as e:  # never into the training loop
        warnings.warn(f"rlprof: cannot record the CUDA memory history ({e!r})", RuntimeWarning)


_capacity: Dict[int, int] = {}  # device → its memory in bytes (read once)


def _cuda_capacity() -> None:
    """At a window's open: each initialised CUDA device's memory as the counter
    ``capacity_bytes cuda:N``, and the current device's as ``capacity_bytes cuda`` (what the
    advisor's memory rule compares the allocator's peaks with)."""
    if not _cuda_ready():
        return
    try:
        if not torch.cuda.is_initialized():
            return  # reading it would create a context in a process that has none
        for d in range(torch.cuda.device_count()):
            if d not in _capacity:
                _capacity[d] = int(torch.cuda.get_device_properties(d).total_memory)
            _rlprof.memory_counter(f"capacity_bytes cuda:{d}", float(_capacity[d]))
        # The current device's, for the process's cuda_reserved_bytes / cuda_allocated_bytes
        # samples (torch.cuda.memory_reserved() of the current device, at each boundary).
        _rlprof.memory_counter("capacity_bytes cuda", float(_capacity[torch.cuda.current_device()]))
    except Exception as e:  # never into the training loop
        warnings.warn(f"rlprof: cannot read the CUDA devices' memory ({e!r})", RuntimeWarning)


def _on_oom(device: int, alloc: int, device_allocated: int, device_free: int) -> None:
    path = memory_snapshot(f"oom_device{device}")
    if path:
        _torch_ops._note(f"out of memory on cuda:{device} ({alloc} bytes asked): snapshot {path}")


def _latest_capture_dir() -> Optional[str]:
    """The directory of this process's latest capture: the newest
    <run_dir>/step*/<scope>/rank*-<host>-<pid> holding a manifest.json (written by the writer
    thread when the window opens, rewritten when it closes)."""
    from rlprof import profiler as _profiler
    p = _profiler._current
    if p is None:
        return None
    import glob
    import re
    # File times are as coarse as the kernel's tick (~4 ms): two windows a few ms apart can
    # carry the same ctime, so ties go to the later step (its number is in the path).
    best, best_key = None, None
    for d in glob.glob(os.path.join(glob.escape(p.run_dir), "*", "*", f"rank*-{os.getpid()}")):
        try:
            t = os.stat(os.path.join(d, "manifest.json")).st_ctime_ns
        except OSError:
            continue
        m = re.search(r"step(\d+)", os.path.relpath(d, p.run_dir))
        key = (t, int(m.group(1)) if m else -1)
        if best_key is None or key > best_key:
            best, best_key = d, key
    return best


def memory_snapshot(name: str = "memory_snapshot") -> Optional[str]:
    """Writes the CUDA caching allocator's snapshot (torch.cuda.memory._snapshot(), the
    format of pytorch.org/memory_viz) as ``<name>_rank<R>.pickle`` into this process's latest
    capture directory (the run directory before any) and notes it in the open capture;
    returns the path, or None without CUDA or a Profiler."""
    if not _cuda_ready():
        return None
    from rlprof import profiler as _profiler
    p = _profiler._current
    if p is None:
        return None
    try:
        snap = torch.cuda.memory._snapshot()
        # The writer makes a capture's directory at its first flush: a window opened a moment
        # ago (an out-of-memory error early in it) or just closed may not be on disk yet.
        p.flush(5.0)
        where = _latest_capture_dir() or p.run_dir
        os.makedirs(where, exist_ok=True)
        path = os.path.join(where, f"{name}_rank{p.identity.get('rank', 0)}.pickle")
        with open(path, "wb") as f:
            pickle.dump(snap, f)
    except Exception as e:
        sys.stderr.write(f"rlprof: warning: cannot write a CUDA memory snapshot ({e!r})\n")
        return None
    _torch_ops._note("memory snapshot: " + path)
    return path


# ---- the switch (called by rlprof._torch_ops when the window or the contents change) ----

def _sync(recording: bool, contents: int) -> int:
    """Returns the TorchContent bits that cannot be honoured here (for the manifest)."""
    if contents & _MODULE:
        if recording:
            _modules.install()
        else:
            _modules.remove()
    if contents & _MEMORY:
        if not recording and _history_on:
            memory_snapshot()  # into the capture that just closed
        _cuda_history(recording)
        if recording:
            _cuda_capacity()
    if recording:
        _name_not_honoured(contents)
    return _not_honoured_bits(contents)
