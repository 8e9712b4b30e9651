// The CUDA profiler API source: with `tool: nsys`, rlprof calls cudaProfilerStart when a capture
// window opens and cudaProfilerStop when it closes, so an outer
// `nsys profile --capture-range=cudaProfilerApi` records exactly rlprof's windows (one nsys
// capture range per window; `rlprof plan` prints the matching --capture-range-end).
// libcudart is dlopen'ed in Configure (RLPROF_CUDART_LIBRARY, else libcudart.so[.13/.12/.11]
// — the one torch or the program already loaded is found first): nothing links CUDA. Without
// it every window is a counted no-op (manifest sources.cuda_profiler: status "off: …",
// skipped_windows), and the job goes on.
//
//   runtime::SourceRegistry::Get().Register(std::make_shared<CudaProfilerSource>());
//
// Thread-safety: the Source lifecycle's (Start/Stop on the training thread under the session
// lock, Counters on the writer thread); counters are atomics.
#ifndef RLPROF_SRC_SOURCES_CUDA_PROFILER_H_
#define RLPROF_SRC_SOURCES_CUDA_PROFILER_H_

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

#include "src/runtime/source.h"

namespace rlprof::sources {

// The libcudart the source uses: $RLPROF_CUDART_LIBRARY alone when set, else the first of
// libcudart.so, .so.13, .so.12, .so.11.0 already loaded in the process (torch's), else the
// first that loads. Null when none: `tried` lists what was tried. `library` is its name.
void* OpenCudart(const char* (*env)(const char*), std::string* library, std::string* tried);

// OpenCudart's library with its profiler entry points, and the status the source reports for
// them (`rlprof doctor` shows the same): "on: <library>", "off: libcudart not found (tried …)"
// or "off: <library> has no cudaProfilerStart/Stop".
struct CudartProfilerApi {
  void* handle = nullptr;
  int (*start)() = nullptr;  // both set, or both null
  int (*stop)() = nullptr;
  std::string library;
  std::string status;
};
CudartProfilerApi LoadCudartProfiler(const char* (*env)(const char*));

class CudaProfilerSource final : public runtime::Source {
 public:
  // `env`: getenv, or a test's.
  explicit CudaProfilerSource(const char* (*env)(const char*) = nullptr) : env_(env) {}
  std::string_view name() const override { return "cuda_profiler"; }
  bool Wanted(const config::ProcessPlan& p) const override { return p.enabled; }
  bool Configure(const runtime::SourceContext& ctx) override;
  void Start(uint32_t gen) override;
  void Stop(uint32_t gen) override;
  runtime::SourceCounters Counters(uint32_t gen) override;

 private:
  using Fn = int (*)();
  const char* Env(const char* k) const;
  const char* (*env_)(const char*);
  std::mutex mu_;  // guards status_, library_
  std::string status_ = "off";
  std::string library_;
  void* handle_ = nullptr;
  Fn start_ = nullptr;
  Fn stop_ = nullptr;
  bool running_ = false;  // between a successful start and its stop
  std::atomic<int64_t> starts_{0}, stops_{0}, skipped_{0}, errors_{0}, last_error_{0};
};

}  // namespace rlprof::sources

#endif  // RLPROF_SRC_SOURCES_CUDA_PROFILER_H_
