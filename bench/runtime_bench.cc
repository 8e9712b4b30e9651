// Cost of rlprof's markers, against plain clock reads measured in the same run.
//
//   build-*/bench/runtime_bench [--benchmark_filter=Range]
//
// Every benchmark reports ns/op of its own loop (counter "ns") and the ratio to two rdtsc
// reads ("x_2rdtsc"), the floor of any range that stores a begin and an end time. Targets
// (docs/performance.md, "Runtime"): enabled range <= 1.5x two clock reads; disabled <= 1 ns.
// Enabled benchmarks record into the real per-thread buffers; every 2^15 iterations the
// first thread rotates the window (untimed) and recycles the chunks, so buffers never fill
// and no disk I/O competes with the measurement. BM_RangeWithWriter keeps the writer thread
// running (zstd + disk) for the end-to-end figure.
#include <time.h>
#include <x86intrin.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>

#include <benchmark/benchmark.h>

#include "rlprof/rlprof.hpp"
#include "src/runtime/clock.h"
#include "src/runtime/thread_buffer.h"

#ifdef RLPROF_BENCH_TRACY  // cmake -DRLPROF_TRACY_DIR=<tracy>/public (bench/CMakeLists.txt)
#include <client/TracyProfiler.hpp>
#include <tracy/Tracy.hpp>
namespace tracy {
// Tracy's event queue (exported by its client; what its server drains over the socket).
TRACY_API moodycamel::ConcurrentQueue<QueueItem>& GetQueue();
}  // namespace tracy
#endif

namespace rlprof::bench {

void RangeCompiledOutLoop(benchmark::State& state, uint64_t* iterations);

namespace {

using runtime::Recorder;
constexpr int64_t kRotateEvery = 1 << 15;

std::map<std::string, double> g_ns;  // benchmark name → ns/op (thread average)
double g_two_rdtsc_ns = 0;
thread_local int64_t tls_paused_ns = 0;  // untimed window rotations of this thread

int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

// CPU time of the calling thread: what one operation costs the thread that runs it, without
// the time it spent descheduled (this machine has fewer cores than the 8-thread runs).
int64_t ThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

// Measures the loop's thread-CPU time per iteration (ns, averaged over threads) and
// publishes it as the counters "ns" and "x_2rdtsc".
class Timer {
 public:
  Timer(benchmark::State& s, const char* name) : s_(s), t0_(ThreadCpuNs()) { tls_paused_ns = 0; }
  void Finish(uint64_t iterations) {
    const double ns = static_cast<double>(ThreadCpuNs() - t0_ - tls_paused_ns) /
                      static_cast<double>(iterations);
    s_.counters["ns"] = benchmark::Counter(ns, benchmark::Counter::kAvgThreads);
    if (g_two_rdtsc_ns > 0)
      s_.counters["x_2rdtsc"] =
          benchmark::Counter(ns / g_two_rdtsc_ns, benchmark::Counter::kAvgThreads);
  }

