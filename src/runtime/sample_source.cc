#include "src/runtime/sample_source.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "rlprof/rlprof.hpp"
#include "src/runtime/clock.h"
#include "src/runtime/thread_buffer.h"

namespace rlprof::runtime {
namespace {

using format::Category;
using format::Event;
using format::EventKind;

constexpr uint32_t kUnknown32 = 0xffffffffu;

std::mutex g_current_mu;
std::weak_ptr<SampleSource> g_current;

uint32_t Intern(std::string_view s) {
  return s.empty() ? 0 : Recorder::Get().interner().InternString(s);
}

uint32_t U32(int64_t v) {
  if (v < 0) return kUnknown32;
  return v >= kUnknown32 ? kUnknown32 - 1 : static_cast<uint32_t>(v);
}

// Two counts in one payload: hi << 32 | lo, each a uint32 (0xffffffff unknown).
int64_t Pack(int64_t hi, int64_t lo) {
  return static_cast<int64_t>((static_cast<uint64_t>(U32(hi)) << 32) | U32(lo));
}

Event Make(EventKind kind, uint32_t name, int64_t ts, int64_t payload, uint32_t id, uint32_t arg1) {
  Event e{};
  e.ts_ns = ts;
  e.payload = payload;
  e.name = name;
  e.kind = kind;
  e.category = Category::kSample;
  e.arg0 = id;
  e.arg1 = arg1;
  return e;
}

}  // namespace

bool SampleKept(std::string_view id, double rate) {
  if (rate >= 1.0) return true;
  if (rate <= 0.0) return false;
  uint64_t h = 1469598103934665603ull;  // FNV-1a 64
  for (unsigned char c : id) {
    h ^= c;
    h *= 1099511628211ull;
  }
  // The top 53 bits as a fraction in [0, 1).
  return static_cast<double>(h >> 11) * (1.0 / 9007199254740992.0) < rate;
}

bool SampleSource::Configure(const SourceContext& ctx) {
  rate_ = ctx.plan != nullptr ? ctx.plan->sample_rate : 1.0;
  return true;
}

std::shared_ptr<SampleSource> SampleSource::Current() {
  std::lock_guard<std::mutex> lock(g_current_mu);
  return g_current.lock();
}

void SampleSource::SetCurrent(const std::shared_ptr<SampleSource>& s) {
  std::lock_guard<std::mutex> lock(g_current_mu);
  g_current = s;
}

int SampleSource::Record(const rlprof_sample& s) {
  if (s.id == nullptr || s.id[0] == '\0') return 0;
  const uint32_t gen = internal::OpenWindow();
  if (gen == 0) return 0;
  const std::string_view id(s.id);
  if (!SampleKept(id, rate_)) {
    std::lock_guard<std::mutex> lock(mu_);
    ++counts_[gen].sampled_out;
    return 0;
  }
  // Its span: the earliest and latest time it names.
  const int64_t times[] = {s.submit_ns, s.queued_ns, s.scheduled_ns, s.first_token_ns, s.last_token_ns, s.end_ns};
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (int64_t t : times)
    if (t > 0) {
      lo = std::min(lo, t);
      hi = std::max(hi, t);
    }
  if (lo == INT64_MAX) return 0;  // no time at all: nothing to place
  const int64_t start = s.submit_ns > 0 ? s.submit_ns : lo;
  const int64_t end = s.end_ns > 0 ? s.end_ns : (s.last_token_ns > 0 ? s.last_token_ns : hi);
  Pending p{gen, {}};
  p.events.reserve(9 + s.n_spans);
  const uint32_t key = Intern(id);
  const uint32_t group = s.group != nullptr ? Intern(s.group) : 0;
  auto complete = [&](std::string_view name, int64_t t0, int64_t t1, uint32_t arg1) {
    if (t0 > 0 && t1 >= t0)
      p.events.push_back(Make(EventKind::kComplete, Intern(name), t0, t1 - t0, key, arg1));
  };
  auto instant = [&](std::string_view name, int64_t hi, int64_t lo, uint32_t arg1) {
    p.events.push_back(Make(EventKind::kInstant, Intern(name), std::max(end, start), Pack(hi, lo), key, arg1));
  };
  complete("sample", start, std::max(end, start), group);
  complete("sample/queue", s.queued_ns, s.scheduled_ns, 0);
  complete("sample/prefill", s.scheduled_ns, s.first_token_ns, 0);
  complete("sample/decode", s.first_token_ns, s.last_token_ns, 0);
  if (s.spans != nullptr)
    for (uint32_t i = 0; i < s.n_spans; ++i) {
      const rlprof_sample_span& sp = s.spans[i];
      if (sp.phase == nullptr || sp.phase[0] == '\0') continue;
      complete(std::string("sample/") + sp.phase, sp.start_ns, sp.end_ns,
               sp.label != nullptr ? Intern(sp.label) : 0);
    }
  if (s.completion_tokens >= 0 || s.prompt_tokens >= 0)
    instant("sample/tokens", s.completion_tokens, s.prompt_tokens, 0);
  if (s.cached_tokens >= 0 || s.preemptions >= 0)
    instant("sample/cached", s.cached_tokens, s.preemptions, 0);
  instant("sample/finish", s.replica, -1, s.finish_reason != nullptr ? Intern(s.finish_reason) : 0);
  if (s.version_first >= 0 || s.version_last >= 0)
    instant("sample/version", s.version_first, s.version_last, 0);
  std::lock_guard<std::mutex> lock(mu_);
  ++counts_[gen].samples;
  pending_.push_back(std::move(p));
  return 1;
}

int SampleSource::Use(const char* id, const char* outcome, int64_t step, int64_t version, int64_t at_ns) {
  if (id == nullptr || id[0] == '\0' || outcome == nullptr || outcome[0] == '\0') return 0;
  const uint32_t gen = internal::OpenWindow();
  if (gen == 0) return 0;
  if (!SampleKept(id, rate_)) {
    std::lock_guard<std::mutex> lock(mu_);
    ++counts_[gen].sampled_out;
    return 0;
  }
  const int64_t at = at_ns > 0 ? at_ns : MonotonicNowNs();
  Pending p{gen, {Make(EventKind::kInstant, Intern("sample/use"), at, Pack(version, step), Intern(id), Intern(outcome))}};
  std::lock_guard<std::mutex> lock(mu_);
  ++counts_[gen].uses;
  pending_.push_back(std::move(p));
  return 1;
}

void SampleSource::Drain(SourceSink& sink, uint32_t final_gen) {
  std::vector<Pending> work;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (pending_.empty()) {
      finalised_ = std::max(finalised_, final_gen);
      return;
    }
    work.swap(pending_);
  }
  if (track_ == 0) track_ = sink.AddTrack(format::TrackKind::kAsync, 0, "samples");
  std::vector<Pending> keep;
  std::map<uint32_t, std::pair<int64_t, int64_t>> lost;  // gen → (late, over budget) events' records
  for (Pending& p : work) {
    if (!sink.Accepting(p.gen)) {
      // Not open yet (its Open is still queued) unless its capture was finalised already.
      if (p.gen > std::max(finalised_, final_gen)) {
        keep.push_back(std::move(p));
      } else {
        ++lost[p.gen].first;
      }
      continue;
    }
    bool ok = true;
    for (Event& e : p.events) {
      e.track = track_;
      ok = sink.Emit(p.gen, e, TimeBase::kMonotonicNs) && ok;
    }
    if (!ok) ++lost[p.gen].second;
  }
  std::lock_guard<std::mutex> lock(mu_);
  finalised_ = std::max(finalised_, final_gen);
  for (auto& [gen, n] : lost) {
    counts_[gen].late += n.first;
    counts_[gen].over_budget += n.second;
  }
  if (!keep.empty()) pending_.insert(pending_.begin(), std::make_move_iterator(keep.begin()),
                                     std::make_move_iterator(keep.end()));
}

SourceCounters SampleSource::Counters(uint32_t gen) {
  Counts c;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = counts_.find(gen);
    if (it == counts_.end()) return {};
    c = it->second;
    counts_.erase(it);
  }
  SourceCounters out;
  out.emplace_back("samples", c.samples);
  out.emplace_back("uses", c.uses);
  if (c.sampled_out) out.emplace_back("sampled_out", c.sampled_out);
  if (c.late) out.emplace_back("late", c.late);
  if (c.over_budget) out.emplace_back("over_budget", c.over_budget);
  if (rate_ < 1.0) out.emplace_back("sample_rate", rate_);
  return out;
}

void SampleSource::Shutdown() {
  std::lock_guard<std::mutex> lock(g_current_mu);
  if (g_current.lock().get() == this) g_current.reset();
}

}  // namespace rlprof::runtime
