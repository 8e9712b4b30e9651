// contents: [memory] — the process's resident set size as the `rss_bytes` counter, sampled at
// every step / stage boundary inside a window and every plan.memory_interval_s while one is
// open (the writer's wake-ups drive the interval); and once a window, what it may grow to as
// `capacity_bytes host` (the host's memory or its cgroup's limit, base::MemoryLimitBytes). A built-in Source (source.h): the session
// adds it itself.
//
//   auto m = std::make_shared<MemorySource>();   // SourceSet::Add configures it from the plan
//
// Thread-safety: Boundary runs on the training thread, Tick on the writer thread, both under
// the session lock; the counters are atomics.
#ifndef RLPROF_SRC_RUNTIME_MEMORY_SOURCE_H_
#define RLPROF_SRC_RUNTIME_MEMORY_SOURCE_H_

#include <atomic>
#include <cstdint>

#include "src/runtime/source.h"

namespace rlprof::runtime {

class MemorySource : public Source {
 public:
  std::string_view name() const override { return "memory"; }
  bool Wanted(const config::ProcessPlan& p) const override { return p.contents.memory; }
  bool Configure(const SourceContext& ctx) override;
  void Start(uint32_t) override {}  // the boundary that opened the window samples
  void Boundary(uint32_t gen) override { Sample(gen); }
  void Stop(uint32_t) override {}
  void Tick(uint32_t gen) override;
  double TickInterval() const override { return interval_ns_ / 1e9; }
  SourceCounters Counters(uint32_t gen) override;

 private:
  void Sample(uint32_t gen);
  int64_t interval_ns_ = 0;
  int64_t limit_bytes_ = -1;   // read at Configure
  uint32_t limit_gen_ = 0;     // the window whose capacity was recorded (under the session lock)
  std::atomic<int64_t> last_ns_{0};
  std::atomic<uint64_t> samples_{0};
  std::atomic<uint64_t> failed_reads_{0};
};

}  // namespace rlprof::runtime

#endif  // RLPROF_SRC_RUNTIME_MEMORY_SOURCE_H_
