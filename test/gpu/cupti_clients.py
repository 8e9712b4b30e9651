#!/usr/bin/env python3
"""How CUPTI shares itself between clients in one process, and what torch.profiler (Kineto)
does about it: the facts rlprof's CUPTI source is built on (docs/runtime.md, "Coexistence").

On a machine with an NVIDIA GPU and torch with CUDA, from the repository root:

    python3 test/gpu/cupti_clients.py [--out FILE]

Each probe runs in a process of its own and talks to the process's libcupti through ctypes
(the library torch loaded, else $CUPTI_LIBRARY, else libcupti.so.13 / .so.12):

  register_twice     client A registers its buffer callbacks and enables kernels; later client
                     B registers its own: which of them receives the kernels launched after?
                     (the return codes, and kernels received by each)
  torch_subscribes   after a torch.profiler profile with CUDA activities, can another client
                     subscribe? (MULTIPLE_SUBSCRIBERS: Kineto subscribed and holds CUPTI)
  subscriber_first   a client subscribes (only that) before torch.profiler's first profile: the
                     kernels in torch.profiler's trace; then it unsubscribes and torch.profiler
                     profiles again (does Kineto recover?)
  callbacks_first    a client registers buffer callbacks (no subscription) before torch.profiler's
                     first profile: the kernels in torch.profiler's trace, and in the client's
  released_first     a client subscribes, registers, enables, flushes, disables and unsubscribes
                     (what rlprof does around a window) before torch.profiler's first profile: the
                     kernels in torch.profiler's trace, and any the client still receives
  claim_cost         20 such windows: the time of each CUPTI call (the first window apart)

It prints one JSON object per probe and writes them all to --out. --fake LIB runs the probes'
CUPTI plumbing against rlprof's fake CUPTI on the CPU (no torch.profiler probes: a check of this
script itself).
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import subprocess
import sys
import tempfile
from typing import Any, Dict, List

KIND_CONCURRENT_KERNEL = 10
FLUSH_FORCED = 1
PROBES = ("register_twice", "torch_subscribes", "subscriber_first", "callbacks_first", "released_first",
          "claim_cost")
CLAIM_KINDS = (10, 1, 2, 5, 36)  # level0's: concurrent kernel, memcpy, memset, runtime, external correlation

REQUEST = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t),
                           ctypes.POINTER(ctypes.c_size_t))
COMPLETE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_size_t,
                            ctypes.c_size_t)
CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p)


def loaded_cupti() -> str | None:
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            if "libcupti.so" in os.path.basename(path):
                return path
    return None


class Client:
    """One CUPTI client: its own buffer callbacks, counting the records of each kind it gets."""

    def __init__(self, lib: ctypes.CDLL, name: str) -> None:
        self.lib, self.name = lib, name
        self.kinds: Dict[int, int] = {}
        self.buffers: List[Any] = []
        self.subscriber = ctypes.c_void_p()
        self._req = REQUEST(self._request)
        self._done = COMPLETE(self._complete)
        self._cb = CALLBACK(lambda *a: None)

    def _request(self, buf, size, max_records) -> None:  # noqa: ANN001 - ctypes
        b = ctypes.create_string_buffer(1 << 20)
        self.buffers.append(b)
        buf[0] = ctypes.cast(b, ctypes.c_void_p)
        size[0] = len(b)
        max_records[0] = 0

    def _complete(self, ctx, stream, buf, size, valid) -> None:  # noqa: ANN001 - ctypes
        rec = ctypes.c_void_p()
        while self.lib.cuptiActivityGetNextRecord(ctypes.c_void_p(buf), ctypes.c_size_t(valid),
                                                  ctypes.byref(rec)) == 0:
            kind = ctypes.cast(rec, ctypes.POINTER(ctypes.c_uint32))[0]
            self.kinds[kind] = self.kinds.get(kind, 0) + 1

    def kernels(self) -> int:
        return self.kinds.get(KIND_CONCURRENT_KERNEL, 0)

    def register(self) -> int:
        return self.lib.cuptiActivityRegisterCallbacks(self._req, self._done)

    def subscribe(self) -> int:
        return self.lib.cuptiSubscribe(ctypes.byref(self.subscriber), self._cb, None)

    def unsubscribe(self) -> int:
        return self.lib.cuptiUnsubscribe(self.subscriber)


def work(torch: Any, n: int = 50) -> None:
    """n small kernels on the GPU."""
    x = torch.zeros(1024, device="cuda")
    for _ in range(n):
        x = x + 1
    torch.cuda.synchronize()


def torch_profile(torch: Any, n: int = 50) -> int:
    """torch.profiler with CPU + CUDA activities around n kernels: kernels in its trace."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                            torch.profiler.ProfilerActivity.CUDA]) as p:
        work(torch, n)
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        p.export_chrome_trace(path)
        with open(path) as f:
            return sum(1 for e in json.load(f)["traceEvents"] if e.get("cat") == "kernel")
    finally:
        os.unlink(path)


