// Throughput of the format stage: the events.rlp writer (what the runtime's background writer
// pays per event) against a memcpy and a plain write() of the same bytes measured in the same
// run, the reader, and the exporters (Chrome JSON, Perfetto, SQLite).
//
//   build/bench/format_bench                       # full sizes
//   build/bench/format_bench --benchmark_filter=Raw
//   RLPROF_FORMAT_BENCH_EVENTS=4096 build/bench/format_bench   # quick
//
// After the benchmarks it prints the ratios that docs/performance.md records.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "src/format/chrome_json.h"
#include "src/format/perfetto_trace.h"
#include "src/format/raw.h"
#include "src/format/sample_capture.h"
#include "src/format/sqlite_export.h"

namespace rlprof::format {
namespace {

// 262144 events = 8 MiB of records; RLPROF_FORMAT_BENCH_EVENTS makes the CI smoke run tiny.
const size_t kEvents = [] {
  const char* v = std::getenv("RLPROF_FORMAT_BENCH_EVENTS");
  long n = v != nullptr ? std::atol(v) : 0;
  return n > 0 ? static_cast<size_t>(n) : size_t{1} << 18;
}();

// Bytes per second of each benchmark's last run, for the ratios printed by main().
std::map<std::string, double>& Rates() {
  static std::map<std::string, double> rates;
  return rates;
}

const Capture& Sample() {
  static const Capture c = GeneratedCapture(kEvents);
  return c;
}

std::string TempPath(const char* name) {
  return (std::filesystem::temp_directory_path() /
          (std::string("rlprof_format_bench_") + std::to_string(::getpid()) + "_" + name))
      .string();
}

void Report(benchmark::State& state, const char* key, size_t bytes_per_iter, double seconds) {
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kEvents));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes_per_iter));
  Rates()[key] = seconds > 0 ? static_cast<double>(state.iterations() * bytes_per_iter) / seconds : 0;
}

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

