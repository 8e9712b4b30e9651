#include "src/config/sampling.h"

#include <algorithm>
#include <limits>

#include "src/base/time_math.h"

namespace rlprof::config {

const char* ScheduleActionName(ScheduleAction a) {
  switch (a) {
    case ScheduleAction::kNone: return "NONE";
    case ScheduleAction::kWarmup: return "WARMUP";
    case ScheduleAction::kRecord: return "RECORD";
    case ScheduleAction::kRecordAndSave: return "RECORD_AND_SAVE";
  }
  return "?";
}

namespace {
// wait + warmup + active (each ≥ 0), saturated: absurd configs must not overflow.
int64_t CycleLength(int64_t wait, int64_t warmup, int64_t active) {
  return base::SatAdd(base::SatAdd(wait, warmup), active);
}

int64_t Saturate(__int128 v) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  return v > kMax ? kMax : static_cast<int64_t>(v);
}
}  // namespace

ScheduleAction ActionAt(const Schedule& s, int64_t k) {
  if (!s.enabled()) return ScheduleAction::kRecord;
  const int64_t skip_first = std::max<int64_t>(s.skip_first, 0);
  const int64_t wait = std::max<int64_t>(s.wait, 0);
  const int64_t warmup = std::max<int64_t>(s.warmup, 0);
  const int64_t repeat = std::max<int64_t>(s.repeat, 0);
  k = std::max<int64_t>(k, 0);
  if (k < skip_first) return ScheduleAction::kNone;
  const int64_t kp = k - skip_first;
  const int64_t len = CycleLength(wait, warmup, s.active);
  // torch tests `k' / L >= repeat` in real division; for an integer repeat this is
  // floor(k' / L) >= repeat, which avoids the overflow of repeat * L.
  if (repeat > 0 && kp / len >= repeat) return ScheduleAction::kNone;
  const int64_t m = kp % len;
  if (m < wait) return ScheduleAction::kNone;
  if (m < wait + warmup) return ScheduleAction::kWarmup;
  return m < len - 1 ? ScheduleAction::kRecord : ScheduleAction::kRecordAndSave;
}

std::vector<SamplePeriod> SchedulePeriods(const Schedule& s, int64_t count, bool* more,
                                          size_t limit) {
  std::vector<SamplePeriod> out;
  if (more != nullptr) *more = false;
  if (!s.enabled()) return out;
  const int64_t skip_first = std::max<int64_t>(s.skip_first, 0);
  const int64_t wait = std::max<int64_t>(s.wait, 0);
  const int64_t warmup = std::max<int64_t>(s.warmup, 0);
  const int64_t repeat = std::max<int64_t>(s.repeat, 0);
  const int64_t len = CycleLength(wait, warmup, s.active);
  // Cycle c records k in [skip_first + c·L + wait + warmup, skip_first + (c + 1)·L).
  for (int64_t c = 0; repeat == 0 || c < repeat; ++c) {
    if (out.size() >= limit) {
      if (more != nullptr) *more = true;
      break;
    }
    const int64_t start =
        Saturate(__int128{skip_first} + __int128{c} * len + __int128{wait} + warmup);
    const int64_t end = Saturate(__int128{start} + s.active);
    if (count < 0) {
      out.push_back({start, end - start, true});
      if (repeat == 0) {
        if (more != nullptr) *more = true;
        break;
      }
      continue;
    }
    if (start > count) break;  // the stage ended before this cycle recorded
    if (end <= count) {
      out.push_back({start, end - start, true});
      continue;
    }
    out.push_back({start, count - start, false});  // cut by the stage end (or the tail only)
    break;
  }
  return out;
}

std::string PeriodText(SubStepKind unit, const SamplePeriod& p) {
  std::string u = SubStepKindName(unit);
  if (p.size == 0)
    return p.first == 0 ? u + " none (the stage ran no " + u + ")"
                        : u + " tail after " + std::to_string(p.first - 1);
  std::string s = u + " " + std::to_string(p.first);
  if (p.size > 1) {
    const int64_t last = p.first + p.size - 1;
    s += "-" + (p.size >= kUnboundedActive / 2 ? std::string("end") : std::to_string(last));
  }
  if (!p.complete) s += " (cut by the stage end)";
  return s;
}

std::string ScheduleParamsText(const Schedule& s) {
  if (!s.enabled()) return "-";
  std::string o;
  if (s.skip_first) o += "skip " + std::to_string(s.skip_first) + " ";
  if (s.wait) o += "wait " + std::to_string(s.wait) + " ";
  if (s.warmup) o += "warmup " + std::to_string(s.warmup) + " ";
  o += "active " + (s.active >= kUnboundedActive ? std::string("∞") : std::to_string(s.active));
  o += " repeat " + (s.repeat ? std::to_string(s.repeat) : std::string("∞"));
  return o;
}

Schedule TokenWindowSchedule(std::optional<int64_t> start, std::optional<int64_t> end) {
  Schedule t;
  const int64_t s = std::max<int64_t>(start.value_or(0), 0);
  t.skip_first = s;
  t.repeat = 1;
  t.unit = SubStepKind::kDecode;
  t.active = end ? *end - s : kUnboundedActive;
  if (t.active < 0) t.active = 0;
  return t;
}

}  // namespace rlprof::config
