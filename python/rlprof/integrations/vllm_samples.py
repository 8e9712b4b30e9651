"""vLLM's requests as rlprof samples (issue 33): each request that finishes (or is aborted) in a
vLLM V1 frontend becomes one `rlprof.sample` record in the open capture window of that process.

The frontend is where a request's whole life is known: the process that calls
`LLM.generate` / `AsyncLLM.generate` (under verl, its rollout server). rlprof wraps three
methods of vllm.v1.engine.output_processor.OutputProcessor, and edits nothing:

  add_request(request, ...)          the request is handed over: submit = now (monotonic ns)
  process_outputs(outputs, ts, ...)  without vLLM's stats (log_stats off: offline `LLM` and verl
                                     default to it) the first and last token times are taken
                                     here, from the engine core's timestamp of the batch
  _update_stats_from_finished(req_state, finish_reason, ...)   the request finished: one record
                                     — prompt tokens (req_state.prompt_len), completion tokens
                                     (the detokenizer's count: what the RequestOutput holds),
                                     cached tokens, finish reason (after a stop string), and
                                     with vLLM's stats (log_stats on) its queued / scheduled /
                                     first / last token times and preemptions, as the engine
                                     core stamped them (CLOCK_MONOTONIC)
  abort_requests(ids, internal)      requests aborted by the caller: recorded with finish
                                     reason "abort"

The sample's id is vLLM's external request id (the id the caller passed; with n > 1 the
child's index is appended: "<id>#<k>"). Outside a capture window nothing is kept.

Enabled by `rlprof run` (the import hook of rlprof._hooks), or in a program of your own by
`rlprof.integrations.vllm_samples.enable()` (before or after vLLM is imported).

A frontend without a capture window of its own (verl's rollout server: its engine's workers
record the steps) keeps the records between start_forwarding() and stop_forwarding(), which
hands them over; rlprof's verl integration sends them to the engine's first worker
(`Worker.rlprof_samples`, rlprof.integrations.vllm), which records them in its window: the same
host, the same CLOCK_MONOTONIC.
"""
from __future__ import annotations

import functools
import sys
import time
from typing import Any, Dict, List, Optional, Tuple

import rlprof
from rlprof._rlprof import recording

_MODULE = "vllm.v1.engine.output_processor"


class _Stamps:
    __slots__ = ("submit", "first", "last")

    def __init__(self, submit: int) -> None:
        self.submit = submit
        self.first = 0
        self.last = 0


# internal request id -> its stamps (kept only while a window is open when the request arrives)
_stamps: Dict[str, _Stamps] = {}


class _Forward:
    """Records kept for another process (start_forwarding / stop_forwarding)."""
    on = False
    records: List[Dict[str, Any]] = []
    dropped = 0
    limit = 1_000_000  # records held at most; more are counted, not kept


def start_forwarding() -> None:
    """From now on keep this frontend's records (when it has no window of its own)."""
    _Forward.on = True


def stop_forwarding() -> Tuple[List[Dict[str, Any]], int]:
    """Stops keeping records; returns those kept (keyword arguments of rlprof.sample, with
    "id") and how many were left out over the limit."""
    out, dropped = _Forward.records, _Forward.dropped
    _Forward.on, _Forward.records, _Forward.dropped = False, [], 0
    return out, dropped


def _active() -> bool:
    return _Forward.on or recording()


def _ns(t: Optional[float]) -> int:
    """A time.monotonic() float (vLLM's engine core stamps) as ns; 0 when unknown."""
    return int(round(t * 1e9)) if t else 0


def _sample_id(req_state: Any) -> str:
    ext = getattr(req_state, "external_req_id", None) or req_state.request_id
    if getattr(req_state, "parent_req", None) is not None:
        return f"{ext}#{getattr(req_state, 'request_index', 0)}"
    return str(ext)


