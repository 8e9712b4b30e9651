// Table builders: TraceAnalysis → Tables (declarations of every output's columns).
#include "src/analysis/tables/tables.h"

#include <cmath>
#include <type_traits>

#include "src/analysis/passes/views.h"

namespace rlprof::analysis {

namespace {

double Us(int64_t ns) { return static_cast<double>(ns) / 1e3; }
double Ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }
Column Real(std::string name, std::string unit) { return {std::move(name), ColumnType::kReal, std::move(unit)}; }
Column Int(std::string name, std::string unit = "") { return {std::move(name), ColumnType::kInt, std::move(unit)}; }
Column Text(std::string name) { return {std::move(name), ColumnType::kText, ""}; }
// Kernel names: tens of thousands of rows, a few hundred distinct values (analysis.db interns them).
Column Repeats(Column c) {
  c.repeats = true;
  return c;
}
Cell Num(double v) { return std::isnan(v) ? Cell{} : Cell{v}; }

// A row built in place: a braced list would construct every cell twice (strings copied twice).
// For the tables with a row per operator or kernel.
template <typename... Ts>
std::vector<Cell> Row(Ts&&... v) {
  std::vector<Cell> r;
  r.reserve(sizeof...(v));
  (r.emplace_back(std::forward<Ts>(v)), ...);
  return r;
}

}  // namespace

Table StepTraceTimeTable(const TraceAnalysis& a) {
  Table t{"step_trace_time",
          {Int("Step"), Real("Computing", "us"), Real("Communication(Not Overlapped)", "us"),
           Real("Overlapped", "us"), Real("Communication", "us"), Real("Free", "us"),
           Real("Stage", "us"), Real("Bubble", "us"),
           Real("Communication(Not Overlapped and Exclude Receive)", "us"), Real("Preparing", "us")},
          {}};
  for (const auto& s : a.steps) {
    MsprofRow m = MsprofFromStep(s);
    t.rows.push_back({s.window.step, Us(m.computing), Us(m.comm_not_overlapped), Us(m.overlapped),
                      Us(m.communication), Us(m.free), Us(m.stage), Us(m.bubble),
                      Us(m.not_overlapped_excl_recv), Us(m.preparing)});
  }
  return t;
}

Table StepAtomsTable(const TraceAnalysis& a) {
  Table t{"step_atoms",
          {Int("rank"), Int("step"), Int("start", "ns"), Int("end", "ns"), Int("host_start", "ns"),
           Int("host_end", "ns"), Int("partial"), Text("partial_reason"), Int("window", "ns"),
           Int("compute_only", "ns"), Int("comm_only", "ns"), Int("overlap", "ns"),
           Int("memory_only", "ns"), Int("memcpy_only", "ns"), Int("memset_only", "ns"),
           Int("other_only", "ns"), Int("idle", "ns"), Int("recv_sum", "ns"), Int("preparing", "ns"),
           Int("kernels"), Int("launches"), Int("overflow", "ns")},
          {}};
  for (const auto& s : a.steps) {
    const auto& w = s.window;
    const Atoms& at = s.atoms;
    t.rows.push_back({a.rank, w.step, w.start, w.end, w.host_start, w.host_end,
                      static_cast<int64_t>(w.partial), w.partial_reason, w.end - w.start,
                      at.compute_only, at.comm_only, at.overlap, at.memory_only,
                      s.hist.memcpy_only(), s.hist.memset_only(), at.other_only, at.idle,
                      s.recv_sum, s.preparing, s.kernels, w.launches, s.overflow});
  }
  return t;
}

Table StageTimeTable(const TraceAnalysis& a) {
  Table t{"stage_time",
          {Int("rank"), Int("step"), Text("role"), Text("stage"), Real("start", "us"),
           Real("duration", "us"), Real("compute", "us"), Real("communication", "us"),
           Real("overlap", "us"), Real("comm_not_overlapped", "us"), Real("memory_only", "us"),
           Real("other_only", "us"), Real("idle", "us"), Real("bubble", "us"),
           // Exact: an epoch-based µs start (≈ 1.7e15) has no exact double.
           Int("start_ns", "ns")},
          {}};
  for (const auto& s : a.stages) {
    const Atoms& at = s.atoms;
    t.rows.push_back({a.rank, s.step, s.role, s.name, Us(s.start), Us(s.duration), Us(at.compute()),
                      Us(at.comm()), Us(at.overlap), Us(at.comm_only), Us(at.memory_only),
                      Us(at.other_only), Us(at.idle), Us(s.recv_sum), s.start});
  }
  return t;
}

