#!/usr/bin/env python3
"""Writes the torch-tb-profiler step-time fixtures beside this file (PROVENANCE.md there).

    python3 test/data/tb_plugin/make_fixtures.py     # rewrites them identically

Kineto (torch.profiler JSON) traces made for rlprof's `--view tb`: host events on one pid,
device events on pid = device, tid = stream with args device/stream/correlation, launches with
the same correlation, `External id` on operators, launches and kernels; µs times with at most 3
decimals on a 5 s origin (exact in float64, so the plugin's float arithmetic is exact to the ns).
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))


class Trace:
    def __init__(self, host_pid, origin):
        self.events = []
        self.host_pid = host_pid
        self.origin = origin
        self.next_ext = 1

    def t(self, us):
        return round(self.origin + us, 3)

    def op(self, cat, name, start, end, tid=None, ext=None):
        ext = ext if ext is not None else self.next_ext
        self.next_ext += 1
        self.events.append({"ph": "X", "cat": cat, "name": name, "pid": self.host_pid,
                            "tid": tid if tid is not None else self.host_pid, "ts": self.t(start),
                            "dur": round(end - start, 3), "args": {"External id": ext}})
        return ext

    def launch(self, cat, name, start, end, corr, ext, tid=None):
        self.events.append({"ph": "X", "cat": cat, "name": name, "pid": self.host_pid,
                            "tid": tid if tid is not None else self.host_pid, "ts": self.t(start),
                            "dur": round(end - start, 3),
                            "args": {"External id": ext, "correlation": corr}})

    def device(self, cat, name, start, end, corr, ext, stream):
        self.events.append({"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": stream,
                            "ts": self.t(start), "dur": round(end - start, 3),
                            "args": {"External id": ext, "correlation": corr, "device": 0,
                                     "stream": stream}})

    def gpu_step(self, n, start, end, stream=7):
        self.events.append({"ph": "X", "cat": "gpu_user_annotation", "name": f"ProfilerStep#{n}", "pid": 0,
                            "tid": stream, "ts": self.t(start), "dur": round(end - start, 3),
                            "args": {"External id": 0, "device": 0, "stream": stream}})

    def write(self, name):
        doc = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100", "computeMajor": 9,
                                                           "computeMinor": 0, "totalGlobalMem": 85000000000}],
               "traceEvents": sorted(self.events, key=lambda e: (e["ts"], -e["dur"]))}
        with open(os.path.join(HERE, name), "w") as f:
            json.dump(doc, f, indent=0)
            f.write("\n")


def legacy():
    """PyTorch 1.8-1.12 spelling (Operator, Runtime, Kernel, Memcpy, Memset): read alike by both
    rule sets. A memset launched before the first step moves step 3's start to its end; kernels
    past a step's host end extend it; the last step launches nothing and is dropped."""
    tr = Trace(100, 5_000_000)
    OP, RT = "Operator", "Runtime"
    e = tr.op(OP, "aten::zeros", -50, -10)
    tr.launch(RT, "cudaMemsetAsync", -40, -35, 100, e)
    tr.device("Memset", "Memset (Device)", 2.5, 30.125, 100, e, 7)

    tr.op(OP, "ProfilerStep#3", 0, 400)
    tr.op(OP, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 5, 100)
    tr.op(OP, "aten::stack", 10, 50)
    e = tr.op(OP, "aten::linear", 110, 250)
    tr.launch(RT, "cudaLaunchKernel", 120, 130, 1, e)
    tr.device("Kernel", "volta_sgemm_128x64_nn", 135, 300, 1, e, 7)
    tr.launch(RT, "cudaMemcpyAsync", 140, 150, 2, e)
    tr.device("Memcpy", "Memcpy HtoD (Pageable -> Device)", 160, 220, 2, e, 20)
    tr.launch(RT, "cudaMemsetAsync", 160, 165, 3, e)
    tr.device("Memset", "Memset (Device)", 305, 310, 3, e, 7)
    e = tr.op(OP, "aten::add", 260, 290)
    tr.launch(RT, "cudaLaunchKernel", 270, 278, 4, e)
    tr.device("Kernel", "vectorized_elementwise_kernel", 310.5, 420.25, 4, e, 7)
    e = tr.op(OP, "aten::item", 375, 399)
    tr.launch(RT, "cudaStreamSynchronize", 380, 398, 12, e)

    tr.op(OP, "ProfilerStep#4", 400, 800)
    e = tr.op(OP, "nccl:all_reduce", 420, 500)
    tr.launch(RT, "cudaLaunchKernel", 430, 440, 5, e)
    tr.device("Kernel", "ncclKernel_AllReduce_RING_LL_Sum_float", 445, 600, 5, e, 21)
    e = tr.op(OP, "aten::mm", 510, 600)
    tr.launch(RT, "cudaLaunchKernel", 515, 525, 6, e)
    tr.device("Kernel", "ampere_sgemm_64x32", 590, 700, 6, e, 7)
    e = tr.op(OP, "aten::to", 640, 770)
    tr.launch(RT, "cudaMemcpy", 650, 760, 7, e)
    tr.device("Memcpy", "Memcpy DtoH (Device -> Pageable)", 705, 755.5, 7, e, 7)

    tr.op(OP, "ProfilerStep#5", 800, 1200)
    tr.op(OP, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 800.5, 850)
    e = tr.op(OP, "aten::relu", 860, 900)
    tr.launch(RT, "cudaLaunchKernel", 865, 872, 8, e)
    tr.device("Kernel", "relu_kernel", 880, 950.75, 8, e, 7)
    e = tr.op(OP, "aten::sum", 910, 990)
    tr.launch(RT, "cudaLaunchKernel", 915, 921, 9, e)
    tr.device("Kernel", "reduce_kernel", 955, 1010, 9, e, 7)
    tr.launch(RT, "cudaLaunchKernel", 925, 931, 10, e)
    tr.device("Kernel", "reduce_kernel", 1015, 1300, 10, e, 7)
    tr.op(OP, "Optimizer.step#SGD.step", 1000, 1150)

    tr.op(OP, "ProfilerStep#6", 1200, 1500)
    e = tr.op(OP, "aten::empty", 1210, 1230)
    e = tr.op(OP, "aten::fill_", 1235, 1260)
    tr.launch(RT, "cudaLaunchKernel", 1240, 1250, 11, e)  # its kernel was not captured
    tr.write("tb_legacy.json")


