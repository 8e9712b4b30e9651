#!/usr/bin/env python3
"""Turns what test/gpu/run_on_device.sh brought back from a GPU into the project's record:

    python3 test/gpu/ingest.py RESULTS            # prints the figures as docs/performance.md rows
    python3 test/gpu/ingest.py RESULTS --write    # also keeps a window's real CUPTI records as
                                                  # test/data/cupti/<gpu>_grpo_step2.records

RESULTS is the folder the device tool's files came back to (its `files_at`, holding
figures/device_figures.json, figures/work.tar.gz and run.log). The figures are checked against
issue 14's targets: kernel count and time within 1 % of torch.profiler's trace of the same step,
rlprof's whole-step overhead below torch.profiler's, the window close on the training thread
at most 1 ms. The kept records are replayed by every test run
(python/tests/test_device_cupti.py::test_every_records_file_replays_as_its_device_work).
Exit status: 0 when every target is met, 1 when one is not, 2 when the results are missing."""
from __future__ import annotations

import argparse
import io
import json
import os
import re
import statistics
import sys
import tarfile
from typing import Any, Dict, List, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def find(results: str, name: str) -> Optional[str]:
    for dirpath, _, files in os.walk(results):
        if name in files:
            return os.path.join(dirpath, name)
    return None


def gpu_line(results: str) -> str:
    """nvidia-smi's `name, driver, memory` line from run.log ('' if none)."""
    log = find(results, "run.log")
    if log is None:
        return ""
    with open(log, errors="replace") as f:
        for line in f:
            if line.count(",") == 2 and "MiB" in line:
                return line.strip()
    return ""


def pct(x: Optional[float]) -> str:
    return "—" if x is None else f"{100 * (x - 1):+.2f} %"


def rows(fig: Dict[str, Any]) -> Tuple[List[str], List[str]]:
    """Markdown table rows and the targets missed."""
    out: List[str] = []
    missed: List[str] = []
    for k in fig.get("kernels", []):
        r, t = k.get("rlprof"), k.get("torch_json")
        if not r or not t:
            missed.append(f"step {k['step']}: no kernel figures (rlprof {bool(r)}, torch {bool(t)})")
            continue
        ok = all(v is not None and abs(v - 1) <= 0.01 for v in (k.get("count_ratio"), k.get("time_ratio")))
        if not ok:
            missed.append(f"step {k['step']}: device work differs from torch.profiler's by more than 1 %")
        out.append(f"| step {k['step']}: device work (kernels, copies, sets) in rlprof's capture vs "
                   f"torch.profiler's trace | {r['count']} / {t['count']} ops ({pct(k.get('count_ratio'))}), "
                   f"{r['total_us']:.1f} / {t['total_us']:.1f} µs ({pct(k.get('time_ratio'))}) | "
                   f"within 1 %: {'met' if ok else 'NOT met'} |")
    o = fig.get("overhead")
    if o:
        base = statistics.mean(o["off_s"])
        out.append(f"| steps 2 + 3 without a profiler | {' and '.join(f'{s:.3f} s' for s in o['off_s'])}"
                   f" (noise ×{o['noise']:.2f}) | — |" if o.get("noise") else
                   f"| steps 2 + 3 without a profiler | {base:.3f} s | — |")
        for mode, what in (("rlprof", "rlprof, operators + device activity (level0)"),
                           ("nodev", "rlprof, operators only"),
                           ("devcorr", "rlprof, operators + device activity with external correlation"),
                           ("devkern", "rlprof, operators + kernels, copies, sets only (no launch records)"),
                           ("torch", "torch.profiler, CPU + CUDA activities, export included")):
            if mode in o:
                out.append(f"| {what} | {o[mode]['s']:.3f} s = ×{o[mode]['ratio']:.2f} | — |")
        v = o.get("rlprof_vs_torch")
        ok = v is not None and v < 1
        if not ok:
            missed.append("rlprof's whole-step overhead is not below torch.profiler's")
        out.append(f"| rlprof with device capture against torch.profiler | ×{v:.3f} | below ×1: "
                   f"{'met' if ok else 'NOT met'} |" if v is not None else
                   "| rlprof with device capture against torch.profiler | — | NOT measured |")
    b = fig.get("bytes")
    if b:
        out.append(f"| bytes on disk per device event added (per CUPTI record) | "
                   f"{b['bytes_per_event_added']:.1f} ({b['bytes_per_cupti_record']:.1f}); "
                   f"{b['events_added']} events, {b['cupti_records']} records | — |")
    closes = [e["us"] for e in fig.get("window_close_us", [])]
    if closes:
        ok = max(closes) <= 1000
        if not ok:
            missed.append("a window close took more than 1 ms on the training thread")
        out.append(f"| window close on the training thread (steps 2, 3) | "
                   f"{', '.join(f'{c:.0f} µs' for c in closes)} | ≤ 1 ms: {'met' if ok else 'NOT met'} |")
    opens = [e["us"] for e in fig.get("window_open_us", [])]
    if opens:
        nodev = [e["us"] for e in fig.get("window_open_nodev_us", [])]
        out.append(f"| window open on the training thread (steps 2, 3: CUPTI claimed, kinds enabled) | "
                   f"{', '.join(f'{c:.0f} µs' for c in opens)}"
                   + (f" (without device capture: {', '.join(f'{c:.0f} µs' for c in nodev)})" if nodev else "")
                   + " | — |")
    for c in fig.get("cupti", []):
        if c:
            out.append(f"| CUPTI | {c.get('status')}, {c.get('library')} (API {c.get('cupti_version')}), "
                       f"clock: {c.get('clock')} | — |")
            break
    for mode, row in fig.get("coexistence", {}).items():
        st = sorted({r.get("cupti_status") for r in row.get("rlprof", [])})
        dev = [r["device_work"]["count"] for r in row.get("rlprof", [])]
        tdev = [t["device_work"]["count"] for t in row.get("torch", [])]
        # Nothing lost silently: torch.profiler's traces keep their device work (rlprof holds
        # CUPTI only inside its windows), and a capture without device work says why.
        ok = bool(tdev) and all(n > 0 for n in tdev) and all(
            n > 0 or str(st_).startswith("off: ") for n, st_ in
            zip(dev, [r.get("cupti_status") for r in row.get("rlprof", [])]))
        if not ok:
            missed.append(f"{mode}: a trace without device work (torch.profiler's {tdev}, rlprof's {dev}) "
                          "that does not say why")
        out.append(f"| both profilers, {mode} | rlprof: {', '.join(map(str, st))}; device ops per capture "
                   f"{dev}; torch.profiler's {tdev} | each trace has its device work or says why: "
                   f"{'met' if ok else 'NOT met'} |")
    return out, missed


