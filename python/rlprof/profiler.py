"""The Python facade over rlprof's C++ runtime: Profiler, annotate, sub_step.

One Profiler records at a time per process; it becomes the *current* profiler that
`rlprof.annotate(..., role=...)` and `rlprof.sub_step(...)` drive. Under torch.distributed the
constructor is collective (every rank must construct one): rank 0 chooses the run id and
each rank measures its clock offset to rank 0.
"""
from __future__ import annotations

import atexit
import contextlib
import functools
import json
import os
import secrets
import sys
import time
import warnings
import weakref
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Union

from rlprof import _rlprof
from rlprof import _dist

_current: Optional["Profiler"] = None


def current() -> Optional["Profiler"]:
    """The Profiler that annotate() and sub_step() drive, or None."""
    return _current


def _make_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(3)


class Profiler:
    """A profiling session for this process.

    config: a path to a YAML config (any dialect of docs/config.md) or a dict of the same.
    overrides: Hydra-style KEY=VALUE words.
    rank / world_size / local_rank: identity; by default from torch.distributed when it is
        initialised, else from the launcher's environment (RANK, WORLD_SIZE, …).
    role / roles: the RL roles this process hosts (verl's fused worker hosts
        ["actor", "rollout", "ref"]); else RLPROF_ROLES.
    run_id: the run directory name; by default RLPROF_RUN_ID, else chosen by rank 0.
    """

    _torch_pending = False  # memory: the torch sources load once torch is imported
    _quiet = False

    def __init__(
        self,
        config: Union[str, os.PathLike, Mapping[str, Any]],
        overrides: Sequence[str] = (),
        rank: Optional[int] = None,
        role: Optional[str] = None,
        roles: Optional[Sequence[str]] = None,
        world_size: Optional[int] = None,
        local_rank: Optional[int] = None,
        run_id: Optional[str] = None,
        quiet: bool = False,
        install_signal_handlers: bool = True,
        measure_clock_offset: bool = True,
    ) -> None:
        global _current
        dist = _dist.initialised()
        if dist is not None:
            if rank is None:
                rank = dist.get_rank()
            if world_size is None:
                world_size = dist.get_world_size()
        if local_rank is None and rank is not None and "LOCAL_RANK" in os.environ:
            try:
                local_rank = int(os.environ["LOCAL_RANK"])
            except ValueError:
                local_rank = None
        if role is not None:
            roles = [role] + [r for r in (roles or []) if r != role]
        if run_id is None:
            run_id = os.environ.get("RLPROF_RUN_ID") or ""
            if dist is not None and dist.get_world_size() > 1:
                run_id = _dist.broadcast_str(run_id or _make_run_id())
        if isinstance(config, Mapping):
            text, is_text = json.dumps(config), True  # JSON is YAML
        else:
            text, is_text = os.fspath(config), False
        self._session = _rlprof.Session.create(
            text, is_text, list(overrides), rank, local_rank, world_size,
            list(roles) if roles is not None else None, run_id or "",
            install_signal_handlers, quiet)
        self.clock_offset_ns: Optional[int] = None
        if dist is not None and dist.get_world_size() > 1 and measure_clock_offset:
            self.clock_offset_ns = _dist.measure_offset_to_rank0()
            self._session.set_clock_offset(self.clock_offset_ns)
        elif dist is None or dist.get_world_size() == 1:
            self.clock_offset_ns = 0
        self._step_open = False
        self._torch_memory = "memory" in self._session.contents
        contents = set(self._session.contents)
        self._quiet = quiet
        # memory in a program that has not imported torch (yet): the allocator source is
        # loaded at the first step or stage begun after torch is imported.
        self._torch_pending = False
        if self._session.selected and contents & {"ops", "shapes", "stack", "module"}:
            _load_torch_ops(quiet)
        elif self._session.selected and "memory" in contents:
            if _dist.torch_if_loaded() is not None:
                _load_torch_ops(quiet)
            else:
                self._torch_pending = True
        _current = self
        # A profiler that is never shut down still finalises its captures at normal exit.
        # Processes started by multiprocessing with fork or forkserver leave through
        # os._exit, which skips atexit, but first run multiprocessing's finalizers that have
        # an exit priority (util._exit_function): register with both (shutdown is idempotent).
        ref = weakref.ref(self)
        atexit.register(_shutdown_at_exit, ref)
        from multiprocessing import util as _mp_util  # lazily: a few ms, only with a Profiler
        _mp_util.Finalize(None, _shutdown_at_exit, args=(ref,), exitpriority=10)

    # ---- identity and plan ----
    @property
    def enabled(self) -> bool:
        """True when the config selects this process and captures can be written."""
        return self._session.enabled

    @property
    def run_id(self) -> str:
        return self._session.run_id

    @property
    def run_dir(self) -> str:
        """<save_path>/<run_id>, absolute."""
        return self._session.run_dir

    @property
    def identity(self) -> Dict[str, Any]:
        return self._session.identity

    @property
    def contents(self) -> List[str]:
        return self._session.contents

    @property
    def mode(self) -> str:
        return self._session.mode

    # ---- steps ----
    def start(self, step: int) -> None:
        """Begins RL step `step` (1-based, as in the configs)."""
        if self._torch_pending:
            self._load_pending_torch()
        self._session.begin_step(int(step))
        self._step_open = True
        self._sample_torch_memory()

    def stop(self) -> None:
        """Ends the current step."""
        self._sample_torch_memory()
        self._session.end_step()
        self._step_open = False

    @contextlib.contextmanager
    def step(self, n: int) -> Iterator["Profiler"]:
        """`with prof.step(n):` — start(n) … stop(), also when the body raises."""
        self.start(n)
        try:
            yield self
        finally:
            self.stop()

    def sub_step(self, kind: str) -> None:
        """Advances the sub-step counter `kind` (decode, micro_batch, mini_batch, step):
        schedules count these."""
        self._session.sub_step(kind)

    # ---- stages ----
    def begin_stage(self, stage: str, role: str, counts: Optional[str] = None) -> None:
        if self._torch_pending:
            self._load_pending_torch()
        self._session.begin_stage(role, stage, counts)
        self._sample_torch_memory()

    def end_stage(self) -> None:
        self._sample_torch_memory()
        self._session.end_stage()

    @contextlib.contextmanager
    def stage(self, stage: str, role: str, counts: Optional[str] = None) -> Iterator[None]:
        self.begin_stage(stage, role, counts)
        try:
            yield
        finally:
            self.end_stage()

    # ---- manual captures ----
    def start_capture(self, scope: str = "manual") -> bool:
        return self._session.start_capture(scope)

    def stop_capture(self) -> None:
        self._session.stop_capture()

    # ---- output ----
    def flush(self, timeout_s: float = 30.0) -> bool:
        """Waits until every closed window is on disk."""
        return self._session.flush(timeout_s)

    def captures(self) -> List[str]:
        """Absolute directories of the captures finalised so far."""
        return self._session.captures()

    def shutdown(self) -> List[str]:
        """Closes any open window, writes everything, and returns the capture directories."""
        global _current
        if self._step_open:
            self.stop()
        self._session.shutdown()
        if _current is self:
            _current = None
        return self.captures()

    def __enter__(self) -> "Profiler":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.shutdown()

    def _load_pending_torch(self) -> None:
        if _dist.torch_if_loaded() is not None:
            self._torch_pending = False
            _load_torch_ops(self._quiet)

    def _sample_torch_memory(self) -> None:
        # RSS is sampled by the C++ session at every boundary (and every memory_interval_s); this
        # adds the CUDA allocator.
        if not self._torch_memory or not _rlprof.recording():
            return
        torch = _dist.torch_if_loaded()
        try:
            if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
                _rlprof.memory_counter("cuda_allocated_bytes", float(torch.cuda.memory_allocated()))
                _rlprof.memory_counter("cuda_reserved_bytes", float(torch.cuda.memory_reserved()))
        except Exception as e:  # never into the training loop: one warning, samples off
            self._torch_memory = False
            sys.stderr.write(f"rlprof: warning: cannot sample CUDA memory ({e!r}); CUDA memory "
                             "samples are off, the program continues\n")