 private:
  benchmark::State& s_;
  int64_t t0_;
};

// A recorder session with an open window and no writer: the pure hot path.
struct RecorderFixture {
  static void Setup(const benchmark::State&) {
    runtime::CalibrateClock(true, 10);
    runtime::RecorderConfig rc;
    rc.capacity = 1 << 17;
    rc.spare_chunks = 16;
    Recorder::Get().BeginSession(rc);
    gen = Recorder::Get().OpenWindow();
  }
  static void Teardown(const benchmark::State&) {
    Recorder::Get().CloseWindow(gen);
    Recycle();
    Recorder::Get().EndSession();
  }
  static void Recycle() {
    for (runtime::Chunk* c = Recorder::Get().TakeHandoffs(); c != nullptr;) {
      runtime::Chunk* next = c->next;
      Recorder::Get().Recycle(c);
      c = next;
    }
  }
  // Untimed for the calling thread: switches straight to a new window (never a gap with no
  // window, which would let the other threads run the cheap disabled path), so every thread
  // moves to a fresh pre-faulted chunk at its next record; the chunks handed off at the
  // previous rotation go back to the pool.
  static void Rotate(benchmark::State& state) {
    state.PauseTiming();
    const int64_t t0 = ThreadCpuNs();
    Recycle();
    Recorder::Get().RefillPool();
    gen = Recorder::Get().OpenWindow();
    tls_paused_ns += ThreadCpuNs() - t0;
    state.ResumeTiming();
  }
  static inline uint32_t gen = 0;
};

void BM_TwoRdtsc(benchmark::State& state) {
  Timer t(state, "BM_TwoRdtsc");
  uint64_t n = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(__rdtsc());
    benchmark::DoNotOptimize(__rdtsc());
    ++n;
  }
  t.Finish(n);
}
BENCHMARK(BM_TwoRdtsc)->Threads(1)->Threads(2)->Threads(8)->UseRealTime();

// The naive range a user could write by hand (issue 31's anchor): two rdtsc reads and one
// 32-byte record stored into a thread-local ring, with no window check, no name lookup and no
// buffer handoff. An enabled RLPROF_RANGE is measured against it in the same run.
void BM_NaiveRange(benchmark::State& state) {
  Timer t(state, "BM_NaiveRange");
  static thread_local format::Event ring[4096];
  uint32_t i = 0;
  uint64_t n = 0;
  for (auto _ : state) {
    const uint64_t t0 = __rdtsc();
    const uint64_t t1 = __rdtsc();
    format::Event& e = ring[i];
    e.ts_ns = static_cast<int64_t>(t0);
    e.payload = static_cast<int64_t>(t1 - t0);
    e.name = 1;
    e.track = 1;
    e.kind = format::EventKind::kComplete;
    e.category = format::Category::kUser;
    e.arg0 = e.arg1 = 0;
    i = (i + 1) & 4095;
    benchmark::DoNotOptimize(&e);
    ++n;
  }
  benchmark::ClobberMemory();
  t.Finish(n);
}
BENCHMARK(BM_NaiveRange);

void BM_TwoClockGettime(benchmark::State& state) {
  Timer t(state, "BM_TwoClockGettime");
  uint64_t n = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(NowNs());
    benchmark::DoNotOptimize(NowNs());
    ++n;
  }
  t.Finish(n);
}
BENCHMARK(BM_TwoClockGettime);

void BM_RangeCompiledOut(benchmark::State& state) {
  Timer t(state, "BM_RangeCompiledOut");
  uint64_t n = 0;
  RangeCompiledOutLoop(state, &n);
  t.Finish(n);
}
BENCHMARK(BM_RangeCompiledOut);

// No session at all: the marker's branch on the global flag.
void BM_RangeRuntimeOff(benchmark::State& state) {
  Timer t(state, "BM_RangeRuntimeOff");
  uint64_t n = 0;
  for (auto _ : state) {
    RLPROF_RANGE("bench range");
    benchmark::DoNotOptimize(++n);
  }
  t.Finish(n);
}
BENCHMARK(BM_RangeRuntimeOff);

// A live session, but between windows.
void BM_RangeOutsideWindow(benchmark::State& state) {
  if (state.thread_index() == 0) {
    Recorder::Get().BeginSession({.capacity = 1024});
  }
  Timer t(state, "BM_RangeOutsideWindow");
  uint64_t n = 0;
  for (auto _ : state) {
    RLPROF_RANGE("bench range");
    benchmark::DoNotOptimize(++n);
  }
  t.Finish(n);
  if (state.thread_index() == 0) Recorder::Get().EndSession();
}
BENCHMARK(BM_RangeOutsideWindow);

void BM_RangeEnabled(benchmark::State& state) {
  Timer t(state, "BM_RangeEnabled");
  uint64_t n = 0;
  for (auto _ : state) {
    { RLPROF_RANGE("bench range"); }
    if ((++n & (kRotateEvery - 1)) == 0 && state.thread_index() == 0) RecorderFixture::Rotate(state);
  }
  t.Finish(n);
}
BENCHMARK(BM_RangeEnabled)
    ->Setup(RecorderFixture::Setup)
    ->Teardown(RecorderFixture::Teardown)
    ->Threads(1)
    ->Threads(2)
    ->Threads(8)
    ->UseRealTime();