def _record(req_state: Any, finish_reason: Any) -> None:
    st = _stamps.pop(req_state.request_id, None)
    here = recording()
    if not here and not _Forward.on:
        return
    stats = getattr(req_state, "stats", None)
    det = getattr(req_state, "detokenizer", None)
    completion = det.num_output_tokens() if det is not None else (
        stats.num_generation_tokens if stats is not None else None)
    kw: Dict[str, Any] = {}
    if stats is not None:
        kw.update(queued=_ns(stats.queued_ts), scheduled=_ns(stats.scheduled_ts),
                  first_token=_ns(stats.first_token_ts), last_token=_ns(stats.last_token_ts),
                  preemptions=stats.num_preemptions)
    elif st is not None:
        kw.update(first_token=st.first, last_token=st.last)
    kw.update(id=_sample_id(req_state), submit=st.submit if st is not None else None, end=time.monotonic_ns(),
              prompt_tokens=getattr(req_state, "prompt_len", None), completion_tokens=completion,
              cached_tokens=getattr(req_state, "num_cached_tokens", None),
              finish_reason=str(finish_reason) if finish_reason is not None else None)
    if here:
        rlprof.sample(kw.pop("id"), **kw)
    elif len(_Forward.records) < _Forward.limit:
        _Forward.records.append(kw)
    else:
        _Forward.dropped += 1


def patch_output_processor(module: Any) -> None:
    cls = module.OutputProcessor
    if getattr(cls, "_rlprof_samples", False):
        return
    add_request = cls.add_request
    process_outputs = cls.process_outputs
    finished = cls._update_stats_from_finished
    abort_requests = cls.abort_requests

    @functools.wraps(add_request)
    def add_request_w(self: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
        if _active():
            _stamps.setdefault(request.request_id, _Stamps(time.monotonic_ns()))
        return add_request(self, request, *args, **kwargs)

    @functools.wraps(process_outputs)
    def process_outputs_w(self: Any, engine_core_outputs: Any, engine_core_timestamp: Any = None,
                          *args: Any, **kwargs: Any) -> Any:
        # vLLM's own stats hold the token times when log_stats is on; else stamp them here.
        if _stamps and not self.log_stats:
            t = _ns(engine_core_timestamp) or time.monotonic_ns()
            for out in engine_core_outputs:
                if out.new_token_ids:
                    st = _stamps.get(out.request_id)
                    if st is not None:
                        if st.first == 0:
                            st.first = t
                        st.last = t
        return process_outputs(self, engine_core_outputs, engine_core_timestamp, *args, **kwargs)

    @functools.wraps(finished)
    def finished_w(self: Any, req_state: Any, finish_reason: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            _record(req_state, finish_reason)
        except Exception as e:  # never break the engine's output loop
            _warn(e)
        return finished(self, req_state, finish_reason, *args, **kwargs)

    @functools.wraps(abort_requests)
    def abort_requests_w(self: Any, request_ids: Any, internal: bool, *args: Any, **kwargs: Any) -> Any:
        try:
            request_ids = list(request_ids)
            for rid in request_ids:
                ids = [rid] if internal else list(self.external_req_ids.get(rid, ()))
                for i in ids:
                    rs = self.request_states.get(i)
                    if rs is not None:
                        _record(rs, "abort")
        except Exception as e:
            _warn(e)
        return abort_requests(self, request_ids, internal, *args, **kwargs)

    cls.add_request = add_request_w
    cls.process_outputs = process_outputs_w
    cls._update_stats_from_finished = finished_w
    cls.abort_requests = abort_requests_w
    cls._rlprof_samples = True


_warned = False


def _warn(e: BaseException) -> None:
    global _warned
    if not _warned:
        _warned = True
        sys.stderr.write(f"rlprof: warning: a vLLM request could not be recorded as a sample ({e!r})\n")


def enable() -> None:
    """Record vLLM's requests as samples in this process: patches vLLM's output processor now
    if it is imported, else when it is."""
    mod = sys.modules.get(_MODULE)
    if mod is not None:
        patch_output_processor(mod)
        return
    from rlprof import _hooks
    _hooks.install_one(_MODULE)
