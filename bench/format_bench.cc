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

#include <algorithm>
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

// An operator-like stream, as the torch hook records one thread: operators in the order they
// end (each parent after its children, up to 3 levels), gaps and durations jittered to the ns
// (leaves from 0.5 µs to 0.3 ms), sequence numbers that grow (a third of the operators without
// one: UINT32_MAX), shape string ids, and an allocated-bytes counter sample every 16 operators.
// The generated capture above is far more regular than real captures; this is the stream the
// columnar encoding is measured on. Deterministic.
std::vector<Event> OperatorLikeEvents(size_t n) {
  uint64_t s = 0x9E3779B97F4A7C15ull;
  auto rnd = [&](uint64_t m) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s % m;
  };
  std::vector<Event> ev;
  ev.reserve(n + 64);
  int64_t t = 1'700'000'000'000;
  uint32_t seq = 1000;
  double allocated = 1 << 30;
  auto op = [&](auto&& self, int depth) -> void {
    const int64_t begin = t;
    t += 150 + static_cast<int64_t>(rnd(400));
    const uint64_t children = depth < 2 ? rnd(4) : 0;
    for (uint64_t c = 0; c < children; ++c) {
      self(self, depth + 1);
      t += 80 + static_cast<int64_t>(rnd(300));
    }
    if (children == 0) t += 500 + static_cast<int64_t>(rnd(uint64_t{1} << (6 + rnd(13))));
    Event e{};
    e.ts_ns = begin;
    e.payload = t - begin;
    e.name = 10 + static_cast<uint32_t>(rnd(60));
    e.track = 1;
    e.kind = EventKind::kComplete;
    e.category = Category::kOperator;
    e.arg0 = rnd(3) == 0 ? UINT32_MAX : seq++;
    e.arg1 = 200 + static_cast<uint32_t>(rnd(30));
    ev.push_back(e);
    t += 40 + static_cast<int64_t>(rnd(120));
  };
  while (ev.size() < n) {
    op(op, 0);
    if (rnd(16) == 0) {
      allocated += static_cast<double>(rnd(1 << 20)) * 512 - (1 << 28);
      Event c{};
      c.ts_ns = t;
      c.track = 3;
      c.name = 7;
      c.kind = EventKind::kCounter;
      c.category = Category::kMemory;
      c.set_counter_value(allocated);
      ev.push_back(c);
    }
    t += 300 + static_cast<int64_t>(rnd(3000));
  }
  ev.resize(n);
  return ev;
}

const std::vector<Event>& OperatorStream() {
  static const std::vector<Event> ev = OperatorLikeEvents(kEvents);
  return ev;
}

// Bytes per event on disk of each encoding and stream, for main().
std::map<std::string, double>& BytesPerEvent() {
  static std::map<std::string, double> b;
  return b;
}

std::string EncodingName(RawEventEncoding e) {
  return e == RawEventEncoding::kColumnar ? "columnar" : "records";
}

// The runtime hands over per-thread buffers: batches of 4096 events. Returns bytes on disk.
uint64_t WriteEvents(const std::string& path, const RawHeaderInfo& info, const std::vector<Event>& ev,
                     RawEventEncoding encoding) {
  auto w = RawWriter::Create(path, info, 1 << 20, 1, encoding);
  if (!w.ok()) return 0;
  for (size_t i = 0; i < ev.size(); i += 4096) {
    (void)(*w)->AddEvents({ev.data() + i, std::min<size_t>(4096, ev.size() - i)});
  }
  (void)(*w)->Close();
  return (*w)->bytes_written();
}

// `ops`: the operator-like stream, else the generated capture's events.
void BM_RawWriter(benchmark::State& state, RawEventEncoding encoding, bool ops) {
  const auto& ev = ops ? OperatorStream() : Sample().raw.events;
  size_t bytes = ev.size() * sizeof(Event);
  std::string path = TempPath("events.rlp");
  uint64_t on_disk = 0;
  auto t = Clock::now();
  for (auto _ : state) on_disk = WriteEvents(path, Sample().raw.info, ev, encoding);
  const std::string key = std::string(ops ? "raw_writer_ops_" : "raw_writer_") + EncodingName(encoding);
  Report(state, encoding == RawEventEncoding::kColumnar && !ops ? "raw_writer" : key.c_str(), bytes, Since(t));
  state.counters["ratio"] = static_cast<double>(bytes) / static_cast<double>(on_disk);
  state.counters["bytes_per_event"] = static_cast<double>(on_disk) / static_cast<double>(ev.size());
  BytesPerEvent()[key] = static_cast<double>(on_disk) / static_cast<double>(ev.size());
  std::filesystem::remove(path);
}
BENCHMARK_CAPTURE(BM_RawWriter, columnar, RawEventEncoding::kColumnar, false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_RawWriter, records, RawEventEncoding::kRecords, false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_RawWriter, ops_columnar, RawEventEncoding::kColumnar, true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_RawWriter, ops_records, RawEventEncoding::kRecords, true)->Unit(benchmark::kMillisecond);