Table CommByGroupTable(const TraceAnalysis& a) {
  Table t{"comm_by_group",
          {Int("rank"), Int("step"), Text("group"), Int("ops"), Real("communication", "us"),
           Real("comm_not_overlapped", "us")},
          {}};
  for (const auto& g : a.comm_by_group)
    t.rows.push_back({a.rank, g.step, g.group, g.ops, Us(g.comm), Us(g.comm_not_overlapped)});
  return t;
}

Table OpStatisticTable(const TraceAnalysis& a) {
  Table t{"op_statistic",
          {Text("type"), Text("name"), Text("shapes"), Int("count"), Real("total", "us"),
           Real("self", "us"), Real("mean", "us"), Real("min", "us"), Real("max", "us"),
           Real("p50", "us"), Real("p99", "us"), Real("device_total", "us"), Int("kernels")},
          {}};
  t.rows.reserve(a.host_ops.size() + a.host_ops_by_shape.size() + a.kernels.size());
  auto add = [&](const char* type, const std::vector<OpStat>& v) {
    for (const auto& s : v)
      t.rows.push_back(Row(std::string(type), s.name, s.shapes, s.count, Us(s.total), Us(s.self),
                           s.mean / 1e3, Us(s.min), Us(s.max), Us(s.p50), Us(s.p99),
                           Us(s.device_total), s.kernels));
  };
  add("host", a.host_ops);
  add("host_by_shape", a.host_ops_by_shape);
  add("device", a.kernels);
  return t;
}

Table ModuleViewTable(const TraceAnalysis& a) {
  Table t{"module_view",
          {Text("module"), Text("class"), Int("depth"), Int("calls"), Real("total", "us"),
           Real("self", "us"), Int("ops"), Real("op_time", "us")},
          {}};
  for (const auto& m : a.modules)
    t.rows.push_back({m.path, m.cls, m.depth, m.calls, Us(m.total), Us(m.self), m.ops,
                      Us(m.op_time)});
  return t;
}

Table UserRangeTable(const TraceAnalysis& a) {
  Table t{"user_ranges",
          {Text("name"), Text("track"), Text("kind"), Int("count"), Real("total", "us"),
           Real("mean", "us"), Real("min", "us"), Real("p50", "us"), Real("max", "us")},
          {}};
  for (const auto& r : a.user_ranges) {
    const int64_t mean = r.count > 0 ? r.total / r.count : 0;
    t.rows.push_back({r.name, r.track, std::string(r.mark ? "mark" : "range"), r.count,
                      Us(r.total), Us(mean), Us(r.min), Us(r.p50), Us(r.max)});
  }
  return t;
}

Table MemoryPeakTable(const TraceAnalysis& a) {
  Table t{"memory_peak",
          {Int("step"), Text("role"), Text("stage"), Text("series"), Real("at_start", "bytes"),
           Real("peak", "bytes"), Real("at_end", "bytes"), Int("allocations"),
           Int("allocated")},
          {}};
  for (const auto& m : a.memory_peaks)
    t.rows.push_back({m.step, m.role, m.stage, m.series, m.at_start, m.peak, m.at_end,
                      m.allocations, m.allocated});
  return t;
}

Table OpsByFrameTable(const TraceAnalysis& a) {
  Table t{"ops_by_frame",
          {Text("frame"), Int("ops"), Real("total", "us"), Text("top_op"), Real("top_op_time", "us")},
          {}};
  for (const auto& f : a.ops_by_frame)
    t.rows.push_back({f.frame, f.ops, Us(f.total), f.top_op, Us(f.top_op_time)});
  return t;
}

