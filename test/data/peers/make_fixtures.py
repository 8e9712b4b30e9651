"""Writes the small Kineto traces of test/data/peers/ (PROVENANCE.md there says what each shows).

Deterministic: `python3 test/data/peers/make_fixtures.py` rewrites the same files. Times are
µs with fractional parts, as torch.profiler writes them; device events carry Kineto's
`args.device/stream/correlation`, launches the same `correlation`.
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
BASE = 1_700_000_000_000.0  # µs, an epoch-like origin as in real Kineto traces
HOST_PID, HOST_TID = 4242, 4242


class Trace:
    def __init__(self, rank):
        self.events = []
        self.rank = rank
        self.corr = 0

    def host(self, name, ts, dur, cat="cpu_op", **args):
        self.events.append({"ph": "X", "cat": cat, "name": name, "pid": HOST_PID, "tid": HOST_TID,
                            "ts": BASE + ts, "dur": dur, "args": args})

    def launch(self, name, ts, dur, runtime_cat, device_cat, kname, kts, kdur, stream, device=0,
               **kargs):
        self.corr += 1
        c = self.corr
        self.host(name, ts, dur, cat=runtime_cat, correlation=c)
        self.events.append({"ph": "X", "cat": device_cat, "name": kname, "pid": device,
                            "tid": stream, "ts": BASE + kts, "dur": kdur,
                            "args": dict(device=device, stream=stream, correlation=c, **kargs)})

    def gpu_annotation(self, name, ts, dur, stream, device=0):
        self.events.append({"ph": "X", "cat": "gpu_user_annotation", "name": name, "pid": device,
                            "tid": stream, "ts": BASE + ts, "dur": dur, "args": {}})

    def write(self, name, device_name):
        meta = [{"ph": "M", "name": "process_name", "pid": HOST_PID, "tid": 0,
                 "args": {"name": "python"}},
                {"ph": "M", "name": "process_name", "pid": 0, "tid": 0,
                 "args": {"name": device_name}}]
        doc = {"schemaVersion": 1,
               "distributedInfo": {"backend": "nccl", "rank": self.rank, "world_size": 2},
               "traceEvents": meta + self.events}
        with open(os.path.join(HERE, name), "w") as f:
            json.dump(doc, f, indent=0)
            f.write("\n")


def gpu_step_windows():
    """Three ProfilerSteps with their GPU-side `gpu_user_annotation` ProfilerStep#N, plus a
    warm-up kernel before the first step and a cool-down kernel after the last one: device work
    outside every step (1000 µs of the 1480 µs of compute)."""
    t = Trace(rank=0)
    L = ("cudaLaunchKernel", "cuda_runtime", "kernel")
    t.host("aten::warmup", 0, 100)
    t.launch(L[0], 10.25, 5, L[1], L[2], "warmup_gemm_kernel", 20.5, 600, 7)
    t.host("ProfilerStep#1", 1000, 400, cat="user_annotation")
    t.host("aten::mm", 1010, 90)
    t.launch(L[0], 1020, 5, L[1], L[2], "gemm_kernel_1", 1100.4, 200, 7)
    t.launch(L[0], 1200, 5, L[1], L[2], "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 1250.7, 249.3, 20)
    t.gpu_annotation("ProfilerStep#1", 1100.4, 399.6, 7)
    t.host("ProfilerStep#2", 1400, 400, cat="user_annotation")
    t.launch(L[0], 1410, 5, L[1], L[2], "gemm_kernel_2", 1500.2, 199.6, 7)
    # Launched before the profiler started: no launch event in the trace (TraceLens leaves it out).
    t.events.append({"ph": "X", "cat": "kernel", "name": "prelaunched_kernel", "pid": 0, "tid": 13,
                     "ts": BASE + 1310.0, "dur": 60, "args": {"device": 0, "stream": 13, "correlation": 999}})
    t.launch("cudaMemcpyAsync", 1420, 5, L[1], "gpu_memcpy", "Memcpy DtoH (Device -> Pinned)",
             1700.1, 50.3, 7)
    t.gpu_annotation("ProfilerStep#2", 1500.2, 250.2, 7)
    t.host("ProfilerStep#3", 1800, 400, cat="user_annotation")
    t.launch(L[0], 1810, 5, L[1], L[2], "gemm_kernel_3", 1820.9, 80, 7)
    t.gpu_annotation("ProfilerStep#3", 1820.9, 80, 7)
    t.host("aten::cooldown", 2290, 20)
    t.launch(L[0], 2300, 5, L[1], L[2], "cooldown_gemm_kernel", 2300.5, 400, 7)
    t.write("gpu_step_windows.json", "GPU 0")


def accelerator(name, runtime_cat, device_cat, runtime_name, device_name):
    """Two ProfilerSteps on an accelerator that Kineto records under its own categories: its
    launches (`runtime_cat`) and its device work (`device_cat`), two streams."""
    t = Trace(rank=1)
    for step, t0 in ((1, 0.0), (2, 1000.0)):
        t.host(f"ProfilerStep#{step}", t0, 1000, cat="user_annotation")
        t.host("aten::linear", t0 + 10, 300)
        t.launch(runtime_name, t0 + 20, 8, runtime_cat, device_cat, "matmul_kernel", t0 + 40.5,
                 300.25, 1)
        t.launch(runtime_name, t0 + 30, 8, runtime_cat, device_cat, "add_kernel", t0 + 360.75, 20, 1)
        t.launch(runtime_name, t0 + 40, 8, runtime_cat, device_cat, "allreduce_kernel", t0 + 200.5,
                 400, 2)
    t.write(name, device_name)


def multistream():
    """Kernels on four streams overlapping each other, a communication kernel on its own stream,
    sub-µs start/end fractions (HTA rounds every interval inward to whole µs), a kernel shorter
    than 1 µs (HTA keeps it with a negative duration), a `cuda_sync` on a stream and a kernel
    that starts in the last ProfilerStep but was launched in the one before (HTA keeps it)."""
    t = Trace(rank=0)
    L = ("cudaLaunchKernel", "cuda_runtime", "kernel")
    for step, t0 in ((1, 0.0), (2, 1000.0), (3, 2000.0)):
        t.host(f"ProfilerStep#{step}", t0, 1000, cat="user_annotation")
        t.launch(L[0], t0 + 10, 5, *L[1:], "gemm_a", t0 + 20.3, 300.4, 7)
        t.launch(L[0], t0 + 20, 5, *L[1:], "gemm_b", t0 + 100.9, 150.05, 13)
        t.launch(L[0], t0 + 30, 5, *L[1:], "ncclDevKernel_AllGather_RING_LL", t0 + 200.5, 500.7, 21)
        t.launch(L[0], t0 + 40, 5, *L[1:], "elementwise_kernel", t0 + 650.2, 0.6, 7)
        t.launch(L[0], t0 + 50, 5, *L[1:], "softmax_kernel", t0 + 650.1, 40.8, 14)
        t.launch("cudaMemsetAsync", t0 + 60, 5, L[1], "gpu_memset", "Memset (Device)",
                 t0 + 705.5, 3.2, 14)
        t.launch(L[0], t0 + 70, 5, *L[1:], "gemm_c", t0 + 720.25, 30, 7)
        # A stream synchronisation: Kineto writes it as `cuda_sync` with the stream in args.
        t.launch("cudaStreamSynchronize", t0 + 800, 60, L[1], "cuda_sync", "Stream Sync",
                 t0 + 800.5, 55.1, 7, cuda_sync_kind="stream_sync")
        # Launched late in the step; runs past its end into the next step.
        t.launch(L[0], t0 + 990, 5, *L[1:], "tail_kernel", t0 + 995.5, 40.2, 13)
    t.write("multistream.json", "GPU 0")


def streamless_device_events():
    """MTIA-style device work with DMA requests that carry no `args.stream` (Kineto writes MTIA's
    `dma_request` events so): HTA gives them stream -1 and leaves them out of every breakdown;
    rlprof's native view counts them as device work on their own lane."""
    t = Trace(rank=0)
    for step, t0 in ((1, 0.0), (2, 1000.0), (3, 2000.0)):
        t.host(f"ProfilerStep#{step}", t0, 1000, cat="user_annotation")
        t.launch("runFunction", t0 + 20, 8, "mtia_runtime", "mtia_ccp_events", "matmul_kernel", t0 + 40.5,
                 300.25, 1)
        t.launch("runFunction", t0 + 30, 8, "mtia_runtime", "mtia_ccp_events", "allreduce_kernel", t0 + 250.5,
                 200, 2)
        # A DMA request on the device, no stream: it fills the idle gap after the kernels.
        t.corr += 1
        t.host("runFunction", t0 + 40, 8, cat="mtia_runtime", correlation=t.corr)
        t.events.append({"ph": "X", "cat": "mtia_ccp_events", "name": "dma_request", "pid": 0, "tid": 9,
                         "ts": BASE + t0 + 500.0, "dur": 300.5, "args": {"device": 0, "correlation": t.corr}})
    t.write("streamless_device_events.json", "MTIA 0")