void BM_MemcpyBaseline(benchmark::State& state) {
  const auto& ev = Sample().raw.events;
  size_t bytes = ev.size() * sizeof(Event);
  std::vector<char> dst(bytes);
  auto t = Clock::now();
  for (auto _ : state) {
    std::memcpy(dst.data(), ev.data(), bytes);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  Report(state, "memcpy", bytes, Since(t));
}
BENCHMARK(BM_MemcpyBaseline)->Unit(benchmark::kMillisecond);

void BM_WriteBaseline(benchmark::State& state) {  // the same bytes, uncompressed, to a file
  const auto& ev = Sample().raw.events;
  size_t bytes = ev.size() * sizeof(Event);
  std::string path = TempPath("plain.bin");
  auto t = Clock::now();
  for (auto _ : state) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const char* p = reinterpret_cast<const char*>(ev.data());
    for (size_t off = 0; off < bytes;) {
      ssize_t n = ::write(fd, p + off, std::min<size_t>(bytes - off, 1 << 20));
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    ::close(fd);
  }
  Report(state, "write", bytes, Since(t));
  std::filesystem::remove(path);
}
BENCHMARK(BM_WriteBaseline)->Unit(benchmark::kMillisecond);

void BM_RawWriter(benchmark::State& state) {
  const Capture& c = Sample();
  size_t bytes = c.raw.events.size() * sizeof(Event);
  std::string path = TempPath("events.rlp");
  std::vector<Event> batch;
  uint64_t on_disk = 0;
  auto t = Clock::now();
  for (auto _ : state) {
    auto w = RawWriter::Create(path, c.raw.info);
    if (!w.ok()) {
      state.SkipWithError(w.status().message().c_str());
      return;
    }
    // The runtime hands over per-thread buffers: batches of 4096 events.
    for (size_t i = 0; i < c.raw.events.size(); i += 4096) {
      size_t n = std::min<size_t>(4096, c.raw.events.size() - i);
      (void)(*w)->AddEvents({c.raw.events.data() + i, n});
    }
    (void)(*w)->Close();
    on_disk = (*w)->bytes_written();
  }
  Report(state, "raw_writer", bytes, Since(t));
  state.counters["ratio"] = static_cast<double>(bytes) / static_cast<double>(on_disk);
  std::filesystem::remove(path);
}
BENCHMARK(BM_RawWriter)->Unit(benchmark::kMillisecond);

void BM_ReadRaw(benchmark::State& state) {
  const Capture& c = Sample();
  std::string path = TempPath("read.rlp");
  {
    auto w = RawWriter::Create(path, c.raw.info);
    (void)(*w)->AddEvents(c.raw.events);
    (void)(*w)->Close();
  }
  size_t bytes = c.raw.events.size() * sizeof(Event);
  auto t = Clock::now();
  for (auto _ : state) {
    auto r = ReadRaw(path);
    benchmark::DoNotOptimize(r.ok());
  }
  Report(state, "read_raw", bytes, Since(t));
  std::filesystem::remove(path);
}
BENCHMARK(BM_ReadRaw)->Unit(benchmark::kMillisecond);

void BM_ChromeJson(benchmark::State& state) {  // in memory: the formatting cost alone
  std::vector<Capture> caps = {Sample()};
  size_t out = 0;
  auto t = Clock::now();
  for (auto _ : state) {
    StringSink sink;
    sink.data.reserve(64 << 20);
    WriteChromeJson(caps, &sink);
    out = sink.data.size();
  }
  Report(state, "chrome_json", out, Since(t));
  state.counters["json_bytes_per_event"] = static_cast<double>(out) / kEvents;
}
BENCHMARK(BM_ChromeJson)->Unit(benchmark::kMillisecond);

void BM_ChromeJsonGzFile(benchmark::State& state) {
  std::vector<Capture> caps = {Sample()};
  std::string path = TempPath("t.json.gz");
  uint64_t out = 0;
  auto t = Clock::now();
  for (auto _ : state) out = WriteChromeJsonFile(caps, path)->bytes;
  Report(state, "chrome_json_gz", kEvents * sizeof(Event), Since(t));
  state.counters["gz_bytes_per_event"] = static_cast<double>(out) / kEvents;
  std::filesystem::remove(path);
}
BENCHMARK(BM_ChromeJsonGzFile)->Unit(benchmark::kMillisecond);

void BM_Perfetto(benchmark::State& state) {
  std::vector<Capture> caps = {Sample()};
  size_t out = 0;
  auto t = Clock::now();
  for (auto _ : state) {
    StringSink sink;
    WritePerfetto(caps, &sink);
    out = sink.data.size();
  }
  Report(state, "pftrace", out, Since(t));
  state.counters["pftrace_bytes_per_event"] = static_cast<double>(out) / kEvents;
}
BENCHMARK(BM_Perfetto)->Unit(benchmark::kMillisecond);

void BM_Sqlite(benchmark::State& state) {
  std::vector<Capture> caps = {Sample()};
  std::string path = TempPath("t.db");
  uint64_t out = 0;
  auto t = Clock::now();
  for (auto _ : state) out = WriteSqliteFile(caps, path)->bytes;
  Report(state, "sqlite", kEvents * sizeof(Event), Since(t));
  state.counters["db_bytes_per_event"] = static_cast<double>(out) / kEvents;
  std::filesystem::remove(path);
}
BENCHMARK(BM_Sqlite)->Unit(benchmark::kMillisecond)->Iterations(2);

}  // namespace
}  // namespace rlprof::format

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  auto& r = rlprof::format::Rates();
  auto ratio = [&](const char* a, const char* b) {
    if (r.count(a) && r.count(b) && r[b] > 0) {
      std::printf("%-16s %8.1f MB/s  = %.3f x %s (%.1f MB/s)\n", a, r[a] / 1e6, r[a] / r[b], b,
                  r[b] / 1e6);
    }
  };
  std::printf("\nThroughput over the 32-byte event records (same run):\n");
  ratio("raw_writer", "memcpy");
  ratio("raw_writer", "write");
  ratio("read_raw", "memcpy");
  ratio("chrome_json_gz", "raw_writer");
  ratio("sqlite", "raw_writer");
  return 0;
}