namespace {
// kernel_details from `rows`: their names and streams copied, or moved when `Rows` is an rvalue
// (TakeAllTables: one heap string per kernel fewer to copy and to free).
template <typename Rows>
Table KernelDetailsFrom(Rows&& rows) {
  Table t{"kernel_details",
          {Int("Step Id"), Repeats(Text("Name")), Text("Type"), Text("Stream"), Real("Start Time", "us"),
           Real("Duration", "us"), Real("Wait Time", "us"), Int("start_ns", "ns")},
          {}};
  t.rows.reserve(rows.size());
  for (auto& k : rows) {
    Cell name, stream;
    if constexpr (std::is_rvalue_reference_v<Rows&&>) {
      name = std::move(k.name);
      stream = std::move(k.stream);
    } else {
      name = k.name;
      stream = k.stream;
    }
    t.rows.push_back(Row(k.step < 0 ? Cell{} : Cell{k.step}, std::move(name), std::string(WorkClassName(k.cls)),
                         std::move(stream), Us(k.start), Us(k.dur), Us(k.wait), k.start));
  }
  return t;
}
}  // namespace

Table KernelDetailsTable(const TraceAnalysis& a) { return KernelDetailsFrom(a.kernel_rows); }

Table HtaTemporalTable(const TraceAnalysis& a) {
  Table t{"hta_temporal_breakdown",
          {Int("rank"), Real("idle_time", "us"), Real("compute_time", "us"),
           Real("non_compute_time", "us"), Real("kernel_time", "us"), Real("idle_time_pctg", "%"),
           Real("compute_time_pctg", "%"), Real("non_compute_time_pctg", "%"),
           Real("comp_comm_overlap_pctg", "%")},
          {}};
  HtaPercent p = HtaPercentages(a.hta);
  t.rows.push_back({a.rank, Us(a.hta.idle), Us(a.hta.compute), Us(a.hta.non_compute),
                    Us(a.hta.kernel_time), p.idle, p.compute, p.non_compute,
                    Num(p.comm_comp_overlap)});
  return t;
}

Table HtaKernelTypeTable(const TraceAnalysis& a) {
  Table t{"hta_kernel_type_breakdown", {Int("rank"), Text("kernel_type"), Real("sum", "us"), Real("percentage", "%")}, {}};
  int64_t total = 0;
  for (const auto& r : a.kernel_types) total += r.time;
  for (const auto& r : a.kernel_types) {
    // HTA rounds to one decimal with numpy (half to even).
    const double pct = total > 0 ? std::nearbyint(1000.0 * static_cast<double>(r.time) / static_cast<double>(total)) / 10.0 : 0.0;
    t.rows.push_back({a.rank, r.kernel_type, Us(r.time), pct});
  }
  return t;
}

Table HtaIdleTable(const TraceAnalysis& a) {
  Table t{"hta_idle_breakdown",
          {Int("rank"), Text("stream"), Text("idle_category"), Real("idle_time", "us"),
           Real("idle_time_ratio", "fraction")},
          {}};
  for (const auto& r : a.idle_breakdown) {
    const int64_t total = r.host_wait + r.kernel_wait + r.other;
    auto ratio = [&](int64_t v) { return total > 0 ? Round2(static_cast<double>(v) / total) : 0.0; };
    t.rows.push_back({a.rank, r.stream, std::string("host_wait"), Us(r.host_wait), ratio(r.host_wait)});
    t.rows.push_back({a.rank, r.stream, std::string("kernel_wait"), Us(r.kernel_wait), ratio(r.kernel_wait)});
    t.rows.push_back({a.rank, r.stream, std::string("other"), Us(r.other), ratio(r.other)});
  }
  return t;
}

