// CUPTI source benchmark (docs/performance.md, "Device capture"). Prints figures and ratios
// to the targets; it is not a timed test (the ctest smoke run only checks it works).
//
//   build/bench/cupti_bench                         # full run
//   RLPROF_CUPTI_BENCH_RECORDS=20000 build/bench/cupti_bench   # smoke size
//
// 1. Conversion: CUPTI activity records → rlprof events, as the writer thread does it
//    (cupti_records.h, records walked with the loaded library's cuptiActivityGetNextRecord),
//    into a sink that appends to a vector like the writer's batch. Target ≥ 5 M records/s.
// 2. End to end: a session with the CUPTI source on the fake CUPTI replaying N records per
//    window; the writer's final drain converts, compresses and writes them. Records/s from
//    EndStep to the capture on disk.
// 3. Window-close stall on the training thread: EndStep() with device capture on, against the
//    same without it (same run). Target ≤ 1 ms.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "src/runtime/session.h"
#include "src/runtime/source.h"
#include "src/sources/cupti_records.h"
#include "src/sources/cupti_source.h"

namespace {

using Clock = std::chrono::steady_clock;
using rlprof::format::Event;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

long EnvLong(const char* k, long d) {
  const char* v = std::getenv(k);
  return v != nullptr && *v != '\0' ? std::atol(v) : d;
}

class VectorSink : public rlprof::runtime::SourceSink {
 public:
  bool Emit(uint32_t, const Event& e, rlprof::runtime::TimeBase) override {
    batch.push_back(e);
    return true;
  }
  uint16_t AddTrack(rlprof::format::TrackKind, uint64_t, const std::string&) override { return ++tracks; }
  uint16_t ThreadTrack(uint64_t tid) override { return static_cast<uint16_t>(tid & 0xff); }
  uint32_t Intern(std::string_view s) override {
    strings.emplace_back(s);
    return static_cast<uint32_t>(strings.size());
  }
  bool Accepting(uint32_t) const override { return true; }
  std::vector<Event> batch;
  std::vector<std::string> strings;
  uint16_t tracks = 0;
};

// A buffer like one CUPTI fills during training: per launch an external-correlation record,
// a runtime API record and a kernel (every 10th a memcpy), 8 streams, 64 distinct kernels.
std::vector<uint8_t> MakeBuffer(size_t records, std::vector<std::string>* names) {
  for (int i = 0; i < 64; ++i) names->push_back("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tile" + std::to_string(i));
  std::vector<uint8_t> buf;
  buf.reserve(records * sizeof(CUpti_ActivityKernel10));
  auto put = [&](const void* p, size_t n) {
    const size_t off = buf.size();
    buf.resize(off + ((n + 7) & ~size_t{7}), 0);
    std::memcpy(buf.data() + off, p, n);
  };
  uint64_t t = 1'000'000;
  for (size_t i = 0, corr = 1; i < records; ++corr) {
    CUpti_ActivityExternalCorrelation x{};
    x.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
    x.externalId = corr / 4;
    x.correlationId = static_cast<uint32_t>(corr);
    put(&x, sizeof x);
    CUpti_ActivityAPI a{};
    a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
    a.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
    a.start = t;
    a.end = t + 3000;
    a.threadId = 4242;
    a.correlationId = static_cast<uint32_t>(corr);
    put(&a, sizeof a);
    i += 2;
    if (corr % 10 == 0) {
      CUpti_ActivityMemcpy6 m{};
      m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
      m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
      m.bytes = 1 << 20;
      m.start = t + 5000;
      m.end = t + 9000;
      m.streamId = static_cast<uint32_t>(corr % 8);
      m.correlationId = static_cast<uint32_t>(corr);
      put(&m, sizeof m);
    } else {
      CUpti_ActivityKernel10 k{};
      k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
      k.start = t + 5000;
      k.end = t + 25000;
      k.streamId = static_cast<uint32_t>(corr % 8);
      k.contextId = 1;
      k.gridX = 132, k.gridY = k.gridZ = 1;
      k.blockX = 256, k.blockY = k.blockZ = 1;
      k.registersPerThread = 168;
      k.dynamicSharedMemory = 98304;
      k.correlationId = static_cast<uint32_t>(corr);
      k.name = (*names)[corr % names->size()].c_str();
      put(&k, sizeof k);
    }
    ++i;
    t += 30000;
  }
  return buf;
}

const char* BenchEnv(const char* k) { return std::string(k) == "RLPROF_CLOCK" ? nullptr : std::getenv(k); }

}  // namespace