void BM_ReadRaw(benchmark::State& state, RawEventEncoding encoding, bool ops) {
  const auto& ev = ops ? OperatorStream() : Sample().raw.events;
  std::string path = TempPath("read.rlp");
  WriteEvents(path, Sample().raw.info, ev, encoding);
  size_t bytes = ev.size() * sizeof(Event);
  auto t = Clock::now();
  for (auto _ : state) {
    auto r = ReadRaw(path);
    benchmark::DoNotOptimize(r.ok());
  }
  const std::string key = std::string(ops ? "read_raw_ops_" : "read_raw_") + EncodingName(encoding);
  Report(state, encoding == RawEventEncoding::kColumnar && !ops ? "read_raw" : key.c_str(), bytes, Since(t));
  std::filesystem::remove(path);
}
BENCHMARK_CAPTURE(BM_ReadRaw, columnar, RawEventEncoding::kColumnar, false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ReadRaw, records, RawEventEncoding::kRecords, false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ReadRaw, ops_columnar, RawEventEncoding::kColumnar, true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ReadRaw, ops_records, RawEventEncoding::kRecords, true)->Unit(benchmark::kMillisecond);

// RLPROF_FORMAT_BENCH_CAPTURE=a/events.rlp[:b/events.rlp…]: real captures written again with
// each encoding; their bytes per event (events chunks, strings and tracks included).
void PrintCaptureSizes() {
  const char* v = std::getenv("RLPROF_FORMAT_BENCH_CAPTURE");
  if (v == nullptr || *v == '\0') return;
  std::string list = v;
  uint64_t events = 0, on_disk[2] = {0, 0};
  for (size_t p = 0; p <= list.size();) {
    size_t q = std::min(list.find(':', p), list.size());
    const std::string file = list.substr(p, q - p);
    p = q + 1;
    if (file.empty()) continue;
    auto cap = ReadRaw(file);
    if (!cap.ok()) {
      std::printf("%s: %s\n", file.c_str(), cap.status().ToString().c_str());
      continue;
    }
    std::vector<StringEntry> strings;
    for (size_t id = 1; id < cap->strings.size(); ++id) {
      if (!cap->strings[id].empty()) strings.push_back({static_cast<uint32_t>(id), cap->strings[id]});
    }
    for (int e = 0; e < 2; ++e) {
      const std::string path = TempPath("capture.rlp");
      auto w = RawWriter::Create(path, cap->info, 1 << 20, 1, e == 0 ? RawEventEncoding::kRecords : RawEventEncoding::kColumnar);
      if (!w.ok()) continue;
      (void)(*w)->AddStrings(strings);
      (void)(*w)->AddTracks(cap->tracks);
      (void)(*w)->AddEvents(cap->events);
      (void)(*w)->Close();
      on_disk[e] += (*w)->bytes_written();
      std::filesystem::remove(path);
    }
    events += cap->events.size();
  }
  if (events == 0) return;
  std::printf("real captures (%llu events): %.2f bytes/event as records, %.2f columnar\n",
              static_cast<unsigned long long>(events), static_cast<double>(on_disk[0]) / events,
              static_cast<double>(on_disk[1]) / events);
}

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
  ratio("raw_writer", "raw_writer_records");
  ratio("raw_writer_ops_columnar", "raw_writer_ops_records");
  ratio("read_raw", "read_raw_records");
  ratio("read_raw_ops_columnar", "read_raw_ops_records");
  ratio("raw_writer", "write");
  ratio("read_raw", "memcpy");
  ratio("chrome_json_gz", "raw_writer");
  ratio("sqlite", "raw_writer");
  auto& b = rlprof::format::BytesPerEvent();
  std::printf("\nBytes per event on disk (events.rlp, zstd level 1):\n");
  for (const auto& [key, v] : b) std::printf("%-28s %6.2f\n", key.c_str(), v);
  rlprof::format::PrintCaptureSizes();
  return 0;
}