Table GpuTimelineTable(const TraceAnalysis& a) {
  Table t{"gpu_timeline", {Text("type"), Real("time ms", "ms"), Real("percent", "%")}, {}};
  const auto& r = a.tracelens;
  const std::pair<const char*, int64_t> rows[] = {
      {"computation_time", r.computation}, {"exposed_comm_time", r.exposed_comm},
      {"exposed_memcpy_time", r.exposed_memcpy}, {"busy_time", r.busy}, {"idle_time", r.idle},
      {"total_time", r.total}, {"total_comm_time", r.total_comm}, {"total_memcpy_time", r.total_memcpy}};
  for (const auto& [name, v] : rows) {
    const double pct = r.total > 0 ? 100.0 * static_cast<double>(v) / static_cast<double>(r.total) : 0.0;
    t.rows.push_back({std::string(name), Ms(v), pct});
  }
  return t;
}

Table ClassTable(const TraceAnalysis& a) {
  Table t{"classes", {Text("class"), Int("count"), Real("total", "us")}, {}};
  for (int i = 0; i < kWorkClassCount; ++i)
    t.rows.push_back({std::string(WorkClassName(static_cast<WorkClass>(i))), a.classes[i].count,
                      Us(a.classes[i].total)});
  return t;
}

Table TbStepTimeTable(const TraceAnalysis& a) {
  Table t{"tb_step_time",
          {Int("step"), Real("kernel", "us"), Real("memcpy", "us"), Real("memset", "us"),
           Real("communication", "us"), Real("runtime", "us"), Real("dataloader", "us"),
           Real("cpu_exec", "us"), Real("other", "us"), Real("total", "us")},
          {}};
  for (const auto& r : a.tb_steps)
    t.rows.push_back({r.step, Us(r.kernel), Us(r.memcpy), Us(r.memset), Us(r.communication), Us(r.runtime),
                      Us(r.dataloader), Us(r.cpu_exec), Us(r.other), Us(r.total)});
  return t;
}

Table DiagnosticsTable(const Diagnostics& d) {
  Table t{"diagnostics", {Text("name"), Int("count")}, {}};
  for (const auto& [k, v] : d.counts) t.rows.push_back({k, static_cast<int64_t>(v)});
  return t;
}

namespace {
// `take`: a's own kernel rows, moved into kernel_details and freed; null: copied.
std::vector<Table> AllTablesOf(const TraceAnalysis& a, std::vector<KernelRow>* take) {
  // Moved in one by one: a braced list would copy every table (every row, every string).
  std::vector<Table> out;
  out.reserve(16);
  out.push_back(StepTraceTimeTable(a));
  out.push_back(StepAtomsTable(a));
  out.push_back(StageTimeTable(a));
  out.push_back(CommByGroupTable(a));
  out.push_back(OpStatisticTable(a));
  if (take != nullptr) {
    out.push_back(KernelDetailsFrom(std::move(*take)));
    std::vector<KernelRow>().swap(*take);
  } else {
    out.push_back(KernelDetailsTable(a));
  }
  out.push_back(HtaTemporalTable(a));
  out.push_back(HtaIdleTable(a));
  out.push_back(HtaKernelTypeTable(a));
  out.push_back(GpuTimelineTable(a));
  out.push_back(ClassTable(a));
  out.push_back(ModuleViewTable(a));
  out.push_back(MemoryPeakTable(a));
  out.push_back(OpsByFrameTable(a));
  out.push_back(TbStepTimeTable(a));
  out.push_back(DiagnosticsTable(a.diagnostics));
  return out;
}
}  // namespace

std::vector<Table> AllTables(const TraceAnalysis& a) { return AllTablesOf(a, nullptr); }

std::vector<Table> TakeAllTables(TraceAnalysis* a) { return AllTablesOf(*a, &a->kernel_rows); }

Table ConcatWithInput(const std::vector<std::pair<std::string, const Table*>>& parts) {
  Table out;
  if (parts.empty()) return out;
  out.name = parts.front().second->name;
  out.columns.push_back(Text("input"));
  for (const auto& c : parts.front().second->columns) out.columns.push_back(c);
  for (const auto& [input, t] : parts) {
    for (const auto& r : t->rows) {
      std::vector<Cell> row{input};
      row.insert(row.end(), r.begin(), r.end());
      out.rows.push_back(std::move(row));
    }
  }
  return out;
}

}  // namespace rlprof::analysis