int main() {
  const long n = EnvLong("RLPROF_CUPTI_BENCH_RECORDS", 2'000'000);
  const char* lib = std::getenv("RLPROF_CUPTI_LIBRARY");
  if (lib == nullptr) {
    std::fprintf(stderr, "cupti_bench: set RLPROF_CUPTI_LIBRARY (the fake: build/src/sources/librlprof_fake_cupti.so)\n");
    return 1;
  }
  rlprof::sources::CuptiApi api;
  std::string why;
  if (!api.Load(&BenchEnv, &why)) {
    std::fprintf(stderr, "cupti_bench: %s\n", why.c_str());
    return 1;
  }

  // 1. Conversion.
  std::vector<std::string> names;
  std::vector<uint8_t> buf = MakeBuffer(static_cast<size_t>(n), &names);
  VectorSink sink;
  sink.batch.reserve(static_cast<size_t>(n));
  rlprof::sources::CuptiRecordConverter conv(&sink, &api);
  double best = 1e30;
  size_t events = 0;
  for (int rep = 0; rep < 5; ++rep) {
    sink.batch.clear();
    const auto t0 = Clock::now();
    CUpti_Activity* r = nullptr;
    size_t records = 0;
    while (api.ActivityGetNextRecord(buf.data(), buf.size(), &r) == CUPTI_SUCCESS) {
      ++records;
      Event e;
      if (conv.Convert(r, 0, &e)) sink.Emit(1, e, rlprof::runtime::TimeBase::kMonotonicNs);
    }
    best = std::min(best, Seconds(Clock::now() - t0) / static_cast<double>(records));
    events = sink.batch.size();
  }
  const double rate = 1.0 / best;
  std::printf("conversion: %.1f M records/s (%.1f ns/record, %zu events from %ld records)  "
              "target >= 5 M/s: ratio %.2f\n",
              rate / 1e6, best * 1e9, events, n, rate / 5e6);

  // 2 + 3. End to end, and the close stall, through a session on the fake.
  const long windows = EnvLong("RLPROF_CUPTI_BENCH_WINDOWS", 20);
  const std::string save = std::filesystem::temp_directory_path().string() + "/rlprof-cupti-bench-" +
                           std::to_string(getpid());
  auto run = [&](bool device, double* close_p50_us, double* close_max_us, double* e2e_rate) {
    rlprof::config::Plan plan;
    plan.tool = rlprof::config::Tool::kRlprof;
    plan.steps.kind = rlprof::config::StepSelection::Kind::kAll;
    plan.save_path = save + (device ? "/device" : "/host");
    plan.buffer_events_per_thread = 1 << 20;
    rlprof::config::RolePlan role;
    role.role = "actor";
    role.block_path = "rlprof.roles.actor";
    role.enabled = role.all_ranks = true;
    role.contents.device = device;
    role.level = "level1";
    plan.roles.push_back(role);
    rlprof::SessionOptions o;
    o.roles = std::vector<std::string>{"actor"};
    o.run_id = "bench";
    o.quiet = true;
    o.install_signal_handlers = false;
    auto s = rlprof::runtime::SessionImpl::Create(plan, o, &BenchEnv);
    std::vector<double> close_us;
    double drain_s = 0;
    for (long w = 1; w <= windows; ++w) {
      s->BeginStep(w);
      for (int i = 0; i < 1000; ++i) rlprof::Mark("host work");
      const auto c0 = Clock::now();
      s->EndStep();
      close_us.push_back(Seconds(Clock::now() - c0) * 1e6);
      const auto d0 = Clock::now();
      s->Flush(60);
      drain_s += Seconds(Clock::now() - d0);
    }
    s->Shutdown();
    std::sort(close_us.begin(), close_us.end());
    *close_p50_us = close_us[close_us.size() / 2];
    *close_max_us = close_us.back();
    *e2e_rate = drain_s > 0 ? static_cast<double>(windows) / drain_s : 0;
  };
  // The fake replays its records file RLPROF_FAKE_CUPTI_REPEAT times per window.
  const long per_window_specs = 15;  // events in test/data/cupti/step.records at level1..2 (13 + sync)
  const long repeat = std::max(1L, n / 10 / per_window_specs);
  setenv("RLPROF_FAKE_CUPTI_REPEAT", std::to_string(repeat).c_str(), 1);
  if (std::getenv("RLPROF_FAKE_CUPTI_RECORDS") == nullptr) {
    std::fprintf(stderr, "cupti_bench: set RLPROF_FAKE_CUPTI_RECORDS (test/data/cupti/step.records)\n");
    return 1;
  }
  auto source = std::make_shared<rlprof::sources::CuptiSource>(
      rlprof::sources::CuptiSourceOptions{nullptr, 4u << 20, 16});
  rlprof::runtime::SourceRegistry::Get().Register(source);
  double host_p50, host_max, host_rate, dev_p50, dev_max, dev_rate;
  run(false, &host_p50, &host_max, &host_rate);
  run(true, &dev_p50, &dev_max, &dev_rate);
  rlprof::runtime::SourceRegistry::Get().Unregister("cupti");
  std::filesystem::remove_all(save);
  const double records_per_window = static_cast<double>(repeat * 20);  // with external records
  std::printf("end to end (writer: convert + compress + write), %.0f records/window: %.2f M records/s\n",
              records_per_window, dev_rate * records_per_window / 1e6);
  std::printf("window close on the training thread: device p50 %.1f us, max %.1f us; host-only p50 %.1f us, "
              "max %.1f us; target <= 1000 us: ratio max/target %.3f\n",
              dev_p50, dev_max, host_p50, host_max, dev_max / 1000.0);
  return 0;
}
