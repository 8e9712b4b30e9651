// The report's data model: compact, so that a 1,024-rank run's page stays a few MB.
// What grows with the run is kept columnar (one array per column across every input, strings
// dictionary-encoded); what the page shows aggregated is aggregated here (communication per
// process group, operators run-wide); per-input detail (each capture's top operators and
// diagnostics: above the threshold, one row per diagnostic name with how many inputs and a few
// examples) and the run view's per-rank columns only up to a threshold. The page's script (assets/report.html,
// `expand`) turns it back into the per-input tables it draws.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <cmath>
#include <cstring>
#include <ctime>
#include <map>
#include <tuple>
#include <set>
#include <unordered_map>

#include "src/report/html_report.h"

#include "src/analysis/run/async_run.h"
#include "src/analysis/run/cluster.h"
#include "src/analysis/advise/advise.h"
#include "src/analysis/run/samples_run.h"

namespace rlprof::report {
namespace {

using nlohmann::json;

// Strings (roles, stages, groups, partial reasons) as indices into one array.
class Dict {
 public:
  int64_t Id(const std::string& s) {
    auto [it, added] = ids_.emplace(s, static_cast<int64_t>(list_.size()));
    if (added) list_.push_back(s);
    return it->second;
  }
  json ToJson() && { return json(std::move(list_)); }