def client_rows(clients: List[Dict[str, Any]]) -> List[str]:
    """test/gpu/cupti_clients.py's probes, one line each."""
    out = []
    for c in clients:
        facts = {k: v for k, v in c.items() if k not in ("probe", "library", "cupti_version")}
        out.append(f"* `{c.get('probe')}`: " + ", ".join(f"{k} {json.dumps(v)}" for k, v in facts.items()))
    return out


def keep_records(results: str, fig: Dict[str, Any], gpu: str, into: str) -> Optional[str]:
    """The first window's records (step 2 of the rlprof run) as test data, with provenance."""
    tgz = find(results, "work.tar.gz")
    if tgz is None:
        return None
    with tarfile.open(tgz) as t:
        names = sorted(n for n in t.getnames() if re.search(r"records/cupti-\d+-w\d+\.records$", n))
        if not names:
            return None
        text = t.extractfile(names[0]).read().decode()  # type: ignore[union-attr]
    model = (gpu.split(",")[0] if gpu else fig.get("gpu", "gpu")).strip()
    slug = re.sub(r"[^a-z0-9]+", "_", model.lower().replace("nvidia", "")).strip("_") or "gpu"
    dest = os.path.join(into, f"{slug}_grpo_step2.records")
    head = (f"# Recorded on a GPU: {gpu or fig.get('gpu', '?')}; torch {fig.get('torch', '?')}.\n"
            f"# test/gpu/run_on_device.sh (device_figures.py, mode rlprof: examples/grpo_tiny on one GPU,\n"
            f"# operators + device activity at level0), RLPROF_CUPTI_RECORD_DIR, window of step 2\n"
            f"# ({os.path.basename(names[0])}); kept by test/gpu/ingest.py --write.\n")
    with open(dest, "w") as f:
        f.write(head + text)
    return dest


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results")
    ap.add_argument("--write", action="store_true", help="keep a window's CUPTI records as test data")
    ap.add_argument("--records-dir", default=os.path.join(ROOT, "test", "data", "cupti"),
                    help="where --write puts them (default test/data/cupti)")
    a = ap.parse_args()
    path = find(a.results, "device_figures.json")
    if path is None:
        print(f"ingest: no device_figures.json under {a.results}", file=sys.stderr)
        return 2
    with open(path) as f:
        fig = json.load(f)
    gpu = gpu_line(a.results)
    print(f"GPU: {gpu or fig.get('gpu', '?')}; torch {fig.get('torch')}; device {fig.get('device')}")
    table, missed = rows(fig)
    print("\n| Figure | Measured | Target |\n|---|---|---|")
    print("\n".join(table))
    clients = find(a.results, "cupti_clients.json")
    if clients is not None:
        with open(clients) as f:
            print("\nCUPTI's clients (test/gpu/cupti_clients.py; CUPTI result codes: 0 success, "
                  "39 MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED):\n" + "\n".join(client_rows(json.load(f))))
    if a.write:
        dest = keep_records(a.results, fig, gpu, a.records_dir)
        print(f"\nrecords kept: {dest}" if dest else "\nno CUPTI records in work.tar.gz")
    for m in missed:
        print(f"target missed: {m}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
