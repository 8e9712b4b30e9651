// Synthetic traces for the analysis tests and benchmarks, built per docs/definitions.md.
// Times are given in µs and stored in ns. Header-only, test/bench use only.
#ifndef RLPROF_SRC_ANALYSIS_MODEL_TEST_TRACES_H_
#define RLPROF_SRC_ANALYSIS_MODEL_TEST_TRACES_H_

#include <string>

#include "src/analysis/model/trace.h"

namespace rlprof::analysis::testing {

constexpr int64_t kUs = 1000;

class TraceBuilder {
 public:
  TraceBuilder() {
    t_.format = "synthetic";
    t_.source = "synthetic";
    t_.rank = 0;
    host_ = t_.ThreadTrack(1, 1);
  }
  uint32_t host() const { return host_; }
  // A ProfilerStep#n host range (marker slice + step marker).
  void Step(int64_t n, int64_t s_us, int64_t e_us) {
    std::string name = "ProfilerStep#" + std::to_string(n);
    t_.AddSlice(s_us * kUs, (e_us - s_us) * kUs, t_.Intern(name), t_.Intern("user_annotation"), host_);
    t_.steps.push_back({n, s_us * kUs, e_us * kUs, host_, "", name});
  }
  void Stage(int64_t step, const std::string& role, const std::string& name, int64_t s_us,
             int64_t e_us) {
    t_.AddSlice(s_us * kUs, (e_us - s_us) * kUs, t_.Intern(name), t_.Intern("user_annotation"), host_);
    t_.stages.push_back({step, s_us * kUs, e_us * kUs, host_, role, name});
  }
  // A device event on (device 0, stream); returns the row.
  size_t Device(int64_t stream, const std::string& name, const std::string& cat, int64_t s_ns,
                int64_t e_ns, int64_t correlation = -1) {
    size_t row = t_.AddSlice(s_ns, e_ns - s_ns, t_.Intern(name), t_.Intern(cat), t_.StreamTrack(0, stream));
    t_.correlation[row] = correlation;
    return row;
  }
  size_t Kernel(int64_t stream, const std::string& name, int64_t s_us, int64_t e_us,
                int64_t correlation = -1) {
    return Device(stream, name, "kernel", s_us * kUs, e_us * kUs, correlation);
  }
  // A cudaLaunchKernel host call at `at_us` (1 µs long) carrying `correlation`.
  void Launch(int64_t correlation, int64_t at_us, uint32_t track = UINT32_MAX) {
    size_t row = t_.AddSlice(at_us * kUs, kUs / 2, t_.Intern("cudaLaunchKernel"),
                             t_.Intern("cuda_runtime"), track == UINT32_MAX ? host_ : track);
    t_.correlation[row] = correlation;
  }
  size_t HostOp(uint32_t track, const std::string& name, const std::string& cat, int64_t s_us,
                int64_t e_us) {
    return t_.AddSlice(s_us * kUs, (e_us - s_us) * kUs, t_.Intern(name), t_.Intern(cat), track);
  }
  Trace& trace() { return t_; }
  Trace Build() {
    t_.Finalize();
    return std::move(t_);
  }

 private:
  Trace t_;
  uint32_t host_;
};

// Example A of docs/definitions.md §5.1: one rank, ProfilerStep#7 = [0, 100) µs.
inline Trace ExampleA() {
  TraceBuilder b;
  b.Step(7, 0, 100);
  b.Device(7, "Memset (Device)", "gpu_memset", 2 * kUs, 4 * kUs);
  b.Kernel(7, "sm90_xmma_gemm_bf16bf16_bf16f32", 5, 30);
  b.Kernel(7, "flash_fwd_kernel", 40, 60);
  b.Kernel(7, "elementwise_kernel", 70, 80);
  b.Kernel(20, "ncclDevKernel_AllGather_RING_LL", 25, 45);
  b.Kernel(20, "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL", 55, 65);
  size_t recv = b.Kernel(20, "ncclDevKernel_SendRecv", 85, 90);
  b.trace().collective[recv] = b.trace().Intern("recv");
  b.Device(9, "Memcpy DtoH (Device -> Pinned)", "gpu_memcpy", 62 * kUs, 72 * kUs);
  b.Device(9, "Memcpy DtoH (Device -> Pinned)", "gpu_memcpy", 92 * kUs, 95 * kUs);
  b.Device(7, "Stream Wait Event", "cuda_sync", 80 * kUs, 85 * kUs);
  return b.Build();
}

}  // namespace rlprof::analysis::testing

#endif  // RLPROF_SRC_ANALYSIS_MODEL_TEST_TRACES_H_