def rocm_gpu_step_annotations():
    """ROCm-style trace: the GPU-side `ProfilerStep#N` annotations carry only an `External id`
    (no `correlation`), and the last one starts well after the last host ProfilerStep. HTA sees
    them as annotations (CPU events to its filters), so its last-step cut-off is the later GPU
    annotation start and a kernel launched between the two starts stays in; taking the External
    id for a correlation made rlprof treat them as kernels and cut that kernel off."""
    t = Trace(rank=0)
    L = ("hipLaunchKernel", "cuda_runtime", "kernel")
    ext = 100
    for step, t0 in ((1, 0.0), (2, 1000.0), (3, 2000.0)):
        ext += 1
        t.host(f"ProfilerStep#{step}", t0, 1000, cat="user_annotation", **{"External id": ext})
        t.launch(L[0], t0 + 10, 5, L[1], L[2], "Cijk_gemm_kernel", t0 + 60.5, 400.25, 0)
        t.launch(L[0], t0 + 20, 5, L[1], L[2], "ncclDevKernel_AllReduce_Sum_bf16", t0 + 300.5, 500, 1)
        t.launch("hipMemsetAsync", t0 + 25, 5, L[1], "gpu_memset", "Memset (Device)", t0 + 900.5, 20.2, 0)
        gpu_start = t0 + 60.5 + (600.0 if step == 3 else 0.0)
        t.events.append({"ph": "X", "cat": "gpu_user_annotation", "name": f"ProfilerStep#{step}", "pid": 0,
                         "tid": 0, "ts": BASE + gpu_start, "dur": 300.0,
                         "args": {"External id": ext, "device": 0}})
    # Launched after the last host ProfilerStep started, before its GPU annotation did.
    t.launch(L[0], 2300, 5, L[1], L[2], "late_gemm_kernel", 2320.5, 100, 0)
    t.write("rocm_gpu_step_annotations.json", "GPU 0 (AMD Instinct MI300X)")


