// Cost of an NVTX range forwarded by rlprof's injection library (librlprof_nvtx.so) against
// rlprof's own range, measured in the same run, in the same open capture window, with the
// writer thread running (zstd + disk) for both. Target (docs/performance.md, "NVTX"): a
// forwarded push/pop <= 2x a native RLPROF_RANGE.
//
//   build/bench/nvtx_bench [--benchmark_filter=PushPop]
//
// The program uses NVTX as any application does (the real nvtx3 header): main() points
// NVTX_INJECTION64_PATH at the library before the first NVTX call. The program and the library
// both link librlprof.so: one runtime records both kinds of range.
#include <nvtx3/nvToolsExt.h>

#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

#include <benchmark/benchmark.h>

#include "rlprof/rlprof.hpp"

namespace rlprof::bench {
namespace {

std::map<std::string, double> g_ns;

int64_t ThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

class Timer {
 public:
  explicit Timer(benchmark::State& s) : s_(s), t0_(ThreadCpuNs()) {}
  void Finish(uint64_t n) {
    s_.counters["ns"] = benchmark::Counter(static_cast<double>(ThreadCpuNs() - t0_) / static_cast<double>(n),
                                           benchmark::Counter::kAvgThreads);
  }

 private:
  benchmark::State& s_;
  int64_t t0_;
};

nvtxDomainHandle_t g_domain;
nvtxStringHandle_t g_registered;

void BM_NativeRange(benchmark::State& state) {
  Timer t(state);
  uint64_t n = 0;
  for (auto _ : state) {
    RLPROF_RANGE("bench range");
    benchmark::DoNotOptimize(++n);
  }
  t.Finish(n);
}
BENCHMARK(BM_NativeRange);

void BM_NvtxPushPop(benchmark::State& state) {
  Timer t(state);
  uint64_t n = 0;
  for (auto _ : state) {
    nvtxRangePushA("bench range");
    nvtxRangePop();
    benchmark::DoNotOptimize(++n);
  }
  t.Finish(n);
}
BENCHMARK(BM_NvtxPushPop);

void BM_NvtxDomainPushPop(benchmark::State& state) {
  nvtxEventAttributes_t a = {};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = g_registered;
  Timer t(state);
  uint64_t n = 0;
  for (auto _ : state) {
    nvtxDomainRangePushEx(g_domain, &a);
    nvtxDomainRangePop(g_domain);
    benchmark::DoNotOptimize(++n);
  }
  t.Finish(n);
}
BENCHMARK(BM_NvtxDomainPushPop);

void BM_NativeMark(benchmark::State& state) {
  Timer t(state);
  uint64_t n = 0;
  for (auto _ : state) {
    Mark("bench mark");
    benchmark::DoNotOptimize(++n);
  }
  t.Finish(n);
}
BENCHMARK(BM_NativeMark);

void BM_NvtxMark(benchmark::State& state) {
  Timer t(state);
  uint64_t n = 0;
  for (auto _ : state) {
    nvtxMarkA("bench mark");
    benchmark::DoNotOptimize(++n);
  }
  t.Finish(n);
}
BENCHMARK(BM_NvtxMark);

void BM_NvtxPushPopOutsideWindow(benchmark::State& state) {
  DefaultSession()->StopCapture();
  Timer t(state);
  uint64_t n = 0;
  for (auto _ : state) {
    nvtxRangePushA("bench range");
    nvtxRangePop();
    benchmark::DoNotOptimize(++n);
  }
  t.Finish(n);
  DefaultSession()->StartCapture("bench");
}
BENCHMARK(BM_NvtxPushPopOutsideWindow);

class SummaryReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    benchmark::ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs)
      if (auto it = r.counters.find("ns"); it != r.counters.end()) g_ns[r.benchmark_name()] = it->second.value;
  }
};

}  // namespace
}  // namespace rlprof::bench

int main(int argc, char** argv) {
  using namespace rlprof;
  using namespace rlprof::bench;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  if (std::getenv("NVTX_INJECTION64_PATH") == nullptr) setenv("NVTX_INJECTION64_PATH", RLPROF_NVTX_LIBRARY, 1);
  const std::string dir = std::filesystem::temp_directory_path() / ("rlprof-nvtx-bench-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string config = dir + "/profile.yaml";
  std::FILE* f = std::fopen(config.c_str(), "w");
  if (f == nullptr) return 1;
  std::fprintf(f, "rlprof:\n  steps: [1]\n  save_path: %s/out\n  roles:\n    bench: {all_ranks: true}\n",
               dir.c_str());
  std::fclose(f);
  SessionOptions o;
  o.roles = std::vector<std::string>{"bench"};
  o.quiet = true;
  o.install_signal_handlers = false;
  std::string error;
  if (!InitFromConfig(config, {}, o, &error)) {
    std::fprintf(stderr, "nvtx_bench: %s\n", error.c_str());
    return 1;
  }
  g_domain = nvtxDomainCreateA("bench domain");  // the first NVTX call: loads the library
  g_registered = nvtxDomainRegisterStringA(g_domain, "bench range");
  DefaultSession()->StartCapture("bench");
  SummaryReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  DefaultSession()->StopCapture();
  Shutdown();
  std::filesystem::remove_all(dir);
  std::printf("\nNVTX forwarded through librlprof_nvtx.so vs rlprof's own markers (thread-CPU ns/op, same run)\n");
  auto ratio = [&](const char* a, const char* b, const char* what) {
    if (!g_ns.count(a) || !g_ns.count(b)) return;
    const double x = g_ns[a] / g_ns[b];
    std::printf("%-26s %8.2f ns vs %8.2f ns: %.2fx %s\n", what, g_ns[a], g_ns[b], x,
                x <= 2.0 ? "(target <= 2x: met)" : "(target <= 2x: NOT met)");
  };
  ratio("BM_NvtxPushPop", "BM_NativeRange", "push/pop vs native range");
  ratio("BM_NvtxDomainPushPop", "BM_NativeRange", "domain push/pop vs range");
  ratio("BM_NvtxMark", "BM_NativeMark", "mark vs native mark");
  if (g_ns.count("BM_NvtxPushPopOutsideWindow"))
    std::printf("%-26s %8.2f ns\n", "push/pop outside a window", g_ns["BM_NvtxPushPopOutsideWindow"]);
  return 0;
}