#ifdef RLPROF_BENCH_TRACY
// Tracy's zone, profiling on, in the same process: ZoneScopedN's begin and end records (a
// TSC read and a queue store each). No server is connected, so Tracy's worker drains nothing;
// every 2^15 zones the queue is drained here, untimed, as a connected server would, so its
// blocks are reused warm (Tracy's best case, as rlprof's pre-faulted chunks are its own).
void BM_TracyZone(benchmark::State& state) {
  Timer t(state, "BM_TracyZone");
  static tracy::moodycamel::ConsumerToken token(tracy::GetQueue());
  auto drain = [] {
    while (tracy::GetQueue().try_dequeue_bulk_single(
               token, [](const uint64_t&) {}, [](tracy::QueueItem*, size_t) {}) > 0) {
    }
  };
  uint64_t n = 0;
  for (auto _ : state) {
    { ZoneScopedN("bench range"); }
    if ((++n & (kRotateEvery - 1)) == 0) {
      state.PauseTiming();
      const int64_t t0 = ThreadCpuNs();
      drain();
      tls_paused_ns += ThreadCpuNs() - t0;
      state.ResumeTiming();
    }
  }
  t.Finish(n);
  drain();  // the next run (or repetition) starts from an empty queue
}
BENCHMARK(BM_TracyZone);
#endif

void BM_RangeStartEnd(benchmark::State& state) {
  Timer t(state, "BM_RangeStartEnd");
  uint64_t n = 0;
  for (auto _ : state) {
    RangeEnd(RangeStart("bench async"));
    if ((++n & (kRotateEvery - 1)) == 0 && state.thread_index() == 0) RecorderFixture::Rotate(state);
  }
  t.Finish(n);
}
BENCHMARK(BM_RangeStartEnd)->Setup(RecorderFixture::Setup)->Teardown(RecorderFixture::Teardown);

void BM_Mark(benchmark::State& state) {
  Timer t(state, "BM_Mark");
  uint64_t n = 0;
  for (auto _ : state) {
    Mark("bench mark");
    if ((++n & (kRotateEvery - 1)) == 0 && state.thread_index() == 0) RecorderFixture::Rotate(state);
  }
  t.Finish(n);
}
BENCHMARK(BM_Mark)
    ->Setup(RecorderFixture::Setup)
    ->Teardown(RecorderFixture::Teardown)
    ->Threads(1)
    ->Threads(8)
    ->UseRealTime();

void BM_Counter(benchmark::State& state) {
  Timer t(state, "BM_Counter");
  uint64_t n = 0;
  double v = 0;
  for (auto _ : state) {
    Counter("bench counter", v += 1.0);
    if ((++n & (kRotateEvery - 1)) == 0 && state.thread_index() == 0) RecorderFixture::Rotate(state);
  }
  t.Finish(n);
}
BENCHMARK(BM_Counter)->Setup(RecorderFixture::Setup)->Teardown(RecorderFixture::Teardown);

// The full runtime: a Session with its writer thread compressing and writing to disk.
void BM_RangeWithWriter(benchmark::State& state) {
  const std::string dir = std::filesystem::temp_directory_path() / "rlprof-bench";
  SessionOptions o;
  o.roles = std::vector<std::string>{"bench"};
  o.quiet = true;
  o.install_signal_handlers = false;
  auto s = Session::CreateFromText("rlprof:\n  steps: [1]\n  save_path: " + dir +
                                   "\n  roles:\n    bench: {all_ranks: true}\n", {}, o);
  if (s == nullptr) {
    state.SkipWithError("cannot open a session");
    return;
  }
  s->StartCapture("bench");
  Timer t(state, "BM_RangeWithWriter");
  uint64_t n = 0;
  for (auto _ : state) {
    RLPROF_RANGE("bench range");
    benchmark::DoNotOptimize(++n);
  }
  t.Finish(n);
  s->Shutdown();
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_RangeWithWriter);