def open_cupti(fake: str | None) -> ctypes.CDLL:
    if fake:
        return ctypes.CDLL(fake)
    for name in filter(None, (loaded_cupti(), os.environ.get("CUPTI_LIBRARY"), "libcupti.so.13", "libcupti.so.12")):
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    raise OSError("no libcupti")


def probe(name: str, fake: str | None) -> Dict[str, Any]:
    torch = None
    if not fake:
        import torch as _torch
        torch = _torch
        work(torch, 1)  # CUDA initialised
    lib = open_cupti(fake)
    ver = ctypes.c_uint32()
    lib.cuptiGetVersion(ctypes.byref(ver))
    out: Dict[str, Any] = {"probe": name, "cupti_version": ver.value, "library": loaded_cupti() or fake}
    run = (lambda: work(torch)) if torch is not None else (lambda: None)
    if name == "register_twice":
        a, b = Client(lib, "A"), Client(lib, "B")
        out["register_A"] = a.register()
        out["enable"] = lib.cuptiActivityEnable(KIND_CONCURRENT_KERNEL)
        run()
        out["flush_1"] = lib.cuptiActivityFlushAll(FLUSH_FORCED)
        out["after_A"] = {"A": a.kernels(), "B": b.kernels()}
        out["register_B"] = b.register()
        run()
        out["flush_2"] = lib.cuptiActivityFlushAll(FLUSH_FORCED)
        out["after_B"] = {"A": a.kernels(), "B": b.kernels()}
        lib.cuptiActivityDisable(KIND_CONCURRENT_KERNEL)
    elif name == "torch_subscribes" and torch is not None:
        out["torch_kernels"] = torch_profile(torch)
        c = Client(lib, "C")
        out["subscribe_after_torch"] = c.subscribe()
    elif name == "subscriber_first" and torch is not None:
        c = Client(lib, "C")
        out["subscribe"] = c.subscribe()
        out["torch_kernels_while_held"] = torch_profile(torch)
        out["unsubscribe"] = c.unsubscribe()
        out["torch_kernels_after_release"] = torch_profile(torch)
    elif name == "callbacks_first" and torch is not None:
        c = Client(lib, "C")
        out["register"] = c.register()
        out["torch_kernels"] = torch_profile(torch)
        lib.cuptiActivityFlushAll(FLUSH_FORCED)
        out["client_kernels"] = c.kernels()
    elif name == "released_first" and torch is not None:
        c = Client(lib, "C")
        out["subscribe"] = c.subscribe()
        out["register"] = c.register()
        lib.cuptiActivityEnable(KIND_CONCURRENT_KERNEL)
        run()
        lib.cuptiActivityDisable(KIND_CONCURRENT_KERNEL)
        lib.cuptiActivityFlushAll(FLUSH_FORCED)
        out["client_kernels_own_window"] = c.kernels()
        out["unsubscribe"] = c.unsubscribe()
        out["torch_kernels"] = torch_profile(torch)
        lib.cuptiActivityFlushAll(FLUSH_FORCED)
        out["client_kernels_after"] = c.kernels()
        out["torch_kernels_again"] = torch_profile(torch)
    elif name == "claim_cost":
        # What rlprof's window open / close costs in CUPTI calls, 20 windows (the first apart).
        import time
        c = Client(lib, "C")
        times: Dict[str, List[float]] = {}

        def timed(key: str, f: Any) -> int:
            t0 = time.perf_counter_ns()
            r = f()
            times.setdefault(key, []).append((time.perf_counter_ns() - t0) / 1e3)
            return r
        codes = set()
        for _ in range(20):
            codes.add(timed("subscribe", c.subscribe))
            codes.add(timed("register", c.register))
            codes.add(timed("enable_5_kinds", lambda: max(lib.cuptiActivityEnable(k) for k in CLAIM_KINDS)))
            run()
            codes.add(timed("disable_5_kinds", lambda: max(lib.cuptiActivityDisable(k) for k in CLAIM_KINDS)))
            codes.add(timed("flush", lambda: lib.cuptiActivityFlushAll(FLUSH_FORCED)))
            codes.add(timed("unsubscribe", c.unsubscribe))
        out["codes"] = sorted(codes)
        out["first_us"] = {k: round(v[0], 1) for k, v in times.items()}
        out["median_us_after"] = {k: round(sorted(v[1:])[len(v[1:]) // 2], 1) for k, v in times.items()}
        out["kernels"] = c.kernels()
    else:
        out["skipped"] = "needs torch with CUDA"
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out")
    ap.add_argument("--fake", help="rlprof's fake CUPTI (a check of the script on the CPU)")
    ap.add_argument("--probe", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.probe:
        print(json.dumps(probe(args.probe, args.fake)))
        return 0
    results, ok = [], True
    for name in PROBES:
        cmd = [sys.executable, os.path.abspath(__file__), "--probe", name] + (["--fake", args.fake] if args.fake else [])
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if p.returncode != 0 or not p.stdout.strip():
            results.append({"probe": name, "error": p.returncode, "stderr": p.stderr[-2000:]})
            ok = False
        else:
            results.append(json.loads(p.stdout.strip().splitlines()[-1]))
        print(json.dumps(results[-1]), flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
