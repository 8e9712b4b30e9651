// Breakdown throughput of the analysis engine (events/s) against a same-run baseline:
// std::sort of the same 2n interval boundaries — the unavoidable core of any sweep — so the
// ratio says how much the partition costs beyond sorting its input.
//
//   analysis_bench                       # 1 Mi device events, 200 steps, 4 streams
//   RLPROF_ANALYSIS_BENCH_EVENTS=4096 analysis_bench --benchmark_min_time=0.001   # CI smoke
//
// Benchmarks: sort baseline; Timeline::Build + one histogram per step (the partition);
// AnalyseTrace end to end (classification, windows, partition, HTA / TraceLens views,
// operator statistics, kernel rows). Afterwards main() prints the events/s ratios.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "src/analysis/passes/analyse.h"
#include "src/analysis/passes/partition.h"
#include "src/analysis/model/test_traces.h"

namespace rlprof::analysis {
namespace {

const size_t kEvents = [] {
  const char* v = std::getenv("RLPROF_ANALYSIS_BENCH_EVENTS");
  long n = v != nullptr ? std::atol(v) : 0;
  return n > 0 ? static_cast<size_t>(n) : size_t{1} << 20;
}();
constexpr int kSteps = 200;

std::map<std::string, double>& Rates() {
  static std::map<std::string, double> rates;
  return rates;
}

// A synthetic rank: kSteps ProfilerSteps, kernels on 4 streams (compute, compute, NCCL,
// memcpy), each launched by a host call (correlation), random gaps and durations.
const Trace& Sample() {
  static const Trace t = [] {
    testing::TraceBuilder b;
    std::mt19937_64 rng(42);
    std::uniform_int_distribution<int64_t> gap(0, 4000), dur(500, 20000);
    const size_t per_stream = kEvents / 4;
    int64_t span = 0;
    const char* names[4] = {"sm90_xmma_gemm", "flash_fwd_kernel", "ncclDevKernel_AllReduce",
                            "Memcpy DtoD (Device -> Device)"};
    const char* cats[4] = {"kernel", "kernel", "kernel", "gpu_memcpy"};
    int64_t corr = 0;
    for (int s = 0; s < 4; ++s) {
      int64_t ts = 0;
      for (size_t i = 0; i < per_stream; ++i) {
        ts += gap(rng);
        const int64_t d = dur(rng);
        b.Device(s + 7, names[s], cats[s], ts, ts + d, corr);
        size_t row = b.trace().AddSlice(std::max<int64_t>(0, ts - 3000), 1000,
                                        b.trace().Intern("cudaLaunchKernel"),
                                        b.trace().Intern("cuda_runtime"), b.host());
        b.trace().correlation[row] = corr++;
        ts += d;
      }
      span = std::max(span, ts);
    }
    const int64_t step_len = span / kSteps + 1;
    for (int k = 0; k < kSteps; ++k) {
      const int64_t s = k * step_len;
      b.trace().AddSlice(s, step_len, b.trace().Intern("ProfilerStep#" + std::to_string(k)),
                         b.trace().Intern("user_annotation"), b.host());
      b.trace().steps.push_back({k, s, s + step_len, b.host(), "", "ProfilerStep#" + std::to_string(k)});
    }
    return b.Build();
  }();
  return t;
}

const std::vector<WorkInterval>& Work() {
  static const std::vector<WorkInterval> w = [] {
    Classification c = Classifier::Default().Classify(Sample(), nullptr);
    bool cpu_only = false;
    return CollectWork(Sample(), c, &cpu_only, nullptr);
  }();
  return w;
}

using Clock = std::chrono::steady_clock;

void Finish(benchmark::State& state, const char* key, size_t events, Clock::time_point t0) {
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * events));
  Rates()[key] = s > 0 ? static_cast<double>(state.iterations() * events) / s : 0;
}

void BM_SortBoundariesBaseline(benchmark::State& state) {
  const auto& work = Work();
  std::vector<int64_t> edges;
  auto t0 = Clock::now();
  for (auto _ : state) {
    edges.clear();
    for (const auto& w : work) {
      edges.push_back(w.start);
      edges.push_back(w.end);
    }
    std::sort(edges.begin(), edges.end());
    benchmark::DoNotOptimize(edges.data());
  }
  Finish(state, "sort_baseline", work.size(), t0);
}
BENCHMARK(BM_SortBoundariesBaseline)->Unit(benchmark::kMillisecond);

void BM_Partition(benchmark::State& state) {
  const auto& work = Work();
  const auto& steps = Sample().steps;
  auto t0 = Clock::now();
  for (auto _ : state) {
    Timeline tl = Timeline::Build(work);
    int64_t idle = 0;
    for (const auto& s : steps) idle += tl.Histogram(s.start_ns, s.end_ns).atoms().idle;
    benchmark::DoNotOptimize(idle);
  }
  Finish(state, "partition", work.size(), t0);
}
BENCHMARK(BM_Partition)->Unit(benchmark::kMillisecond);

void BM_AnalyseTrace(benchmark::State& state) {
  const Trace& t = Sample();
  Classifier cls = Classifier::Default();
  auto t0 = Clock::now();
  for (auto _ : state) {
    TraceAnalysis a = AnalyseTrace(t, cls, {});
    benchmark::DoNotOptimize(a.steps.data());
  }
  Finish(state, "analyse_trace", t.size(), t0);
}
BENCHMARK(BM_AnalyseTrace)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace rlprof::analysis

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  auto& r = rlprof::analysis::Rates();
  std::printf("\nBreakdown throughput (same run, %zu device events + as many launches, %d steps):\n",
              rlprof::analysis::kEvents, rlprof::analysis::kSteps);
  auto line = [&](const char* a, const char* b) {
    if (r.count(a) && r.count(b) && r[b] > 0)
      std::printf("%-14s %8.2f M events/s = %.3f x %s (%.2f M events/s)\n", a, r[a] / 1e6, r[a] / r[b],
                  b, r[b] / 1e6);
  };
  line("partition", "sort_baseline");
  line("analyse_trace", "sort_baseline");
  return 0;
}