 private:
  std::unordered_map<std::string, int64_t> ids_;
  std::vector<std::string> list_;
};

// µs with ns precision (the source is ns): 3 decimals, no binary noise in the text.
json Number(double v) {
  if (!std::isfinite(v)) return nullptr;
  const double r = std::round(v * 1000.0) / 1000.0;
  if (r == std::trunc(r) && std::fabs(r) < 9e15) return static_cast<int64_t>(r);
  return r;
}

// Appends the rows of `t` (input `k`) to the columnar table `out` (columns `keep`).
void AppendColumnar(const analysis::Table& t, size_t k, const std::vector<std::string>& keep,
                    Dict* dict, json* out) {
  std::vector<int> at(keep.size(), -1);
  for (size_t c = 0; c < keep.size(); ++c)
    for (size_t i = 0; i < t.columns.size(); ++i)
      if (t.columns[i].name == keep[c]) at[c] = static_cast<int>(i);
  json& input = (*out)["input"];
  for (const auto& row : t.rows) {
    input.push_back(k);
    for (size_t c = 0; c < keep.size(); ++c) {
      json& col = (*out)[keep[c]];
      if (at[c] < 0 || static_cast<size_t>(at[c]) >= row.size()) {
        col.push_back(nullptr);
        continue;
      }
      const analysis::Cell& cell = row[at[c]];
      if (const auto* i = std::get_if<int64_t>(&cell)) col.push_back(*i);
      else if (const auto* d = std::get_if<double>(&cell)) col.push_back(Number(*d));
      else if (const auto* s = std::get_if<std::string>(&cell)) col.push_back(dict->Id(*s));
      else col.push_back(nullptr);
    }
  }
}

json EmptyColumnar(const std::vector<std::string>& keep, const std::vector<std::string>& text) {
  json t = {{"columns", keep}, {"text", text}, {"input", json::array()}};
  for (const auto& c : keep) t[c] = json::array();
  return t;
}

const analysis::Cell* CellOf(const analysis::Table& t, const std::vector<analysis::Cell>& row,
                             const char* name) {
  for (size_t i = 0; i < t.columns.size() && i < row.size(); ++i)
    if (t.columns[i].name == name) return &row[i];
  return nullptr;
}
double Real(const analysis::Cell* c) {
  if (c == nullptr) return 0;
  if (const auto* d = std::get_if<double>(c)) return *d;
  if (const auto* i = std::get_if<int64_t>(c)) return static_cast<double>(*i);
  return 0;
}
std::string Text(const analysis::Cell* c) {
  const auto* s = c == nullptr ? nullptr : std::get_if<std::string>(c);
  return s == nullptr ? std::string() : *s;
}

// The run view with at most `lanes` per-rank columns (the rest are in run_view.csv).
json CapRunView(const json& rv, size_t lanes, size_t* dropped) {
  *dropped = 0;
  if (!rv.is_object() || !rv.contains("columns") || !rv.contains("rows")) return rv;
  const json& cols = rv["columns"];
  size_t first = 0, last = 0;  // lane columns: after "ranks", before "min"
  for (size_t i = 0; i < cols.size(); ++i) {
    const std::string n = cols[i].value("name", "");
    if (n == "ranks") first = i + 1;
    if (n == "min") last = i;
  }
  if (first == 0 || last < first || last - first <= lanes) return rv;
  const size_t cut_from = first + lanes;
  *dropped = last - cut_from;
  json out = {{"columns", json::array()}, {"rows", json::array()}};
  for (size_t i = 0; i < cols.size(); ++i)
    if (i < cut_from || i >= last) out["columns"].push_back(cols[i]);
  for (const auto& row : rv["rows"]) {
    json r = json::array();
    for (size_t i = 0; i < row.size(); ++i)
      if (i < cut_from || i >= last) r.push_back(row[i]);
    out["rows"].push_back(std::move(r));
  }
  return out;
}

// Device and host activity lanes of every input (small runs): lanes and spans columnar, times
// in µs on the trace clock (the stage rows' clock), the longest event's name as a "dict" id
// in a dictionary of its own. Past kReportActivitySpans spans in all, every lane is coarsened
// to its share (at least 50 spans).
json ActivityJson(const std::vector<analysis::InputResult>& results, bool detail) {
  json lanes = {{"input", json::array()}, {"device", json::array()}, {"name", json::array()},
                {"busy", json::array()}, {"events", json::array()}};
  json spans = {{"lane", json::array()}, {"start", json::array()}, {"end", json::array()}, {"busy", json::array()},
                {"count", json::array()}, {"cls", json::array()}, {"top", json::array()}};
  json classes = json::array();
  for (int c = 0; c < analysis::kWorkClassCount; ++c)
    classes.push_back(analysis::WorkClassName(static_cast<analysis::WorkClass>(c)));
  Dict names;
  int64_t left_out = 0;
  bool coarsened = false;
  if (detail) {
    size_t total = 0, n = 0;
    for (const auto& r : results) {
      if (!r.status.ok()) continue;
      left_out += r.analysis.activity_lanes_left_out;
      for (const auto& l : r.analysis.activity) {
        total += l.spans.size();
        ++n;
      }
    }
    const size_t share = total > kReportActivitySpans ? std::max<size_t>(50, kReportActivitySpans / n) : SIZE_MAX;
    size_t lane = 0;
    for (size_t k = 0; k < results.size(); ++k) {
      const auto& r = results[k];
      if (!r.status.ok()) continue;
      for (const auto& l : r.analysis.activity) {
        std::vector<analysis::ActivitySpan> fine;
        const std::vector<analysis::ActivitySpan>* ss = &l.spans;
        if (l.spans.size() > share) {
          fine = analysis::CoarsenSpans(l.spans, share);
          ss = &fine;
          coarsened = true;
        }
        lanes["input"].push_back(k);
        lanes["device"].push_back(l.device);
        lanes["name"].push_back(l.name);
        lanes["busy"].push_back(Number(l.busy / 1e3));
        lanes["events"].push_back(l.events);
        for (const auto& s : *ss) {
          spans["lane"].push_back(lane);
          spans["start"].push_back(Number(s.start / 1e3));
          spans["end"].push_back(Number(s.end / 1e3));
          spans["busy"].push_back(Number(s.busy / 1e3));
          spans["count"].push_back(s.count);
          spans["cls"].push_back(static_cast<int>(s.cls));
          spans["top"].push_back(names.Id(s.top));
        }
        ++lane;
      }
    }
  }
  return {{"lanes", std::move(lanes)}, {"spans", std::move(spans)}, {"classes", std::move(classes)},
          {"names", std::move(names).ToJson()}, {"lanes_left_out", left_out}, {"coarsened", coarsened},
          {"left_out_inputs", !detail}};
}

struct Op {
  int64_t count = 0;
  double total = 0, self = 0;
};
using OpTotals = std::map<std::pair<std::string, std::string>, Op>;  // (type, name) → totals

// An input's operators added to the run's totals; with `top_json`, its own top operators of
// each type there too (small runs).
void AddInputOps(const analysis::TraceAnalysis& a, bool detail, OpTotals& ops, json* top_json) {
  const analysis::Table os = analysis::OpStatisticTable(a);
  analysis::Table top{os.name, {}, {}};
  for (const char* c : {"type", "name", "count", "total", "self"})
    for (const auto& col : os.columns)
      if (col.name == c) top.columns.push_back(col);
  size_t host = 0, device = 0;
  for (const auto& row : os.rows) {  // rows come sorted by total within each type
    const std::string type = Text(CellOf(os, row, "type"));
    if (type != "host" && type != "device") continue;
    Op& o = ops[{type, Text(CellOf(os, row, "name"))}];
    o.count += static_cast<int64_t>(Real(CellOf(os, row, "count")));
    o.total += Real(CellOf(os, row, "total"));
    o.self += Real(CellOf(os, row, "self"));
    size_t& n = type == "host" ? host : device;
    if (detail && n++ < kReportInputTopOps)
      top.rows.push_back({type, Text(CellOf(os, row, "name")), CellOf(os, row, "count") ? *CellOf(os, row, "count") : analysis::Cell{},
                          Real(CellOf(os, row, "total")), Real(CellOf(os, row, "self"))});
  }
  if (top_json != nullptr) *top_json = analysis::ToJson(top);
}

// One input in the model's `inputs` columns: name, rank, error, and ops_sampling — the share of
// operator calls it recorded, null for every call (its operator rows are then estimates).
void AddInput(const analysis::InputResult& r, json* inputs) {
  const analysis::TraceAnalysis& a = r.analysis;
  const bool ok = r.status.ok();
  (*inputs)["name"].push_back(r.name);
  (*inputs)["rank"].push_back(ok ? json(a.rank) : json(nullptr));
  (*inputs)["error"].push_back(ok ? json(nullptr) : json(r.status.ToString()));
  (*inputs)["ops_sampling"].push_back(ok && a.ops_sampling > 0 && a.ops_sampling < 1 ? json(a.ops_sampling)
                                                                                      : json(nullptr));
}

// Memory over time at stage resolution: for each (series, step, role, stage), the value when
// the stage began and ended (mean over ranks) and its peak (max over ranks, and the rank that
// reached it), at the stage's first start and last end on rank 0's clock (µs). Grows with
// series × steps × stages, not with ranks or samples.
json MemoryRows(const std::vector<analysis::InputResult>& results) {
  struct Mem {
    int64_t start = INT64_MAX, end = INT64_MIN;
    double at_start = 0, at_end = 0, peak = -1;
    int64_t peak_rank = -1, ranks = 0;
  };
  std::map<std::tuple<std::string, int64_t, std::string, std::string>, Mem> mem;
  for (const auto& r : results) {
    if (!r.status.ok()) continue;
    for (const auto& m : r.analysis.memory_peaks) {
      if (m.stage == "(none)") continue;  // the step's time outside every stage: no one span
      const analysis::StageResult* st = nullptr;
      for (const auto& s : r.analysis.stages)
        if (s.step == m.step && s.role == m.role && s.name == m.stage) st = &s;
      if (st == nullptr) continue;
      Mem& e = mem[{m.series, m.step, m.role, m.stage}];
      e.start = std::min(e.start, st->start);
      e.end = std::max(e.end, st->end);
      e.at_start += m.at_start;
      e.at_end += m.at_end;
      ++e.ranks;
      if (m.peak > e.peak) {
        e.peak = m.peak;
        e.peak_rank = r.analysis.rank;
      }
    }
  }
  json mem_rows = json::array();  // [series, step, role, stage, start_us, end_us, at_start, peak, at_end, peak_rank, ranks]
  for (const auto& [k, e] : mem)
    mem_rows.push_back({std::get<0>(k), std::get<1>(k), std::get<2>(k), std::get<3>(k), Number(e.start / 1e3),
                        Number(e.end / 1e3), Number(e.at_start / e.ranks), Number(e.peak), Number(e.at_end / e.ranks),
                        e.peak_rank, e.ranks});
  return mem_rows;
}

// The async section (issue 32; runs with rlprof.rl's records): the pools, the verdict, the
// version intervals, the publishes, and one lane per process — its split as [start, end, kind,
// cause] quadruples, µs from the run's first instant — for at most kReportAsyncLanesPerPool
// processes of each pool (the lowest ranks); how many were left out.
json AsyncJson(const std::vector<analysis::InputResult>& results) {
  if (!analysis::AnyAsync(results)) return nullptr;
  const analysis::AsyncRun run = analysis::CollectAsyncRun(results);
  const int64_t t0 = run.lo == INT64_MAX ? 0 : run.lo;
  const auto rel = [t0](int64_t ns) { return static_cast<double>(ns - t0) / 1e3; };
  std::vector<const analysis::InputResult*> procs = run.processes;
  std::stable_sort(procs.begin(), procs.end(), [](const auto* a, const auto* b) {
    return std::make_pair(a->analysis.role, a->analysis.rank) < std::make_pair(b->analysis.role, b->analysis.rank);
  });
  json lanes = json::array(), publishes = json::array();
  std::map<std::string, size_t> per_pool;
  size_t left_out = 0;
  for (const auto* r : procs) {
    const analysis::AsyncBreakdown& b = r->analysis.async;
    for (const analysis::AsyncFact& p : b.published) publishes.push_back({Number(rel(p.at)), p.value});
    if (per_pool[r->analysis.role]++ >= kReportAsyncLanesPerPool) {
      ++left_out;
      continue;
    }
    json segs = json::array();
    for (const analysis::AsyncSegment& g : b.segments) {
      segs.push_back(Number(rel(g.start)));
      segs.push_back(Number(rel(g.end)));
      segs.push_back(g.kind);
      segs.push_back(g.cause);
    }
    lanes.push_back({{"input", r->name}, {"rank", r->analysis.rank}, {"role", r->analysis.role},
                     {"generates", b.generated > 0}, {"segments", std::move(segs)}});
  }
  analysis::Table pools = analysis::AsyncPoolsTable(results);
  std::erase_if(pools.rows, [&](const std::vector<analysis::Cell>& row) {
    return !Text(CellOf(pools, row, "input")).starts_with("pool ");
  });
  json out = {{"pools", analysis::ToJson(pools)},
              {"verdict", analysis::ToJson(analysis::AsyncVerdictTable(results))},
              {"versions", analysis::ToJson(analysis::AsyncVersionsTable(results))},
              {"syncs", analysis::ToJson(analysis::AsyncSyncsTable(results))},
              {"lanes", std::move(lanes)}, {"lanes_left_out", left_out}, {"publishes", std::move(publishes)},
              {"processes", procs.size()}};
  json waits = json::array(), phases = json::array();
  for (const char* w : analysis::kWaitCauses) waits.push_back(w);
  for (const char* p : analysis::kSyncPhases) phases.push_back(p);
  phases.push_back("other");
  out["wait_causes"] = std::move(waits);
  out["sync_phases"] = std::move(phases);
  return out;
}

// The samples section (issue 33; runs with sample records): sample_tail's "all" rows (the
// tail figures per step), sample_outcomes, and per step the samples drawn — the longest
// (submit → end) first, at most kSamplesPerStep of a step and about kSamplesInPage in the page
// (a step keeps at least 200) — columnar: id, replica (its own, else the process's rank), finish
// reason (an index into "dict"), and start (submit, else the earliest known time), queued,
// scheduled, first token, last token, end in µs from the step's first submit (null unknown);
// their tool / reward / other spans as flat [row, phase, label, start, end] quintuples (phase and
// label indices into "dict"). Times match sample_tail's: the same start, end and first submit.
constexpr size_t kSamplesPerStep = 2000;
constexpr size_t kSamplesInPage = 60000;

json SamplesJson(const std::vector<analysis::InputResult>& results) {
  if (!analysis::AnySamples(results)) return nullptr;
  struct Drawn {
    const analysis::SampleRecord* s;
    int64_t replica, start, end;
  };
  std::map<int64_t, std::vector<Drawn>> by_step;
  const std::vector<analysis::JoinedSample> joined = analysis::JoinSamples(results);  // one per id
  for (const analysis::JoinedSample& j : joined) {
    const analysis::SampleRecord& s = j.s;
    by_step[s.step].push_back({&s, s.replica >= 0 ? s.replica : std::max<int64_t>(j.input->analysis.rank, 0),
                               analysis::SampleStart(s), analysis::SampleEnd(s)});
  }
  const size_t share = by_step.empty() ? kSamplesPerStep
                                       : std::clamp<size_t>(kSamplesInPage / by_step.size(), 200, kSamplesPerStep);
  Dict dict;
  json steps = json::array();
  for (auto& [step, v] : by_step) {
    int64_t g0 = INT64_MAX;
    for (const Drawn& d : v)
      if (d.start >= 0) g0 = std::min(g0, d.start);
    if (g0 == INT64_MAX) g0 = 0;
    std::stable_sort(v.begin(), v.end(), [](const Drawn& a, const Drawn& b) {
      const int64_t la = a.end - a.start, lb = b.end - b.start;
      if (la != lb) return la > lb;
      if (a.end != b.end) return a.end > b.end;
      return a.s->id < b.s->id;
    });
    const size_t n = std::min(v.size(), share);
    const auto rel = [g0](int64_t ns) -> json {
      if (ns < 0) return nullptr;
      return Number(std::round(static_cast<double>(ns - g0) / 100.0) / 10.0);  // µs, 0.1 µs
    };
    json ids = json::array(), replica = json::array(), finish = json::array(), start = json::array(),
         queued = json::array(), scheduled = json::array(), first = json::array(), last = json::array(),
         end = json::array(), spans = json::array();
    for (size_t i = 0; i < n; ++i) {
      const Drawn& d = v[i];
      const analysis::SampleRecord& s = *d.s;
      ids.push_back(s.id);
      replica.push_back(d.replica);
      finish.push_back(s.finish_reason.empty() ? json(nullptr) : json(dict.Id(s.finish_reason)));
      start.push_back(rel(d.start));
      queued.push_back(rel(s.queued));
      scheduled.push_back(rel(s.scheduled));
      first.push_back(rel(s.first_token));
      last.push_back(rel(s.last_token));
      end.push_back(rel(d.end));
      for (const analysis::SampleSpan& sp : s.spans) {
        if (sp.start < 0 || sp.end < sp.start) continue;
        spans.push_back(i);
        spans.push_back(dict.Id(sp.phase));
        spans.push_back(sp.label.empty() ? json(nullptr) : json(dict.Id(sp.label)));
        spans.push_back(rel(sp.start));
        spans.push_back(rel(sp.end));
      }
    }
    steps.push_back({{"step", step >= 0 ? json(step) : json(nullptr)}, {"t0", Number(static_cast<double>(g0) / 1e3)},
                     {"samples", v.size()}, {"left_out", v.size() - n}, {"id", std::move(ids)},
                     {"replica", std::move(replica)}, {"finish", std::move(finish)}, {"start", std::move(start)},
                     {"queued", std::move(queued)}, {"scheduled", std::move(scheduled)}, {"first", std::move(first)},
                     {"last", std::move(last)}, {"end", std::move(end)}, {"spans", std::move(spans)}});
  }
  analysis::Table tail = analysis::SampleTailTable(results);
  std::erase_if(tail.rows, [&](const std::vector<analysis::Cell>& row) { return Text(CellOf(tail, row, "replica")) != "all"; });
  return {{"tail", analysis::ToJson(tail)}, {"outcomes", analysis::ToJson(analysis::SampleOutcomesTable(results))},
          {"steps", std::move(steps)}, {"dict", std::move(dict).ToJson()}, {"cap", share}};
}

}  // namespace

nlohmann::json ReportData(const std::vector<analysis::InputResult>& results, nlohmann::json summary,
                          const std::string& title, const std::string& version,
                          const analysis::Comparison* compare, const std::string& baseline,
                          const std::string& current) {
  const std::vector<std::string> stage_cols = {
      "step", "role", "stage", "start", "duration", "compute", "overlap", "comm_not_overlapped",
      "memory_only", "other_only", "idle", "bubble"};
  const std::vector<std::string> atom_cols = {
      "step", "start", "end", "partial", "partial_reason", "window", "compute_only", "comm_only",
      "overlap", "memory_only", "other_only", "idle"};
  Dict dict;
  json inputs = {{"name", json::array()}, {"rank", json::array()}, {"error", json::array()},
                 {"ops_sampling", json::array()}};
  json stages = EmptyColumnar(stage_cols, {"role", "stage"});
  json atoms = EmptyColumnar(atom_cols, {"partial_reason"});
  json input_diagnostics = json::array();  // [input, name, count] for every non-zero count
  json input_ops = json::object();          // input index → its top operators (small runs)
  struct Comm {
    int64_t ops = 0;
    double comm = 0, exposed = 0;
    std::set<int64_t> ranks;
  };
  std::map<std::string, Comm> comm;
  OpTotals ops;
  struct DiagByName {
    uint64_t count = 0, inputs = 0;
    std::vector<size_t> examples;
  };
  std::map<std::string, DiagByName> diag_by_name;
  const bool detail = results.size() <= kReportDetailInputs;
  for (size_t k = 0; k < results.size(); ++k) {
    const auto& r = results[k];
    AddInput(r, &inputs);
    if (!r.status.ok()) continue;
    const analysis::TraceAnalysis& a = r.analysis;
    AppendColumnar(analysis::StageTimeTable(a), k, stage_cols, &dict, &stages);
    AppendColumnar(analysis::StepAtomsTable(a), k, atom_cols, &dict, &atoms);
    for (const auto& [name, n] : a.diagnostics.counts) {
      if (n == 0) continue;
      if (detail) {
        input_diagnostics.push_back({k, name, n});
        continue;
      }
      DiagByName& d = diag_by_name[name];  // a big run: one row per name, not per input
      d.count += n;
      if (d.inputs++ < 3) d.examples.push_back(k);
    }
    const analysis::Table cg = analysis::CommByGroupTable(a);
    for (const auto& row : cg.rows) {
      Comm& c = comm[Text(CellOf(cg, row, "group"))];
      c.ops += static_cast<int64_t>(Real(CellOf(cg, row, "ops")));
      c.comm += Real(CellOf(cg, row, "communication"));
      c.exposed += Real(CellOf(cg, row, "comm_not_overlapped"));
      c.ranks.insert(a.rank);
    }
    AddInputOps(a, detail, ops, detail ? &input_ops[std::to_string(k)] : nullptr);
  }
  json diag_rows = json::array();  // [name, count, inputs, [example input indices]]
  for (const auto& [name, d] : diag_by_name) diag_rows.push_back({name, d.count, d.inputs, d.examples});
  json comm_rows = json::array();
  for (const auto& [group, c] : comm)
    comm_rows.push_back({{"group", group}, {"ranks", c.ranks.size()}, {"ops", c.ops},
                         {"communication", Number(c.comm)}, {"comm_not_overlapped", Number(c.exposed)}});
  std::vector<std::pair<std::pair<std::string, std::string>, Op>> sorted(ops.begin(), ops.end());
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return a.second.total > b.second.total; });
  if (sorted.size() > kReportTopOps) sorted.resize(kReportTopOps);
  json op_rows = json::array();
  for (const auto& [key, o] : sorted)
    op_rows.push_back({{"type", key.first}, {"name", key.second}, {"count", o.count},
                       {"total", Number(o.total)}, {"self", Number(o.self)}});
  // The run-level part of summary.json, without its per-input tables.
  json run = json::object();
  for (const char* k : {"format", "schema_version", "options", "stage_across_ranks",
                        "diagnostics", "diagnostic_severity", "diagnostic_details"})
    if (summary.contains(k)) run[k] = std::move(summary[k]);
  size_t dropped = 0;
  if (summary.contains("run_view")) run["run_view"] = CapRunView(summary["run_view"], kReportRunViewLanes, &dropped);
  run["run_view_lanes_left_out"] = dropped;

  char when[32] = "";
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  if (gmtime_r(&now, &utc) != nullptr) std::strftime(when, sizeof(when), "%Y-%m-%d %H:%M UTC", &utc);
  json data = {{"model", "rlprof-report"}, {"model_version", 2},
               {"title", title}, {"generated", when}, {"rlprof_version", version},
               {"run", std::move(run)}, {"inputs", std::move(inputs)},
               {"stages", std::move(stages)}, {"step_atoms", std::move(atoms)},
               {"input_diagnostics", std::move(input_diagnostics)},
               {"diagnostics_by_name", std::move(diag_rows)}, {"input_ops", std::move(input_ops)},
               {"input_ops_left_out", !detail}, {"comm", std::move(comm_rows)}, {"ops", std::move(op_rows)}};
  data["dict"] = std::move(dict).ToJson();
  data["memory"] = MemoryRows(results);
  data["activity"] = ActivityJson(results, detail);
  if (json a = AsyncJson(results); !a.is_null()) data["async"] = std::move(a);
  if (json sm = SamplesJson(results); !sm.is_null()) data["samples"] = std::move(sm);
  // The advisor's findings (docs/advise.md), at the top of the page; BuildRunReport redoes them
  // with the baseline when there is one (its regressions).
  data["findings"] = analysis::AdviceJson(analysis::Advise(results, analysis::BuildRunView(results)));
  // The cluster view (rlprof cluster): per-step balance of every column, slow ranks, and the
  // collectives with the largest start skew (the table comes sorted by it).
  if (!results.empty()) {
    analysis::ClusterResult cl = analysis::AnalyseCluster(results);
    if (cl.collectives.rows.size() > kReportCollectives) cl.collectives.rows.resize(kReportCollectives);
    data["cluster"] = {{"balance", analysis::ToJson(cl.balance)}, {"slow_ranks", analysis::ToJson(cl.slow_ranks)},
                       {"collectives", analysis::ToJson(cl.collectives)}};
  }
  if (compare != nullptr) {
    data["compare"] = analysis::ComparisonToJson(*compare);
    data["compare"]["baseline"] = baseline;
    data["compare"]["new"] = current;
  }
  return data;
}

}  // namespace rlprof::report
