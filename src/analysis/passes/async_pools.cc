#include "src/analysis/passes/async_pools.h"

#include <algorithm>
#include <string_view>
#include <vector>

#include "src/config/stages.h"

namespace rlprof::analysis {
namespace {

// Interval classes, highest priority first: the sync phases, the rest of the sync stage, the
// wait causes, busy.
constexpr int kSyncOtherClass = static_cast<int>(kSyncPhaseCount);
constexpr int kWaitBase = kSyncOtherClass + 1;
constexpr int kBusyClass = kWaitBase + static_cast<int>(kWaitCauseCount);
constexpr int kClasses = kBusyClass + 1;

int ClassOf(std::string_view name) {
  auto find = [&](std::string_view prefix, const char* const* names, size_t n) -> int {
    if (!name.starts_with(prefix)) return -1;
    const std::string_view rest = name.substr(prefix.size());
    for (size_t i = 0; i < n; ++i)
      if (rest == names[i]) return static_cast<int>(i);
    return -1;
  };
  if (int p = find("sync/", kSyncPhases, kSyncPhaseCount); p >= 0) return p;
  if (int w = find("wait/", kWaitCauses, kWaitCauseCount); w >= 0) return kWaitBase + w;
  return -1;
}

struct Edge {
  int64_t at;
  int cls;
  int delta;  // +1 open, -1 close
  bool operator<(const Edge& o) const { return at < o.at; }
};

void Add(std::vector<Edge>* edges, int64_t start, int64_t end, int cls) {
  if (end <= start) return;
  edges->push_back({start, cls, +1});
  edges->push_back({end, cls, -1});
}

// Each instant of [lo, hi) goes to the highest-priority class open over it.
std::array<int64_t, kClasses + 1> Partition(std::vector<Edge> edges, int64_t lo, int64_t hi,
                                             std::vector<AsyncSegment>* segments) {
  std::array<int64_t, kClasses + 1> out{};  // [kClasses]: none (other)
  std::sort(edges.begin(), edges.end());
  std::array<int, kClasses> open{};
  int64_t at = lo;
  auto credit = [&](int64_t until) {
    until = std::min(until, hi);
    if (until <= at) return;
    int cls = kClasses;
    for (int c = 0; c < kClasses; ++c)
      if (open[c] > 0) {
        cls = c;
        break;
      }
    out[cls] += until - at;
    if (cls < kClasses) {
      AsyncSegment s{at, until, cls < kWaitBase ? AsyncSegment::kSync : cls < kBusyClass ? AsyncSegment::kWait
                                                                                         : AsyncSegment::kBusy,
                     cls < kWaitBase ? cls : cls < kBusyClass ? cls - kWaitBase : -1};
      if (!segments->empty() && segments->back().end == s.start && segments->back().kind == s.kind &&
          segments->back().cause == s.cause)
        segments->back().end = s.end;
      else
        segments->push_back(s);
    }
    at = until;
  };
  for (const Edge& e : edges) {
    if (e.at > at) credit(e.at);
    open[e.cls] += e.delta;
  }
  credit(hi);
  return out;
}

}  // namespace

int64_t AsyncBreakdown::sync_total() const {
  int64_t s = sync_other;
  for (int64_t v : sync) s += v;
  return s;
}

int64_t AsyncBreakdown::wait_total() const {
  int64_t s = 0;
  for (int64_t v : wait) s += v;
  return s;
}

AsyncBreakdown AsyncPools(const Trace& t) {
  AsyncBreakdown b;
  std::vector<Edge> edges;
  int64_t first = INT64_MAX, last = INT64_MIN;
  for (size_t i = 0; i < t.size(); ++i) {
    first = std::min(first, t.ts[i]);
    last = std::max(last, t.ts[i] + std::max<int64_t>(t.dur[i], 0));
    if (t.kind[i] != SliceKind::kRange) continue;
    const int cls = ClassOf(t.str(t.name[i]));
    if (cls < 0) continue;
    b.present = true;
    Add(&edges, t.ts[i], t.ts[i] + t.dur[i], cls);
  }
  for (const Marker& s : t.stages) {
    // verl's update_weights timer (and every other alias of weight_sync, src/config/stages.cc).
    const bool sync = s.name == "weight_sync" || config::SameStage(s.name, "weight_sync");
    b.syncs += sync ? 1 : 0;
    if (sync && s.end_ns > s.start_ns) b.sync_stages.push_back({s.start_ns, s.end_ns, AsyncSegment::kSync, -1});
    Add(&edges, s.start_ns, s.end_ns, sync ? kSyncOtherClass : kBusyClass);
  }
  int64_t staleness_sum = 0;
  int64_t versions[2][2] = {{-1, -1}, {-1, -1}};  // [weight, trainer][first, last]
  for (const CounterSample& c : t.counters) {
    const std::string& name = c.name != 0 ? t.str(c.name) : t.tracks[c.track].name;
    if (!name.starts_with("rl/")) continue;
    b.present = true;
    const auto v = static_cast<int64_t>(c.value);
    if (name == "rl/sync_bytes") {
      b.transfer_bytes += c.value;
      b.sync_bytes_at.push_back({c.ts_ns, v});
    } else if (name == "rl/published_version") {
      b.published.push_back({c.ts_ns, v});
    } else if (name == "rl/generated_tokens") {
      b.tokens += v;
    } else if (name == "rl/generated") {
      b.generated += v;
      b.generated_at.push_back({c.ts_ns, v});
    } else if (name == "rl/queue_depth") {
      ++b.queue_samples;
      b.queue_depth_mean += (c.value - b.queue_depth_mean) / static_cast<double>(b.queue_samples);
      b.queue_depth_max = std::max(b.queue_depth_max, v);
    } else if (name == "rl/staleness") {
      ++b.consumed;
      staleness_sum += v;
      b.consumed_at.push_back({c.ts_ns, v});
      b.staleness_max = std::max(b.staleness_max, v);
    } else if (name == "rl/weight_version" || name == "rl/trainer_version") {
      if (name == "rl/trainer_version") b.trained_at.push_back({c.ts_ns, v});
      int64_t* fl = versions[name == "rl/weight_version" ? 0 : 1];
      if (fl[0] < 0) fl[0] = v;
      fl[1] = v;
    }
  }
  // A rollout process's versions are the weights it loaded; a trainer's, the updates it made.
  std::sort(b.sync_stages.begin(), b.sync_stages.end(),
            [](const AsyncSegment& x, const AsyncSegment& y) { return x.start < y.start; });
  for (auto* v : {&b.published, &b.generated_at, &b.consumed_at, &b.trained_at, &b.sync_bytes_at})
    std::stable_sort(v->begin(), v->end(), [](const AsyncFact& x, const AsyncFact& y) { return x.at < y.at; });
  const int64_t* fl = versions[0][0] >= 0 ? versions[0] : versions[1];
  b.version_first = fl[0];
  b.version_last = fl[1];
  if (b.consumed > 0) b.staleness_mean = static_cast<double>(staleness_sum) / static_cast<double>(b.consumed);
  // A process without rlprof.rl's records still gets its split when it ran stages: in an async
  // run it is a member of its role's pool (async_run.h, InAsyncRun: reward workers, …).
  if (!b.present && t.stages.empty()) return b;
  const int64_t lo = t.capture_start_ns >= 0 ? t.capture_start_ns : first;
  const int64_t hi = t.capture_end_ns >= 0 ? t.capture_end_ns : last;
  if (hi <= lo) return b;
  b.window = hi - lo;
  const auto parts = Partition(std::move(edges), lo, hi, &b.segments);
  for (size_t p = 0; p < kSyncPhaseCount; ++p) b.sync[p] = parts[p];
  b.sync_other = parts[kSyncOtherClass];
  for (size_t w = 0; w < kWaitCauseCount; ++w) b.wait[w] = parts[kWaitBase + w];
  b.busy = parts[kBusyClass];
  b.other = parts[kClasses];
  return b;
}

}  // namespace rlprof::analysis