def modern():
    """PyTorch 2.x spelling (cpu_op, user_annotation, gpu_user_annotation, cuda_runtime,
    cuda_driver, kernel, gpu_memcpy, gpu_memset, python_function): torch-tb-profiler 0.4.3 reads
    no cuda_runtime and no annotation but ProfilerStep#N; the plugin's later source reads both."""
    tr = Trace(300, 5_000_000)
    CPU, UA, RT = "cpu_op", "user_annotation", "cuda_runtime"
    tr.op(UA, "ProfilerStep#10", 0, 500)
    tr.op(UA, "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", 5, 80)
    tr.op(CPU, "aten::empty", 10, 20)
    tr.op(UA, "forward", 90, 300)
    tr.op("python_function", "nn.Module: Linear_0", 92, 205)
    e = tr.op(CPU, "aten::linear", 95, 200)
    tr.launch(RT, "cudaLaunchKernel", 100, 108, 2001, e)
    tr.device("kernel", "sm90_xmma_gemm_f32f32", 112, 250, 2001, e, 7)
    tr.launch(RT, "cudaMemsetAsync", 110, 114, 2002, e)
    tr.device("gpu_memset", "Memset (Device)", 252, 256, 2002, e, 7)
    e = tr.op(CPU, "aten::copy_", 210, 290)
    tr.launch(RT, "cudaMemcpyAsync", 215, 222, 2003, e)
    tr.device("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 230, 280, 2003, e, 8)
    tr.launch("cuda_driver", "cuLaunchKernel", 260, 266, 2004, e)
    tr.device("kernel", "triton_poi_fused_add_0", 270, 330, 2004, e, 7)
    e = tr.op(CPU, "aten::item", 320, 480)
    tr.launch(RT, "cudaStreamSynchronize", 330, 470, 2005, e)
    tr.gpu_step(10, 112, 330)

    tr.op(UA, "ProfilerStep#11", 500, 1000)
    tr.op(UA, "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", 505, 560)
    # PyTorch 2.x: the collective is an annotation inside record_param_comms, whose External id
    # the launch and the kernel carry: the kernel is not communication for the plugin.
    e = tr.op(CPU, "record_param_comms", 565, 645)
    tr.op(UA, "nccl:all_reduce", 570, 640)
    tr.launch(RT, "cudaLaunchKernel", 580, 590, 2010, e)
    tr.device("kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 595, 900, 2010, e, 9)
    e = tr.op(CPU, "nccl:broadcast", 900, 960)  # a PyTorch 1.x-style collective operator
    tr.launch(RT, "cudaLaunchKernel", 910, 915, 2013, e)
    tr.device("kernel", "ncclKernel_Broadcast_RING_LL_Sum_int8_t", 955, 990, 2013, e, 9)
    e = tr.op(CPU, "aten::mm", 650, 720)
    tr.launch(RT, "cudaLaunchKernel", 655, 662, 2011, e)
    tr.device("kernel", "sm90_xmma_gemm_f32f32", 665, 800, 2011, e, 7)
    tr.op(CPU, "autograd::engine::evaluate_function: MmBackward0", 700, 850, tid=301)
    e = tr.op(CPU, "aten::mm", 710, 840, tid=301)
    tr.launch(RT, "cudaLaunchKernel", 720, 728, 2012, e, tid=301)
    tr.device("kernel", "sm90_xmma_gemm_f32f32", 805, 950, 2012, e, 7)
    tr.gpu_step(11, 595, 950)

    tr.op(UA, "ProfilerStep#12", 1000, 1400)
    e = tr.op(CPU, "aten::add", 1010, 1050)
    tr.launch(RT, "cudaLaunchKernel", 1015, 1022, 2020, e)
    tr.device("kernel", "vectorized_elementwise_kernel", 1030, 1100, 2020, e, 7)
    e = tr.op(CPU, "aten::mul", 1060, 1090)
    tr.launch(RT, "cudaLaunchKernel", 1065, 1070, 2021, e)
    tr.device("kernel", "vectorized_elementwise_kernel", 1105, 1200, 2021, e, 7)
    tr.op(UA, "Optimizer.step#AdamW.step", 1100, 1350)
    e = tr.op(CPU, "aten::_foreach_add_", 1110, 1200)
    tr.launch(RT, "cudaLaunchKernel", 1120, 1126, 2022, e)
    tr.device("kernel", "multi_tensor_apply_kernel", 1210, 1390, 2022, e, 7)
    tr.gpu_step(12, 1030, 1390)

    tr.op(UA, "ProfilerStep#13", 1400, 1700)
    e = tr.op(CPU, "aten::add", 1410, 1450)
    tr.launch(RT, "cudaLaunchKernel", 1415, 1420, 2030, e)
    tr.device("kernel", "vectorized_elementwise_kernel", 1425, 1480, 2030, e, 7)
    e = tr.op(CPU, "aten::mul", 1460, 1490)
    tr.launch(RT, "cudaLaunchKernel", 1465, 1470, 2031, e)
    tr.device("kernel", "vectorized_elementwise_kernel", 1485, 1520, 2031, e, 7)
    tr.gpu_step(13, 1425, 1520)
    tr.write("tb_modern.json")


def covered():
    """Kernels cover both steps entirely: the plugin's priority rule then finds nothing left after
    Kernel and offers the whole steps again to Memcpy, Memset, … (classes sum past the step)."""
    tr = Trace(400, 5_000_000)
    tr.op("cpu_op", "ProfilerStep#1", 0, 100)
    tr.op("cpu_op", "ProfilerStep#2", 100, 200)
    e = tr.op("cpu_op", "aten::mm", 10, 60)
    tr.launch("cuda_runtime", "cudaLaunchKernel", 20, 30, 1, e)
    tr.device("kernel", "long_gemm", -10, 210, 1, e, 7)
    e = tr.op("cpu_op", "aten::copy_", 120, 180)
    tr.launch("cuda_runtime", "cudaMemcpyAsync", 125, 130, 2, e)
    tr.device("gpu_memcpy", "Memcpy DtoD (Device -> Device)", 50, 80, 2, e, 8)
    tr.device("gpu_memset", "Memset (Device)", 150, 160, 3, e, 9)
    tr.write("tb_covered.json")


def no_steps():
    """No ProfilerStep: one step 0 spanning the host events (operators, python)."""
    tr = Trace(500, 5_000_000)
    e = tr.op("cpu_op", "aten::linear", 0, 100)
    tr.launch("Runtime", "cudaLaunchKernel", 20, 30, 1, e)
    tr.device("Kernel", "gemm", 40, 400, 1, e, 7)
    tr.op("python", "train_loop", 150, 300.5)
    tr.op("cpu_op", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 160, 200)
    tr.write("tb_no_steps.json")


if __name__ == "__main__":
    legacy()
    modern()
    covered()
    no_steps()