double MeasureTwoRdtscNs() {
  double best = 1e9;
  for (int round = 0; round < 5; ++round) {
    const int64_t t0 = ThreadCpuNs();
    constexpr int kN = 2000000;
    for (int i = 0; i < kN; ++i) {
      benchmark::DoNotOptimize(__rdtsc());
      benchmark::DoNotOptimize(__rdtsc());
    }
    best = std::min(best, static_cast<double>(ThreadCpuNs() - t0) / kN);
  }
  return best;
}

// The console table plus a summary of the final run of each benchmark.
class SummaryReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    benchmark::ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      auto it = r.counters.find("ns");
      if (it != r.counters.end()) g_ns[r.benchmark_name()] = it->second.value;
    }
  }
};

// The thread-count suffix of a benchmark name ("" for single-threaded registrations).
std::string ThreadsOf(const std::string& name) {
  const size_t p = name.find("/threads:");
  return p == std::string::npos ? "1" : name.substr(p + 9);
}

void PrintSummary() {
  std::map<std::string, double> baseline;  // threads → two rdtsc reads, same thread count
  for (const auto& [name, ns] : g_ns)
    if (name.rfind("BM_TwoRdtsc", 0) == 0) baseline[ThreadsOf(name)] = ns;
  std::printf("\nrlprof runtime overhead: thread-CPU ns per operation, and the ratio to two rdtsc\n"
              "reads measured in this run with the same number of threads\n");
  std::printf("%-40s %10s %10s\n", "benchmark", "ns/op", "x 2rdtsc");
  for (const auto& [name, ns] : g_ns) {
    const double base = baseline.count(ThreadsOf(name)) ? baseline[ThreadsOf(name)] : g_two_rdtsc_ns;
    std::printf("%-40s %10.2f %10.2f\n", name.c_str(), ns, ns / base);
  }
  for (const char* threads : {"1", "2", "8"}) {
    const std::string k = std::string("BM_RangeEnabled/real_time/threads:") + threads;
    if (!g_ns.count(k) || !baseline.count(threads)) continue;
    const double x = g_ns[k] / baseline[threads];
    std::printf("target: enabled range <= 1.5x two clock reads (%s thread%s): %.2fx %s\n", threads,
                threads[0] == '1' ? "" : "s", x, x <= 1.5 ? "(met)" : "(NOT met)");
  }
  if (g_ns.count("BM_NaiveRange") && g_ns.count("BM_RangeEnabled/real_time/threads:1")) {
    const double x = g_ns["BM_RangeEnabled/real_time/threads:1"] / g_ns["BM_NaiveRange"];
    std::printf("target: enabled range <= 1.1x the naive range (1 thread): %.2fx %s\n", x,
                x <= 1.1 ? "(met)" : "(NOT met)");
  }
  if (g_ns.count("BM_TracyZone") && g_ns.count("BM_RangeEnabled/real_time/threads:1")) {
    const double x = g_ns["BM_RangeEnabled/real_time/threads:1"] / g_ns["BM_TracyZone"];
    std::printf("target: enabled range <= Tracy's zone (1 thread): %.2fx %s\n", x,
                x <= 1.0 ? "(met)" : "(NOT met)");
  }
  for (const char* k : {"BM_RangeCompiledOut", "BM_RangeRuntimeOff", "BM_RangeOutsideWindow"})
    if (g_ns.count(k))
      std::printf("target: %s <= 1 ns: %.2f ns %s\n", k + 3, g_ns[k], g_ns[k] <= 1.0 ? "(met)" : "(NOT met)");
}

}  // namespace
}  // namespace rlprof::bench

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  rlprof::bench::g_two_rdtsc_ns = rlprof::bench::MeasureTwoRdtscNs();
  rlprof::bench::SummaryReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  rlprof::bench::PrintSummary();
  return 0;
}