def with_flows(t, flow_ends_only=()):
    """Adds Kineto's "ac2g" flow points (launch → device work) for every correlated launch of
    `t`: a start on the launch and an end on the device event, as torch.profiler writes them;
    for the device events named in `flow_ends_only`, only the end (ROCm's hipMemset* launches)."""
    launches = {e["args"]["correlation"]: e for e in t.events
                if e["pid"] == HOST_PID and "correlation" in e.get("args", {})}
    flows = []
    for e in t.events:
        c = e.get("args", {}).get("correlation")
        if e["pid"] == HOST_PID or c is None or c not in launches:
            continue
        base = {"cat": "ac2g", "name": "ac2g", "id": c}
        if e["name"] not in flow_ends_only:
            la = launches[c]
            flows.append(dict(base, ph="s", pid=la["pid"], tid=la["tid"], ts=la["ts"]))
        flows.append(dict(base, ph="f", bp="e", pid=e["pid"], tid=e["tid"], ts=e["ts"]))
    t.events.extend(flows)


def rocm_rccl_tiny_gpu_steps():
    """ROCm with RCCL: GPU-side `ProfilerStep#N` annotations only a few µs long at each step's
    start, bracketing none of its work (a 4.7 ms all-reduce among it). Clipping the TraceLens
    timeline to them made its communication 0; rlprof now reads the whole trace and says so."""
    t = Trace(rank=0)
    L = ("hipLaunchKernel", "cuda_runtime", "kernel")
    for step, t0 in ((1, 0.0), (2, 10000.0), (3, 20000.0)):
        t.host(f"ProfilerStep#{step}", t0, 10000, cat="user_annotation")
        t.launch(L[0], t0 + 10, 5, L[1], L[2], "Cijk_Ailk_Bljk_gemm", t0 + 50.25, 3000.5, 0)
        t.launch(L[0], t0 + 20, 5, L[1], L[2], "ncclDevKernel_Generic_4", t0 + 3100.75, 4700.125, 1)
        t.gpu_annotation(f"ProfilerStep#{step}", t0 + 40.0, 3.5, 0)
    with_flows(t)
    t.write("rocm_rccl_tiny_gpu_steps.json", "GPU 0 (AMD Instinct MI300X)")


