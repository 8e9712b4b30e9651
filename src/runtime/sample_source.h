// Each sample's life (issue 33): the records of rlprof_sample_record / rlprof_sample_use (and
// rlprof.sample in Python) go into the open capture window as events of category kSample on
// the process's "samples" track — a built-in Source: the session adds it, the C API finds it.
//
//   rlprof_sample s; rlprof_sample_init(&s); s.id = "r1"; s.submit_ns = …; rlprof_sample_record(&s);
//   → pending until the writer's next Drain, which emits (CLOCK_MONOTONIC ns):
//     sample          complete  submit → end            arg0 = id, arg1 = group
//     sample/queue    complete  queued → scheduled      arg0 = id
//     sample/prefill  complete  scheduled → first token arg0 = id
//     sample/decode   complete  first → last token      arg0 = id
//     sample/<phase>  complete  a span (tool, reward, …) arg0 = id, arg1 = label
//   the instants (at end) carry two counts, payload = hi << 32 | lo (uint32 each, 0xffffffff
//   unknown), arg0 = id, arg1 = a string or 0:
//     sample/tokens   hi = completion tokens, lo = prompt tokens
//     sample/cached   hi = cached tokens, lo = preemptions
//     sample/finish   hi = replica, arg1 = finish reason
//     sample/version  hi = first weight version, lo = last
//     sample/use      hi = version, lo = step, arg1 = outcome ("consumed" or a drop reason);
//                     at the time of use, in the process that used it
//   (docs/formats.md, "Samples").
// Records are kept by a deterministic share of ids (plan.sample_rate): FNV-1a of the id.
// Thread-safety: Record/Use from any thread (one mutex, no hot path); Drain on the writer.
#ifndef RLPROF_SRC_RUNTIME_SAMPLE_SOURCE_H_
#define RLPROF_SRC_RUNTIME_SAMPLE_SOURCE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include "rlprof/rlprof.h"
#include "src/runtime/source.h"

namespace rlprof::runtime {

// Whether a sample rate keeps `id` (rate ≥ 1: always; ≤ 0: never).
bool SampleKept(std::string_view id, double rate);

class SampleSource : public Source {
 public:
  std::string_view name() const override { return "samples"; }
  bool Wanted(const config::ProcessPlan&) const override { return true; }
  bool Configure(const SourceContext& ctx) override;
  void Start(uint32_t) override {}
  void Stop(uint32_t) override {}
  void Drain(SourceSink& sink, uint32_t final_gen) override;
  SourceCounters Counters(uint32_t gen) override;
  void Shutdown() override;
  bool ListedWhenIdle() const override { return false; }

  // The session's source the C API records into (nullptr when no session has one).
  static std::shared_ptr<SampleSource> Current();
  // Makes this the current one (the session, once configured).
  static void SetCurrent(const std::shared_ptr<SampleSource>& s);

  // 1 recorded (pending for the open window), 0 not.
  int Record(const rlprof_sample& s);
  int Use(const char* id, const char* outcome, int64_t step, int64_t version, int64_t at_ns);
  double rate() const { return rate_; }

 private:
  struct Pending {
    uint32_t gen;
    std::vector<format::Event> events;
  };
  struct Counts {
    int64_t samples = 0, uses = 0, sampled_out = 0, late = 0, over_budget = 0;
  };
  double rate_ = 1.0;
  std::mutex mu_;
  std::vector<Pending> pending_;
  std::map<uint32_t, Counts> counts_;  // per window
  uint32_t finalised_ = 0;              // the newest window whose capture was finalised
  uint16_t track_ = 0;
};

}  // namespace rlprof::runtime

#endif  // RLPROF_SRC_RUNTIME_SAMPLE_SOURCE_H_