def _load_torch_ops(quiet: bool) -> None:
    """Imports the torch sources (loading libtorch) once; the session switches them with the
    capture windows from then on (contents ops, shapes, stack, module; memory when the program
    has imported torch)."""
    if _rlprof._torch_ops_loaded():
        return
    try:
        import rlprof.torch  # noqa: F401  (registers the hook with the core extension)
    except Exception as e:  # ImportError, or a libtorch that fails to load: record without ops
        if not quiet:
            warnings.warn(f"rlprof: operator capture is not available ({e}); recording "
                          "without operators", RuntimeWarning, stacklevel=3)


def _shutdown_at_exit(ref: "weakref.ReferenceType[Profiler]") -> None:
    p = ref()
    if p is not None:
        p.shutdown()


def sub_step(kind: str) -> None:
    """Advances the current profiler's sub-step counter (no-op without a profiler)."""
    p = _current
    if p is not None:
        p._session.sub_step(kind)


# rlprof.annotate is a C type (python/src/annotate.cc): its plain-range path (`with
# rlprof.annotate("x"):`) never enters Python. Stages (role=...) and the decorator form call
# the hooks below, which keep the Profiler logic here.
annotate = _rlprof.annotate


def _stage_enter(a: "annotate") -> None:
    # Stages remember which profiler they began on (re-entrant use of one object nests).
    p = _current
    a._stack.append(p)
    if p is not None:
        p.begin_stage(a.name, a.role, a.counts)


def _stage_exit(a: "annotate") -> None:
    p = a._stack.pop() if a._stack else None
    if p is not None:
        p.end_stage()


def _decorate(a: "annotate", fn: Callable[..., Any]) -> Callable[..., Any]:
    name = a.name or fn.__name__
    role, counts = a.role, a.counts

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with annotate(name, role, counts):
            return fn(*args, **kwargs)

    return wrapper


_rlprof._set_annotate_hooks(_stage_enter, _stage_exit, _decorate)