def rocm_memset_flow_end_only():
    """ROCm hipMemsetAsync launches whose "ac2g" flow has only its end: TraceLens links device
    work through flow pairs and leaves those memsets out; rlprof's native view links by the
    correlation id and counts them (`--compat tracelens` leaves them out as TraceLens does)."""
    t = Trace(rank=0)
    L = ("hipLaunchKernel", "cuda_runtime", "kernel")
    for step, t0 in ((1, 0.0), (2, 1000.0)):
        t.host(f"ProfilerStep#{step}", t0, 1000, cat="user_annotation")
        t.launch(L[0], t0 + 10, 5, L[1], L[2], "Cijk_gemm_kernel", t0 + 30.5, 300.25, 0)
        t.launch("hipMemsetAsync", t0 + 20, 5, L[1], "gpu_memset", "hipMemsetAsync_kernel", t0 + 340.75, 150.5, 0)
        t.launch("hipMemcpyAsync", t0 + 30, 5, L[1], "gpu_memcpy", "Memcpy DtoD (Device -> Device)", t0 + 500.25,
                 80.5, 2)
        t.launch(L[0], t0 + 40, 5, L[1], L[2], "ncclDevKernel_Generic_1", t0 + 520.5, 200.125, 1)
    with_flows(t, flow_ends_only=("hipMemsetAsync_kernel",))
    t.write("rocm_memset_flow_end_only.json", "GPU 0 (AMD Instinct MI300X)")


def epoch_ns():
    """Timestamps since the Unix epoch with ns decimals (1.7e15 µs: no float64 holds them
    exactly), as Kineto writes when its clock is the realtime one: the `--json` outputs must
    still give every start to the ns. Written as text, since a Python float cannot carry them."""
    origin_ns = 1_700_000_000_000_000_123  # 2023-11-14, .123 µs
    ev = []

    def x(cat, name, pid, tid, ts_ns, dur_ns, args):
        ev.append('{"ph": "X", "cat": "%s", "name": "%s", "pid": %d, "tid": %d, "ts": %d.%03d, '
                  '"dur": %d.%03d, "args": %s}' % (cat, name, pid, tid, ts_ns // 1000, ts_ns % 1000,
                                                   dur_ns // 1000, dur_ns % 1000, json.dumps(args)))

    x("user_annotation", "ProfilerStep#1", HOST_PID, HOST_TID, origin_ns, 900_007, {})
    x("user_annotation", "ProfilerStep#2", HOST_PID, HOST_TID, origin_ns + 1_000_001, 900_009, {})
    for k, t0 in enumerate((origin_ns, origin_ns + 1_000_001)):
        c = k + 1
        x("cuda_runtime", "cudaLaunchKernel", HOST_PID, HOST_TID, t0 + 10_001, 5_003, {"correlation": c})
        x("kernel", "gemm_kernel", 0, 7, t0 + 20_011, 300_457, {"device": 0, "stream": 7, "correlation": c})
    with open(os.path.join(HERE, "epoch_ns.json"), "w") as f:
        f.write('{"schemaVersion": 1, "distributedInfo": {"rank": 0, "world_size": 1},\n'
                ' "traceEvents": [\n' + ",\n".join(ev) + "\n]}\n")


if __name__ == "__main__":
    epoch_ns()
    gpu_step_windows()
    accelerator("mtia_accelerator.json", "mtia_runtime", "mtia_ccp_events", "runFunction",
                "MTIA 0")
    accelerator("xpu_accelerator.json", "xpu_runtime", "kernel", "urEnqueueKernelLaunch", "XPU 0")
    accelerator("privateuse1_accelerator.json", "privateuse1_runtime", "kernel", "launchKernel",
                "PrivateUse1 0")
    multistream()
    streamless_device_events()
    rocm_gpu_step_annotations()
    rocm_rccl_tiny_gpu_steps()
    rocm_memset_flow_end_only()
