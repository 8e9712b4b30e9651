#include "src/analysis/run/compare.h"

#include <array>
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "src/analysis/passes/views.h"

namespace rlprof::analysis {
namespace {

double Us(double ns) { return ns / 1e3; }

// The samples of one quantity (ns): the median is the comparison's figure, min and max its
// spread (definitions §6: aggregate over steps by median, spread shown).
struct Stat {
  std::vector<double> v;
  void Add(double x) { v.push_back(x); }
  bool empty() const { return v.empty(); }
  int64_t n() const { return static_cast<int64_t>(v.size()); }
  double median() const {
    if (v.empty()) return 0;
    std::vector<double> s = v;
    std::sort(s.begin(), s.end());
    const size_t m = s.size() / 2;
    return s.size() % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
  }
  double min() const { return v.empty() ? 0 : *std::min_element(v.begin(), v.end()); }
  double max() const { return v.empty() ? 0 : *std::max_element(v.begin(), v.end()); }
};

// new / baseline with msprof-analyze's convention: inf when only the baseline is 0, 1 when both.
double Ratio(double base, double now) {
  if (base == 0) return now == 0 ? 1.0 : std::numeric_limits<double>::infinity();
  return now / base;
}

struct StageKey {
  std::string role, name;
  bool operator<(const StageKey& o) const { return std::tie(role, name) < std::tie(o.role, o.name); }
};

struct StageStats {
  Stat duration, compute, exposed_comm, idle;
};

struct OpTotals {
  double count = 0, total = 0;  // Σ over the side's inputs
  double device = 0;            // host operators: Σ device time they launched (OpStat::device_total)
};

// Everything one side contributes.
struct Side {
  static constexpr int kMetrics = 8;
  std::array<Stat, kMetrics> metrics;
  std::map<StageKey, StageStats> stages;
  std::map<std::pair<std::string, std::string>, OpTotals> ops;  // (type, name)
  int64_t steps = 0;  // every step window analysed (op totals are per step)
};

const char* const kMetricNames[Side::kMetrics] = {
    "Step (window)", "Computing", "Communication(Not Overlapped)", "Overlapped",
    "Communication", "Free", "Bubble", "Preparing"};

Side Collect(const std::vector<InputResult>& results, const char* side, Diagnostics* diag) {
  Side s;
  uint64_t partial = 0, unreadable = 0;
  for (const auto& r : results) {
    if (!r.status.ok()) {
      ++unreadable;
      continue;
    }
    const TraceAnalysis& a = r.analysis;
    std::set<int64_t> partial_steps;
    for (const auto& st : a.steps) {
      ++s.steps;
      if (st.window.partial) {
        ++partial;
        partial_steps.insert(st.window.step);
        continue;
      }
      const MsprofRow m = MsprofFromStep(st);
      const double values[Side::kMetrics] = {
          static_cast<double>(st.window.end - st.window.start),
          static_cast<double>(m.computing),
          static_cast<double>(m.comm_not_overlapped),
          static_cast<double>(m.overlapped),
          static_cast<double>(m.communication),
          static_cast<double>(m.free),
          static_cast<double>(m.bubble),
          static_cast<double>(st.preparing)};
      for (int k = 0; k < Side::kMetrics; ++k) {
        if (k == Side::kMetrics - 1 && st.preparing < 0) continue;  // no compute/comm at all
        s.metrics[k].Add(values[k]);
      }
    }
    for (const auto& st : a.stages) {
      if (partial_steps.count(st.step)) continue;
      StageStats& x = s.stages[{st.role, st.name}];
      x.duration.Add(static_cast<double>(st.duration));
      x.compute.Add(static_cast<double>(st.atoms.compute()));
      x.exposed_comm.Add(static_cast<double>(st.atoms.comm_only));
      x.idle.Add(static_cast<double>(st.atoms.idle));
    }
    auto add_ops = [&](const char* type, const std::vector<OpStat>& v) {
      for (const auto& o : v) {
        OpTotals& t = s.ops[{type, o.name}];
        t.count += static_cast<double>(o.count);
        t.total += static_cast<double>(o.total);
        t.device += static_cast<double>(o.device_total);
      }
    };
    add_ops("host", a.host_ops);
    add_ops("device", a.kernels);
  }
  if (partial) diag->Add(std::string("partial_steps_left_out_") + side, partial);
  if (unreadable) diag->Add(std::string("unreadable_inputs_") + side, unreadable);
  if (s.steps == 0) diag->Add(std::string("no_steps_") + side);
  return s;
}

Cell Opt(bool present, double v) { return present ? Cell{v} : Cell{}; }
Cell Pct(bool both, double base, double delta) {
  return both && base != 0 ? Cell{100.0 * delta / base} : Cell{};
}

Column R(std::string n, std::string unit) { return {std::move(n), ColumnType::kReal, std::move(unit)}; }
Column I(std::string n) { return {std::move(n), ColumnType::kInt, ""}; }
Column T(std::string n) { return {std::move(n), ColumnType::kText, ""}; }

Table StepsTable(const Side& b, const Side& t) {
  Table out{"compare_steps",
            {T("metric"), R("baseline", "us"), R("new", "us"), R("delta", "us"), R("delta_pct", "%"),
             R("ratio", ""), R("baseline_min", "us"), R("baseline_max", "us"), R("new_min", "us"),
             R("new_max", "us"), I("baseline_samples"), I("new_samples")},
            {}};
  for (int k = 0; k < Side::kMetrics; ++k) {
    const Stat& x = b.metrics[k];
    const Stat& y = t.metrics[k];
    const bool hb = !x.empty(), ht = !y.empty(), both = hb && ht;
    const double bm = Us(x.median()), tm = Us(y.median()), d = tm - bm;
    out.rows.push_back({std::string(kMetricNames[k]), Opt(hb, bm), Opt(ht, tm), Opt(both, d),
                        Pct(both, bm, d), Opt(both, Ratio(bm, tm)), Opt(hb, Us(x.min())),
                        Opt(hb, Us(x.max())), Opt(ht, Us(y.min())), Opt(ht, Us(y.max())), x.n(), y.n()});
  }
  return out;
}

Table StagesTable(const Side& b, const Side& t) {
  Table out{"compare_stages",
            {T("role"), T("stage"), R("baseline", "us"), R("new", "us"), R("delta", "us"),
             R("delta_pct", "%"), R("ratio", ""), R("baseline_min", "us"), R("baseline_max", "us"),
             R("new_min", "us"), R("new_max", "us"), R("baseline_compute", "us"),
             R("new_compute", "us"), R("baseline_comm_not_overlapped", "us"),
             R("new_comm_not_overlapped", "us"), R("baseline_idle", "us"), R("new_idle", "us"),
             I("baseline_samples"), I("new_samples")},
            {}};
  std::set<StageKey> keys;
  for (const auto& [k, v] : b.stages) keys.insert(k);
  for (const auto& [k, v] : t.stages) keys.insert(k);
  struct Row {
    double order;  // |Δ| for stages on both sides, -1 (last) otherwise
    std::vector<Cell> cells;
  };
  std::vector<Row> rows;
  const StageStats none;
  for (const StageKey& k : keys) {
    auto bi = b.stages.find(k), ti = t.stages.find(k);
    const StageStats& x = bi != b.stages.end() ? bi->second : none;
    const StageStats& y = ti != t.stages.end() ? ti->second : none;
    const bool hb = !x.duration.empty(), ht = !y.duration.empty(), both = hb && ht;
    const double bm = Us(x.duration.median()), tm = Us(y.duration.median()), d = tm - bm;
    rows.push_back({both ? std::fabs(d) : -1.0,
                    {k.role, k.name, Opt(hb, bm), Opt(ht, tm), Opt(both, d), Pct(both, bm, d),
                     Opt(both, Ratio(bm, tm)), Opt(hb, Us(x.duration.min())), Opt(hb, Us(x.duration.max())),
                     Opt(ht, Us(y.duration.min())), Opt(ht, Us(y.duration.max())),
                     Opt(hb, Us(x.compute.median())), Opt(ht, Us(y.compute.median())),
                     Opt(hb, Us(x.exposed_comm.median())), Opt(ht, Us(y.exposed_comm.median())),
                     Opt(hb, Us(x.idle.median())), Opt(ht, Us(y.idle.median())), x.duration.n(),
                     y.duration.n()}});
  }
  std::stable_sort(rows.begin(), rows.end(), [](const Row& p, const Row& q) { return p.order > q.order; });
  for (auto& r : rows) out.rows.push_back(std::move(r.cells));
  return out;
}

Table OpsTable(const Side& b, const Side& t, size_t top) {
  Table out{"compare_ops",
            {T("type"), T("name"), T("change"), R("baseline_count", ""), R("new_count", ""),
             R("baseline", "us"), R("new", "us"), R("delta", "us"), R("delta_pct", "%"), R("ratio", ""),
             R("baseline_device", "us"), R("new_device", "us"), R("device_delta", "us")},
            {}};
  const double bs = static_cast<double>(std::max<int64_t>(1, b.steps));
  const double ts = static_cast<double>(std::max<int64_t>(1, t.steps));
  std::set<std::pair<std::string, std::string>> keys;
  for (const auto& [k, v] : b.ops) keys.insert(k);
  for (const auto& [k, v] : t.ops) keys.insert(k);
  struct Row {
    double order;
    std::vector<Cell> cells;
  };
  std::vector<Row> rows;
  for (const auto& k : keys) {
    auto bi = b.ops.find(k), ti = t.ops.find(k);
    const bool hb = bi != b.ops.end(), ht = ti != t.ops.end();
    const double bt = Us(hb ? bi->second.total / bs : 0), tt = Us(ht ? ti->second.total / ts : 0);
    const double d = tt - bt;
    // Device time launched by a host operator (docs/definitions.md §5.5); empty on device rows
    // and where neither side attributed any kernel to it.
    const double bd = Us(hb ? bi->second.device / bs : 0), td = Us(ht ? ti->second.device / ts : 0);
    const bool has_device = k.first == "host" && ((hb && bi->second.device > 0) || (ht && ti->second.device > 0));
    // HTA trace_diff's categories, on time per rank-step.
    const char* change = !hb ? "added" : !ht ? "removed" : d > 0 ? "increased" : d < 0 ? "decreased" : "unchanged";
    rows.push_back({std::fabs(d),
                    {k.first, k.second, std::string(change), Opt(hb, hb ? bi->second.count / bs : 0),
                     Opt(ht, ht ? ti->second.count / ts : 0), Opt(hb, bt), Opt(ht, tt), d,
                     Pct(hb && ht, bt, d), Opt(hb && ht, Ratio(bt, tt)), Opt(has_device && hb, bd),
                     Opt(has_device && ht, td), Opt(has_device, td - bd)}});
  }
  std::stable_sort(rows.begin(), rows.end(), [](const Row& p, const Row& q) { return p.order > q.order; });
  if (rows.size() > top) rows.resize(top);
  for (auto& r : rows) out.rows.push_back(std::move(r.cells));
  return out;
}

}  // namespace

nlohmann::json ComparisonToJson(const Comparison& c) {
  nlohmann::json j;
  for (const Table* t : c.Tables()) j[t->name] = ToJson(*t);
  j["diagnostics"] = nlohmann::json::object();
  for (const auto& [k, v] : c.diagnostics.counts) j["diagnostics"][k] = v;
  return j;
}

Comparison CompareRuns(const std::vector<InputResult>& baseline, const std::vector<InputResult>& test,
                       const CompareOptions& opts) {
  Comparison c;
  const Side b = Collect(baseline, "baseline", &c.diagnostics);
  const Side t = Collect(test, "new", &c.diagnostics);
  c.steps = StepsTable(b, t);
  c.stages = StagesTable(b, t);
  c.ops = OpsTable(b, t, opts.top_ops);
  c.async = CompareAsyncTable(baseline, test);
  c.async_versions = CompareAsyncVersionsTable(baseline, test);
  return c;
}

std::vector<const Table*> Comparison::Tables() const {
  std::vector<const Table*> out{&steps, &stages, &ops};
  if (!async.rows.empty()) out.push_back(&async);
  if (!async_versions.rows.empty()) out.push_back(&async_versions);
  return out;
}

}  // namespace rlprof::analysis
