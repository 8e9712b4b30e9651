#include "src/runtime/memory_source.h"

#include "src/base/files.h"
#include "src/runtime/clock.h"
#include "src/runtime/thread_buffer.h"

namespace rlprof::runtime {

bool MemorySource::Configure(const SourceContext& ctx) {
  interval_ns_ = ctx.plan != nullptr ? static_cast<int64_t>(ctx.plan->memory_interval_s * 1e9) : 0;
  limit_bytes_ = base::MemoryLimitBytes();
  return true;
}

void MemorySource::Sample(uint32_t gen) {
  if (gen == 0 || internal::OpenWindow() != gen) return;
  const int64_t rss = base::ResidentSetBytes();
  if (rss < 0) {
    failed_reads_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  Record e{};
  e.ts_ns = static_cast<int64_t>(internal::ReadTicks());
  e.name = Recorder::Get().interner().InternString("rss_bytes");
  e.kind = format::EventKind::kCounter;
  e.category = format::Category::kMemory;
  e.set_counter_value(static_cast<double>(rss));
  EmitRecord(gen, e);
  if (limit_bytes_ > 0 && limit_gen_ != gen) {  // once a window: what the RSS may grow to
    limit_gen_ = gen;
    e.name = Recorder::Get().interner().InternString("capacity_bytes host");
    e.set_counter_value(static_cast<double>(limit_bytes_));
    EmitRecord(gen, e);
  }
  samples_.fetch_add(1, std::memory_order_relaxed);
  last_ns_.store(MonotonicNowNs(), std::memory_order_relaxed);
}

void MemorySource::Tick(uint32_t gen) {
  if (interval_ns_ > 0 && MonotonicNowNs() - last_ns_.load(std::memory_order_relaxed) >= interval_ns_)
    Sample(gen);
}

SourceCounters MemorySource::Counters(uint32_t) {
  SourceCounters c;
  c.emplace_back("samples", static_cast<int64_t>(samples_.load()));
  if (uint64_t f = failed_reads_.load(); f != 0) c.emplace_back("failed_reads", static_cast<int64_t>(f));
  return c;
}

}  // namespace rlprof::runtime
