#include "src/analysis/run/async_run.h"

#include <algorithm>
#include <cmath>
#include <array>
#include <map>
#include <set>
#include <string>

namespace rlprof::analysis {
namespace {

using Row = std::vector<Cell>;

double Us(int64_t ns) { return static_cast<double>(ns) / 1e3; }

// A pool's sum of its processes (versions: the widest range; staleness: over every consumption).
void Accumulate(const AsyncBreakdown& b, AsyncBreakdown* sum, double* staleness_sum) {
  sum->present = true;
  sum->window += b.window;
  for (size_t i = 0; i < kSyncPhaseCount; ++i) sum->sync[i] += b.sync[i];
  for (size_t i = 0; i < kWaitCauseCount; ++i) sum->wait[i] += b.wait[i];
  sum->sync_other += b.sync_other;
  sum->busy += b.busy;
  sum->other += b.other;
  sum->syncs += b.syncs;
  sum->generated += b.generated;
  sum->tokens += b.tokens;
  sum->transfer_bytes += b.transfer_bytes;
  if (b.version_first >= 0)
    sum->version_first = sum->version_first < 0 ? b.version_first : std::min(sum->version_first, b.version_first);
  sum->version_last = std::max(sum->version_last, b.version_last);
  sum->consumed += b.consumed;
  *staleness_sum += b.staleness_mean * static_cast<double>(b.consumed);
  sum->staleness_max = std::max(sum->staleness_max, b.staleness_max);
  if (b.queue_samples > 0) {  // a running mean over every process's samples
    sum->queue_samples += b.queue_samples;
    sum->queue_depth_mean += (b.queue_depth_mean - sum->queue_depth_mean) * static_cast<double>(b.queue_samples) /
                             static_cast<double>(sum->queue_samples);
  }
  sum->queue_depth_max = std::max(sum->queue_depth_max, b.queue_depth_max);
}

// `span`: the wall time its throughput is over (a process: its window; a pool: its longest).
Row RowOf(const std::string& input, int64_t rank, const std::string& role, const AsyncBreakdown& b, int64_t span) {
  const int64_t transfer = b.sync[kPhaseTransfer];
  Row r{input, rank, role, Us(b.window), Us(b.busy)};
  for (int64_t w : b.wait) r.push_back(Us(w));
  r.push_back(Us(b.sync_total()));
  for (int64_t s : b.sync) r.push_back(Us(s));
  r.push_back(Us(b.sync_other));
  r.push_back(Us(b.other));
  r.push_back(b.window > 0 ? 100.0 * static_cast<double>(b.busy) / static_cast<double>(b.window) : NAN);
  r.push_back(b.syncs);
  r.push_back(b.transfer_bytes / 1e6);
  r.push_back(transfer > 0 ? b.transfer_bytes / static_cast<double>(transfer) : NAN);  // bytes/ns = GB/s
  r.push_back(b.version_first);
  r.push_back(b.version_last);
  r.push_back(b.consumed);
  r.push_back(b.consumed > 0 ? b.staleness_mean : NAN);
  r.push_back(b.staleness_max);
  r.push_back(b.queue_samples > 0 ? b.queue_depth_mean : NAN);
  r.push_back(b.queue_samples > 0 ? Cell(b.queue_depth_max) : Cell());
  // Throughput: what the process (the pool: its processes together) made or took, per second.
  const double window_s = static_cast<double>(span) / 1e9;
  r.push_back(b.generated);
  r.push_back(b.tokens > 0 ? Cell(b.tokens) : Cell());
  const int64_t samples = b.generated > 0 ? b.generated : b.consumed;
  r.push_back(window_s > 0 && samples > 0 ? Cell(static_cast<double>(samples) / window_s) : Cell());
  r.push_back(window_s > 0 && b.tokens > 0 ? Cell(static_cast<double>(b.tokens) / window_s) : Cell());
  return r;
}

// The run's timeline joined across processes (rank 0's clock): generation G (busy stretches of
// generating processes), training T (of training processes), sync S (of anyone).
struct Overlaps {
  int64_t generation = 0, training = 0, overlap = 0, exposed_generation = 0, exposed_sync = 0;
};

struct JoinEdge {
  int64_t at;
  int set;  // 0 G, 1 T, 2 S
  int delta;
};

std::vector<JoinEdge> JoinEdges(const std::vector<InputResult>& results) {
  std::vector<JoinEdge> edges;
  const bool any = AnyAsync(results);
  for (const auto& r : results) {
    const AsyncBreakdown& b = r.analysis.async;
    if (!InAsyncRun(r, any)) continue;
    for (const AsyncSegment& s : b.segments) {
      int set = -1;
      if (s.kind == AsyncSegment::kSync) set = 2;
      else if (s.kind == AsyncSegment::kBusy && b.generated > 0) set = 0;
      else if (s.kind == AsyncSegment::kBusy && b.consumed > 0) set = 1;
      if (set < 0 || s.end <= s.start) continue;
      edges.push_back({s.start, set, +1});
      edges.push_back({s.end, set, -1});
    }
  }
  std::sort(edges.begin(), edges.end(), [](const JoinEdge& a, const JoinEdge& b) { return a.at < b.at; });
  return edges;
}

// The sweep over the joined edges, credited to the intervals [bounds[i], bounds[i + 1]) (one
// Overlaps per interval; time outside them is not counted).
std::vector<Overlaps> Sweep(const std::vector<JoinEdge>& edges, const std::vector<int64_t>& bounds) {
  std::vector<Overlaps> out(bounds.size() > 1 ? bounds.size() - 1 : 0);
  int open[3] = {0, 0, 0};
  auto credit = [&](int64_t from, int64_t to) {
    // Split [from, to) at the interval bounds.
    size_t i = static_cast<size_t>(std::upper_bound(bounds.begin(), bounds.end(), from) - bounds.begin());
    while (from < to && i > 0 && i < bounds.size()) {
      const int64_t cut = std::min(to, bounds[i]);
      const int64_t len = cut - from;
      Overlaps& o = out[i - 1];
      const bool g = open[0] > 0, t = open[1] > 0, s = open[2] > 0;
      o.generation += g ? len : 0;
      o.training += t ? len : 0;
      o.overlap += g && t ? len : 0;
      o.exposed_generation += g && !t ? len : 0;
      o.exposed_sync += s && !g && !t ? len : 0;
      from = cut;
      ++i;
    }
  };
  for (size_t i = 0; i < edges.size(); ++i) {
    open[edges[i].set] += edges[i].delta;
    if (i + 1 < edges.size() && edges[i + 1].at > edges[i].at) credit(edges[i].at, edges[i + 1].at);
  }
  return out;
}

Overlaps Join(const std::vector<InputResult>& results) {
  const std::vector<JoinEdge> edges = JoinEdges(results);
  if (edges.empty()) return {};
  return Sweep(edges, {edges.front().at, edges.back().at})[0];
}

}  // namespace

Table AsyncVerdictTable(const std::vector<InputResult>& results) {
  Table t{"async_verdict",
          {Column{"generating_processes", ColumnType::kInt, ""}, Column{"training_processes", ColumnType::kInt, ""},
           Column{"generated", ColumnType::kInt, ""}, Column{"consumed", ColumnType::kInt, ""},
           Column{"generate_rate", ColumnType::kReal, "/s"}, Column{"train_rate", ColumnType::kReal, "/s"},
           Column{"balance", ColumnType::kReal, ""}, Column{"verdict", ColumnType::kText, ""},
           Column{"throughput_capacity", ColumnType::kReal, "/s"},
           Column{"throughput_measured", ColumnType::kReal, "/s"},
           Column{"with_one_more_generating", ColumnType::kReal, "/s"},
           Column{"with_one_more_training", ColumnType::kReal, "/s"},
           Column{"generation", ColumnType::kReal, "us"}, Column{"training", ColumnType::kReal, "us"},
           Column{"overlap", ColumnType::kReal, "us"}, Column{"exposed_generation", ColumnType::kReal, "us"},
           Column{"exposed_sync", ColumnType::kReal, "us"}},
          {}};
  int64_t gen_procs = 0, train_procs = 0, generated = 0, consumed = 0, train_window = 0;
  double gen_cap = 0, train_cap = 0;  // Σ per-process rates, samples per busy second
  for (const auto& r : results) {
    const AsyncBreakdown& b = r.analysis.async;
    if (!r.status.ok() || !b.present || b.busy <= 0) continue;
    const double busy_s = static_cast<double>(b.busy) / 1e9;
    if (b.generated > 0) {
      ++gen_procs;
      generated += b.generated;
      gen_cap += static_cast<double>(b.generated) / busy_s;
    }
    if (b.consumed > 0) {
      ++train_procs;
      consumed += b.consumed;
      train_cap += static_cast<double>(b.consumed) / busy_s;
      train_window = std::max(train_window, b.window);
    }
  }
  const double g = gen_procs ? gen_cap / static_cast<double>(gen_procs) : NAN;      // per process
  const double tr = train_procs ? train_cap / static_cast<double>(train_procs) : NAN;
  const bool both = gen_procs > 0 && train_procs > 0;
  const double balance = both ? gen_cap / train_cap : NAN;
  const char* verdict = !both ? "incomplete" : balance < 0.9 ? "rollout-bound" : balance > 1.1 ? "train-bound" : "balanced";
  auto capacity = [&](int64_t gp, int64_t tp) {
    return both && gp > 0 && tp > 0 ? std::min(g * static_cast<double>(gp), tr * static_cast<double>(tp)) : NAN;
  };
  // What the training processes took, over the longest of their windows (they run in parallel).
  const double measured = train_window > 0 ? static_cast<double>(consumed) / (static_cast<double>(train_window) / 1e9) : NAN;
  const Overlaps o = Join(results);
  t.rows.push_back({gen_procs, train_procs, generated, consumed, g, tr, balance, std::string(verdict),
                    capacity(gen_procs, train_procs), measured, capacity(gen_procs + 1, train_procs - 1),
                    capacity(gen_procs - 1, train_procs + 1), Us(o.generation), Us(o.training), Us(o.overlap),
                    Us(o.exposed_generation), Us(o.exposed_sync)});
  return t;
}

Table AsyncVersionsTable(const std::vector<InputResult>& results) {
  Table t{"async_versions",
          {Column{"version", ColumnType::kInt, ""}, Column{"start", ColumnType::kReal, "us"},
           Column{"duration", ColumnType::kReal, "us"}, Column{"trainer_steps", ColumnType::kInt, ""},
           Column{"generated", ColumnType::kInt, ""}, Column{"consumed", ColumnType::kInt, ""},
           Column{"staleness_mean", ColumnType::kReal, ""}, Column{"staleness_max", ColumnType::kInt, ""},
           Column{"samples_per_s", ColumnType::kReal, "/s"}, Column{"generation", ColumnType::kReal, "us"},
           Column{"training", ColumnType::kReal, "us"}, Column{"overlap", ColumnType::kReal, "us"},
           Column{"exposed_generation", ColumnType::kReal, "us"}, Column{"exposed_sync", ColumnType::kReal, "us"},
           Column{"sync", ColumnType::kReal, "us"}},
          {}};
  for (const char* c : kWaitCauses) t.columns.push_back({std::string("wait_") + c, ColumnType::kReal, "us"});
  // The bounds: each version's first publish (any process), between the run's first and last
  // instant of its processes' windows.
  const AsyncRun run = CollectAsyncRun(results);
  const int64_t lo = run.lo, hi = run.hi;
  if (run.publishes.empty() || lo >= hi) return t;
  std::vector<std::pair<int64_t, int64_t>> order;  // (when, version), by time
  for (const auto& [v, p] : run.publishes) order.emplace_back(std::clamp(p.at, lo, hi), v);
  std::sort(order.begin(), order.end());
  std::vector<int64_t> bounds;
  std::vector<Cell> versions;
  if (order.front().first > lo) {  // before the first publish: the initial weights' load
    bounds.push_back(lo);
    versions.push_back(Cell{});
  }
  for (const auto& [at, v] : order) {
    if (!bounds.empty() && at <= bounds.back()) continue;  // two versions at one instant: the later
    bounds.push_back(at);
    versions.push_back(v);
  }
  bounds.push_back(hi);
  const size_t n = versions.size();
  struct Per {
    int64_t generated = 0, consumed = 0, staleness_sum = 0, staleness_max = 0, sync = 0;
    std::set<int64_t> steps;
    std::array<int64_t, kWaitCauseCount> wait{};
  };
  std::vector<Per> per(n);
  auto index = [&](int64_t at) -> int64_t {  // the interval holding `at`, -1 outside
    const auto i = std::upper_bound(bounds.begin(), bounds.end(), at) - bounds.begin() - 1;
    return i >= 0 && static_cast<size_t>(i) < n ? i : (at == hi ? static_cast<int64_t>(n) - 1 : -1);
  };
  auto clip = [&](const AsyncSegment& g, auto&& add) {  // g's time in each interval
    for (int64_t i = std::max<int64_t>(index(g.start), 0); i < static_cast<int64_t>(n) && bounds[i] < g.end; ++i) {
      const int64_t len = std::min(g.end, bounds[i + 1]) - std::max(g.start, bounds[i]);
      if (len > 0) add(per[i], len);
    }
  };
  // The trainer steps: a version the data-parallel trainers reach together counts once, in the
  // interval of its first arrival (one trainer's may fall after the next publish, another's before).
  std::map<int64_t, int64_t> first_trained;  // version → first rl/trainer_version of it
  for (const InputResult* r : run.processes) {
    const AsyncBreakdown& b = r->analysis.async;
    for (const AsyncFact& f : b.generated_at)
      if (int64_t i = index(f.at); i >= 0) per[i].generated += f.value;
    for (const AsyncFact& f : b.consumed_at) {
      if (int64_t i = index(f.at); i >= 0) {
        ++per[i].consumed;
        per[i].staleness_sum += f.value;
        per[i].staleness_max = std::max(per[i].staleness_max, f.value);
      }
    }
    for (const AsyncFact& f : b.trained_at) {  // each version once: where a process first reached it
      auto [it, fresh] = first_trained.emplace(f.value, f.at);
      if (!fresh) it->second = std::min(it->second, f.at);
    }
    for (const AsyncSegment& g : b.segments) {
      if (g.kind == AsyncSegment::kWait && g.cause >= 0)
        clip(g, [&](Per& p, int64_t len) { p.wait[g.cause] += len; });
    }
  }
  for (const auto& [version, at] : first_trained)
    if (int64_t i = index(at); i >= 0) per[i].steps.insert(version);
  // The sync as the run sees it: a union over processes (S of the join).
  std::vector<JoinEdge> sync_edges;
  for (const JoinEdge& e : JoinEdges(results))
    if (e.set == 2) sync_edges.push_back(e);
  std::vector<int64_t> sync_union(n, 0);
  {
    int open = 0;
    for (size_t i = 0; i + 1 < sync_edges.size(); ++i) {
      open += sync_edges[i].delta;
      if (open > 0)
        clip({sync_edges[i].at, sync_edges[i + 1].at, AsyncSegment::kSync, -1},
             [&](Per& p, int64_t len) { p.sync += len; });
    }
  }
  const std::vector<Overlaps> o = Sweep(JoinEdges(results), bounds);
  for (size_t i = 0; i < n; ++i) {
    const Per& p = per[i];
    const int64_t d = bounds[i + 1] - bounds[i];
    Row row{versions[i], Us(bounds[i] - lo), Us(d), static_cast<int64_t>(p.steps.size()), p.generated, p.consumed,
            p.consumed > 0 ? static_cast<double>(p.staleness_sum) / static_cast<double>(p.consumed) : NAN,
            p.consumed > 0 ? Cell(p.staleness_max) : Cell(),
            d > 0 ? static_cast<double>(p.consumed) / (static_cast<double>(d) / 1e9) : NAN,
            Us(o[i].generation), Us(o[i].training), Us(o[i].overlap), Us(o[i].exposed_generation),
            Us(o[i].exposed_sync), Us(p.sync)};
    for (int64_t w : p.wait) row.push_back(Us(w));
    t.rows.push_back(std::move(row));
  }
  return t;
}

AsyncRun CollectAsyncRun(const std::vector<InputResult>& results) {
  AsyncRun run;
  const bool any = AnyAsync(results);
  for (const auto& r : results) {
    const AsyncBreakdown& b = r.analysis.async;
    if (!InAsyncRun(r, any)) continue;
    const size_t index = run.processes.size();
    run.processes.push_back(&r);
    for (const AsyncSegment& g : b.segments) {
      run.lo = std::min(run.lo, g.start);
      run.hi = std::max(run.hi, g.end);
    }
    for (const AsyncFact& f : b.published) {
      auto [it, fresh] = run.publishes.emplace(f.value, AsyncRun::Publish{f.at, index});
      if (!fresh && f.at < it->second.at) it->second = {f.at, index};
    }
  }
  return run;
}

bool InAsyncRun(const InputResult& r, bool any_async) {
  if (!r.status.ok()) return false;
  const AsyncBreakdown& b = r.analysis.async;
  return b.present || (any_async && b.busy > 0);
}

bool AnyAsync(const std::vector<InputResult>& results) {
  return std::any_of(results.begin(), results.end(),
                     [](const InputResult& r) { return r.status.ok() && r.analysis.async.present; });
}

Table AsyncPoolsTable(const std::vector<InputResult>& results) {
  Table t{"async_pools", {Column{"input", ColumnType::kText, ""}, Column{"rank", ColumnType::kInt, ""},
                          Column{"role", ColumnType::kText, ""}, Column{"window", ColumnType::kReal, "us"},
                          Column{"busy", ColumnType::kReal, "us"}},
          {}};
  for (const char* c : kWaitCauses) t.columns.push_back({std::string("wait_") + c, ColumnType::kReal, "us"});
  t.columns.push_back({"sync", ColumnType::kReal, "us"});
  for (const char* p : kSyncPhases) t.columns.push_back({std::string("sync_") + p, ColumnType::kReal, "us"});
  for (const char* c : {"sync_other", "other"}) t.columns.push_back({c, ColumnType::kReal, "us"});
  t.columns.push_back({"busy_pct", ColumnType::kReal, "%"});
  t.columns.push_back({"syncs", ColumnType::kInt, ""});
  t.columns.push_back({"transfer_mb", ColumnType::kReal, "MB"});
  t.columns.push_back({"transfer_gbps", ColumnType::kReal, "GB/s"});
  for (const char* c : {"version_first", "version_last", "consumed"}) t.columns.push_back({c, ColumnType::kInt, ""});
  t.columns.push_back({"staleness_mean", ColumnType::kReal, ""});
  t.columns.push_back({"staleness_max", ColumnType::kInt, ""});
  t.columns.push_back({"queue_depth_mean", ColumnType::kReal, ""});
  t.columns.push_back({"queue_depth_max", ColumnType::kInt, ""});
  t.columns.push_back({"generated", ColumnType::kInt, ""});
  t.columns.push_back({"tokens", ColumnType::kInt, ""});
  t.columns.push_back({"samples_per_s", ColumnType::kReal, "/s"});
  t.columns.push_back({"tokens_per_s", ColumnType::kReal, "/s"});
  std::map<std::string, std::pair<AsyncBreakdown, double>> pools;  // role → (sum, Σ staleness)
  std::map<std::string, int64_t> processes, span;
  const bool any = AnyAsync(results);
  for (const auto& r : results) {
    const AsyncBreakdown& b = r.analysis.async;
    if (!InAsyncRun(r, any)) continue;
    const std::string role = r.analysis.role.empty() ? "?" : r.analysis.role;
    t.rows.push_back(RowOf(r.name, r.analysis.rank, role, b, b.window));
    auto& [sum, staleness] = pools[role];
    Accumulate(b, &sum, &staleness);
    ++processes[role];
    span[role] = std::max(span[role], b.window);
  }
  for (auto& [role, p] : pools) {
    AsyncBreakdown& sum = p.first;
    if (sum.consumed > 0) sum.staleness_mean = p.second / static_cast<double>(sum.consumed);
    t.rows.push_back(RowOf("pool " + role, processes[role], role, sum, span[role]));
  }
  return t;
}

}  // namespace rlprof::analysis
