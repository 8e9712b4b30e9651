// rlprof._analysis: the pybind11 extension behind `rlprof.analysis` (python/rlprof/analysis.py).
// A thin layer over the analysis library's run pipeline (src/analysis/run/run_pipeline.h): the same
// finding, reading, analysing and tables as `rlprof analyse`, handed to Python column by column
// (numbers as native-endian bytearrays of int64 / float64 that numpy wraps without a copy,
// np.frombuffer; text as lists of str) for pandas to wrap without building Python rows. The
// extension itself does not use numpy's C API (pybind11 2.10's numpy support misreads numpy 2
// descriptors), so it imports without numpy.
//
// GIL: analysing, comparing, clustering and writing release it (they run for seconds on big
// traces, on `jobs` worker threads); building the column arrays holds it.
// Errors: usage errors raise (ValueError for a bad option, FileNotFoundError when no trace is
// found under the paths, OSError when outputs cannot be written); bad data never does — an
// unreadable input keeps its error in inputs(), corrupt events are counted in diagnostics().
// Text from traces that is not UTF-8 is decoded with U+FFFD replacements, never an exception.
// Thread-safety: a Run is immutable after analyse(); use it from any thread.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <limits>
#include <memory>
#include <set>
#include <tuple>
#include <string>
#include <utility>
#include <vector>

#include "src/analysis/run/cluster.h"
#include "src/analysis/run/compare.h"
#include "src/analysis/run/input_codec.h"
#include "src/analysis/readers/readers.h"
#include "src/analysis/run/run_pipeline.h"
#include "src/analysis/tables/tables.h"
#include "src/base/version.h"
#include "src/format/diagnostics.h"
#include "src/report/html_report.h"

namespace py = pybind11;

namespace rlprof::python {
namespace {

using analysis::Cell;
using analysis::ColumnType;
using analysis::Table;

// The exception a Status becomes (only for usage and output errors; see the file comment).
[[noreturn]] void Raise(const base::Status& s) {
  switch (s.code()) {
    case base::StatusCode::kNotFound: {
      py::object e = py::module_::import("builtins").attr("FileNotFoundError")(s.message());
      PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(e.ptr())), e.ptr());
      throw py::error_already_set();
    }
    case base::StatusCode::kIoError: {
      py::object e = py::module_::import("builtins").attr("OSError")(s.message());
      PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(e.ptr())), e.ptr());
      throw py::error_already_set();
    }
    default: throw py::value_error(s.message());
  }
}

py::str Str(const std::string& s) {
  PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace");
  if (o == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(o);
}

py::object Buffer(const void* data, size_t bytes) {
  PyObject* o = PyByteArray_FromStringAndSize(static_cast<const char*>(data), static_cast<Py_ssize_t>(bytes));
  if (o == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(o);
}

// One column: a bytearray of int64 (ints without nulls) or float64 (reals; null → NaN), or a
// list (text; ints with nulls, whose nulls are None: pandas makes those the nullable Int64).
py::object ColumnData(const Table& t, size_t c) {
  const size_t n = t.rows.size();
  const ColumnType type = t.columns[c].type;
  if (type == ColumnType::kText) {
    py::list out(n);
    for (size_t i = 0; i < n; ++i) {
      const Cell& v = t.rows[i][c];
      if (const auto* s = std::get_if<std::string>(&v)) out[i] = Str(*s);
      else out[i] = py::none();
    }
    return out;
  }
  if (type == ColumnType::kReal) {
    std::vector<double> v(n);
    for (size_t i = 0; i < n; ++i) {
      const Cell& cell = t.rows[i][c];
      if (const auto* d = std::get_if<double>(&cell)) v[i] = *d;
      else if (const auto* k = std::get_if<int64_t>(&cell)) v[i] = static_cast<double>(*k);
      else v[i] = std::numeric_limits<double>::quiet_NaN();
    }
    return Buffer(v.data(), n * sizeof(double));
  }
  bool nulls = false;
  for (size_t i = 0; i < n && !nulls; ++i) nulls = !std::holds_alternative<int64_t>(t.rows[i][c]);
  if (nulls) {
    py::list out(n);
    for (size_t i = 0; i < n; ++i) {
      const Cell& v = t.rows[i][c];
      if (const auto* k = std::get_if<int64_t>(&v)) out[i] = py::int_(*k);
      else out[i] = py::none();
    }
    return out;
  }
  std::vector<int64_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = std::get<int64_t>(t.rows[i][c]);
  return Buffer(v.data(), n * sizeof(int64_t));
}

// {"name", "columns": [..], "types": ["int"|"real"|"text"], "units": [..], "data": [col, ..]}
py::dict TableToPy(const Table& t) {
  py::list names, types, units, data;
  for (size_t c = 0; c < t.columns.size(); ++c) {
    const auto& col = t.columns[c];
    names.append(Str(col.name));
    types.append(col.type == ColumnType::kInt ? "int" : col.type == ColumnType::kReal ? "real" : "text");
    units.append(Str(col.unit));
    data.append(ColumnData(t, c));
  }
  py::dict d;
  d["name"] = Str(t.name);
  d["columns"] = names;
  d["types"] = types;
  d["units"] = units;
  d["data"] = data;
  return d;
}

// Diagnostics as a table: scope, name, count, severity, source, description (the catalogue's).
void AddDiagnostics(Table* t, const std::string& scope, const analysis::Diagnostics& d) {
  for (const auto& [name, count] : d.counts) {
    const format::DiagnosticSpec* spec = format::FindDiagnostic(name);
    t->rows.push_back({scope, name, static_cast<int64_t>(count),
                       std::string(format::SeverityName(format::DiagnosticSeverity(name))),
                       spec ? std::string(spec->source) : std::string(),
                       spec ? std::string(spec->description) : std::string()});
  }
}

Table DiagnosticsTable() {
  return Table{"diagnostics",
               {{"input", ColumnType::kText, ""},
                {"name", ColumnType::kText, ""},
                {"count", ColumnType::kInt, ""},
                {"severity", ColumnType::kText, ""},
                {"source", ColumnType::kText, ""},
                {"description", ColumnType::kText, ""}},
               {}};
}

py::list Details(const analysis::Diagnostics& d) {
  py::list out;
  for (const auto& s : d.details) out.append(Str(s));
  return out;
}

using RunPtr = std::shared_ptr<const analysis::RunAnalysis>;

RunPtr Analyse(const std::vector<std::string>& paths, const std::string& rules, const std::string& assign,
               const std::string& compat, const std::string& step_marker, size_t jobs,
               const py::object& progress, size_t activity) {
  auto cfg = analysis::MakeRunConfig({.rules = rules, .assign = assign, .compat = compat,
                                      .step_marker = step_marker},
                                     jobs);
  if (!cfg.ok()) {
    // A rules file that is missing is a FileNotFoundError, every other setting a ValueError.
    if (cfg.status().code() == base::StatusCode::kNotFound) Raise(cfg.status());
    throw py::value_error(cfg.status().message());
  }
  cfg->options.activity_spans = activity;
  // progress(done, total) from the worker threads, with the GIL taken for the call; what it
  // raises is reported as unraisable (sys.unraisablehook), never stops the analysis. The
  // callable is referenced, not copied: no reference counting without the GIL.
  if (!progress.is_none()) {
    const py::object* fn = &progress;
    cfg->progress = [fn](size_t done, size_t total) {
      py::gil_scoped_acquire gil;
      try {
        (*fn)(done, total);
      } catch (py::error_already_set& e) {
        e.discard_as_unraisable("rlprof.analysis progress callback");
      }
    };
  }
  base::StatusOr<analysis::RunAnalysis> run = base::Internal("not run");
  {
    py::gil_scoped_release release;
    run = analysis::AnalyseRun(paths, *cfg);
  }
  cfg->progress = nullptr;
  if (!run.ok()) Raise(run.status());
  return std::make_shared<const analysis::RunAnalysis>(std::move(*run));
}

py::dict InputsTable(const analysis::RunAnalysis& r) {
  Table t{"inputs",
          {{"input", ColumnType::kText, ""},
           {"path", ColumnType::kText, ""},
           {"format", ColumnType::kText, ""},
           {"rank", ColumnType::kInt, ""},
           {"cpu_only", ColumnType::kInt, ""},
           {"steps", ColumnType::kInt, ""},
           {"stages", ColumnType::kInt, ""},
           {"error", ColumnType::kText, ""}},
          {}};
  for (const auto& in : r.inputs) {
    if (in.status.ok()) {
      const auto& a = in.analysis;
      t.rows.push_back({in.name, in.input, a.format, a.rank, static_cast<int64_t>(a.cpu_only),
                        static_cast<int64_t>(a.steps.size()), static_cast<int64_t>(a.stages.size()),
                        Cell{}});
    } else {
      t.rows.push_back({in.name, in.input, Cell{}, Cell{}, Cell{}, Cell{}, Cell{}, in.status.ToString()});
    }
  }
  return TableToPy(t);
}

py::dict RunDiagnostics(const analysis::RunAnalysis& r) {
  Table t = DiagnosticsTable();
  for (const auto& in : r.inputs)
    if (in.status.ok()) AddDiagnostics(&t, in.name, in.analysis.diagnostics);
  // Run level (input ""): finding inputs, unreadable inputs, building the run view.
  analysis::Diagnostics run = r.found;
  for (const auto& in : r.inputs)
    if (!in.status.ok()) run.Note("unreadable_inputs", in.input + ": " + in.status.message());
  run.Merge(r.view.diagnostics);
  AddDiagnostics(&t, "", run);
  py::dict d = TableToPy(t);
  analysis::Diagnostics all = r.AllDiagnostics();
  d["details"] = Details(all);
  return d;
}

// The Python object: the analysed run, and its tables once asked for (built once, with the
// GIL released; converted to Python one table at a time).
struct PyRun {
  RunPtr run;
  std::shared_ptr<const std::vector<Table>> tables;

  const std::vector<Table>& Tables() {
    if (!tables) {
      std::shared_ptr<const std::vector<Table>> built;
      {
        py::gil_scoped_release release;
        built = std::make_shared<const std::vector<Table>>(analysis::RunTables(*run));
      }
      if (!tables) tables = std::move(built);  // another thread may have built them meanwhile
    }
    return *tables;
  }
};

py::list TableNames(PyRun& r) {
  py::list out;
  for (const auto& t : r.Tables()) out.append(Str(t.name));
  return out;
}

py::dict TablePy(PyRun& r, const std::string& name) {
  for (const auto& t : r.Tables())
    if (t.name == name) return TableToPy(t);
  throw py::key_error("no table '" + name + "'");
}

py::dict ComparePy(const RunPtr& base, const RunPtr& test, size_t top) {
  if (top == 0) throw py::value_error("top must be at least 1");
  analysis::Comparison c;
  {
    py::gil_scoped_release release;
    c = analysis::CompareRuns(base->inputs, test->inputs, {.top_ops = top});
    // As `rlprof compare`: one sink with what each side's search and inputs counted.
    c.diagnostics.Merge(base->found);
    c.diagnostics.Merge(test->found);
    for (const auto* side : {base.get(), test.get()})
      for (const auto& in : side->inputs)
        if (in.status.ok()) c.diagnostics.Merge(in.analysis.diagnostics);
  }
  py::dict d;
  for (const Table* t : {&c.steps, &c.stages, &c.ops}) d[Str(t->name)] = TableToPy(*t);
  Table diag = DiagnosticsTable();
  AddDiagnostics(&diag, "", c.diagnostics);
  d["diagnostics"] = TableToPy(diag);
  d["details"] = Details(c.diagnostics);
  return d;
}

py::dict ClusterPy(const RunPtr& run) {
  analysis::ClusterResult c;
  {
    py::gil_scoped_release release;
    c = analysis::AnalyseCluster(run->inputs);
    c.diagnostics.Merge(run->found);
    for (const auto& in : run->inputs)
      if (in.status.ok()) c.diagnostics.Merge(in.analysis.diagnostics);
  }
  py::dict d;
  for (const Table* t : {&c.step_time, &c.balance, &c.slow_ranks, &c.collectives}) d[Str(t->name)] = TableToPy(*t);
  Table diag = DiagnosticsTable();
  AddDiagnostics(&diag, "", c.diagnostics);
  d["diagnostics"] = TableToPy(diag);
  d["details"] = Details(c.diagnostics);
  return d;
}

py::list Write(const RunPtr& run, const std::string& dir, const std::vector<std::string>& exports, bool report,
               const std::string& title) {
  base::StatusOr<analysis::RunOutputs> w = base::Internal("not run");
  base::Status page;
  {
    py::gil_scoped_release release;
    w = analysis::WriteRunOutputs(*run, dir, {.exports = exports});
    if (w.ok() && report) {
      // As `rlprof analyse`: the page's title is the path, or how many paths.
      const std::string t = !title.empty()        ? title
                            : run->paths.size() == 1 ? run->paths[0]
                                                     : std::to_string(run->paths.size()) + " paths";
      page = report::WriteHtmlReport(dir + "/report.html",
                                     report::ReportData(run->inputs, w->summary, t, base::Version()));
    }
  }
  if (!w.ok()) {
    if (w.status().code() == base::StatusCode::kInvalidArgument) throw py::value_error(w.status().message());
    Raise(base::IoError(w.status().message()));
  }
  if (!page.ok()) Raise(base::IoError(page.message()));
  py::list files;
  for (const auto& f : w->written) files.append(Str(f));
  if (report) files.append(Str(dir + "/report.html"));
  for (const auto& f : w->exported) files.append(Str(f));
  return files;
}

// Exact int64 ns columns for the rows of a µs table (stage_time, kernel_details), in the
// table's row order (inputs in order, each input's rows in order): µs in a double cannot hold
// every ns of an epoch-based timestamp, these can. {} for other tables.
py::dict NsColumns(const PyRun& r, const std::string& name) {
  std::vector<std::pair<std::string, std::vector<int64_t>>> cols;
  if (name == "stage_time") {
    cols = {{"start_ns", {}}, {"end_ns", {}}, {"duration_ns", {}}};
    for (const auto& in : r.run->inputs) {
      if (!in.status.ok()) continue;
      for (const auto& st : in.analysis.stages) {
        cols[0].second.push_back(st.start);
        cols[1].second.push_back(st.end);
        cols[2].second.push_back(st.duration);
      }
    }
  } else if (name == "kernel_details") {
    cols = {{"start_ns", {}}, {"duration_ns", {}}, {"wait_ns", {}}};
    for (const auto& in : r.run->inputs) {
      if (!in.status.ok()) continue;
      for (const auto& k : in.analysis.kernel_rows) {
        cols[0].second.push_back(k.start);
        cols[1].second.push_back(k.dur);
        cols[2].second.push_back(k.wait);
      }
    }
  }
  py::dict d;
  for (const auto& [col, v] : cols) d[Str(col)] = Buffer(v.data(), v.size() * sizeof(int64_t));
  return d;
}

// Device and host activity lanes (load(activity=N)): one row per span, exact ns.
py::dict ActivityTable(const PyRun& r) {
  Table t{"activity",
          {{"input", ColumnType::kText, ""},
           {"rank", ColumnType::kInt, ""},
           {"lane", ColumnType::kText, ""},
           {"device", ColumnType::kInt, ""},
           {"start_ns", ColumnType::kInt, "ns"},
           {"end_ns", ColumnType::kInt, "ns"},
           {"busy_ns", ColumnType::kInt, "ns"},
           {"events", ColumnType::kInt, ""},
           {"class", ColumnType::kText, ""},
           {"longest", ColumnType::kText, ""},
           {"longest_ns", ColumnType::kInt, "ns"}},
          {}};
  for (const auto& in : r.run->inputs) {
    if (!in.status.ok()) continue;
    for (const auto& l : in.analysis.activity)
      for (const auto& x : l.spans)
        t.rows.push_back({in.name, in.analysis.rank, l.name, static_cast<int64_t>(l.device), x.start, x.end, x.busy,
                          x.count, std::string(analysis::WorkClassName(x.cls)), x.top, x.top_dur});
  }
  return TableToPy(t);
}

// The run view in long form, exact: one row per (row of the run view, rank lane) with a value.
py::dict RunViewLong(const PyRun& r) { return TableToPy(analysis::RunViewLongTable(r.run->view)); }

// ---- analysis where the captures are (rlprof.distributed, docs/scale.md) ----

// What this node holds of `paths`: (inputs as bytes, sorted; EncodeDiagnostics of the search;
// [(path, why)] for each path this node cannot search — not there, or unreadable).
py::tuple FindInputs(const std::vector<std::string>& paths) {
  std::set<std::string> inputs;
  analysis::Diagnostics found;
  std::vector<std::pair<std::string, std::string>> missing;
  {
    py::gil_scoped_release release;
    for (const auto& p : paths) {
      auto r = analysis::FindTraceInputs({p}, &found);
      if (r.ok()) inputs.insert(r->begin(), r->end());
      else missing.emplace_back(p, r.status().message());
    }
  }
  py::list in, miss;
  for (const auto& i : inputs) in.append(py::bytes(i));
  for (const auto& [p, why] : missing) miss.append(py::make_tuple(py::bytes(p), Str(why)));
  return py::make_tuple(in, py::bytes(analysis::EncodeDiagnostics(found)), miss);
}

analysis::RunConfig RemoteConfig(const std::string& rules_yaml, const std::string& rules_origin,
                                 const std::string& assign, const std::string& compat,
                                 const std::string& step_marker) {
  analysis::RunSettings settings;
  settings.assign = assign;
  settings.compat = compat;
  settings.step_marker = step_marker;
  auto cfg = analysis::MakeRunConfig(settings, 1);
  if (!cfg.ok()) throw py::value_error(cfg.status().message());
  if (!rules_yaml.empty()) {  // the driver's rules file, shipped as text: nodes need not have it
    auto c = analysis::Classifier::FromRulesYaml(rules_yaml, rules_origin);
    if (!c.ok()) throw py::value_error(c.status().message());
    cfg->classifier = std::move(*c);
  }
  return std::move(*cfg);
}

// One input analysed here (AnalyseInputs, as `rlprof analyse`), as EncodeInputResult bytes.
py::bytes AnalyseInputBytes(const std::string& input, const std::string& name, const std::string& rules_yaml,
                            const std::string& rules_origin, const std::string& assign,
                            const std::string& compat, const std::string& step_marker) {
  const analysis::RunConfig cfg = RemoteConfig(rules_yaml, rules_origin, assign, compat, step_marker);
  std::string bytes;
  {
    py::gil_scoped_release release;
    std::vector<analysis::InputResult> r = analysis::AnalyseInputs({input}, cfg.classifier, cfg.options, 1);
    r[0].name = name;
    bytes = analysis::EncodeInputResult(r[0]);
  }
  return py::bytes(bytes);
}

}  // namespace

PYBIND11_MODULE(_analysis, m) {
  m.doc() = "rlprof's analysis library (src/analysis/run/run_pipeline.h); use rlprof.analysis";
  py::class_<PyRun, std::shared_ptr<PyRun>>(m, "Run")
      .def_property_readonly("paths", [](const PyRun& r) {
        py::list out;  // bytes: paths need not be UTF-8
        for (const auto& p : r.run->paths) out.append(py::bytes(p));
        return out;
      })
      .def_property_readonly("assign", [](const PyRun& r) {
        return std::string(analysis::AssignModeName(r.run->options.assign));
      })
      .def_property_readonly("compat", [](const PyRun& r) {
        return std::string(analysis::CompatModeName(r.run->options.compat));
      })
      .def_property_readonly("step_marker", [](const PyRun& r) { return r.run->options.step_marker; })
      .def("table_names", &TableNames, "The run's tables, as analysis.db holds them")
      .def("table", &TablePy, py::arg("name"), "One table: {name, columns, types, units, data}")
      .def("run_view_long", &RunViewLong, "The run view, one row per (row, rank), exact ns")
      .def("ns_columns", &NsColumns, py::arg("name"), "Exact ns (int64) columns of a µs table's rows")
      .def("inputs", [](const PyRun& r) { return InputsTable(*r.run); }, "One row per input found")
      .def("activity", &ActivityTable, "Device and host activity spans (analyse(activity=N))")
      .def("diagnostics", [](const PyRun& r) { return RunDiagnostics(*r.run); },
           "Every diagnostic with the catalogue's severity")
      .def("summary_json", [](const PyRun& r) {
        std::string s;
        {
          py::gil_scoped_release release;
          s = analysis::RunSummaryJson(*r.run).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        }
        return Str(s);
      });
  m.def("analyse", [](const std::vector<std::string>& paths, const std::string& rules, const std::string& assign,
                      const std::string& compat, const std::string& step_marker, size_t jobs,
                      const py::object& progress, size_t activity) {
          auto r = std::make_shared<PyRun>();
          r->run = Analyse(paths, rules, assign, compat, step_marker, jobs, progress, activity);
          return r;
        },
        py::arg("paths"), py::arg("rules") = "", py::arg("assign") = "clip", py::arg("compat") = "native",
        py::arg("step_marker") = "", py::arg("jobs") = 2, py::arg("progress") = py::none(), py::arg("activity") = 0);
  m.def("check_options", [](const std::string& rules_yaml, const std::string& rules_origin, const std::string& assign,
                            const std::string& compat, const std::string& step_marker) {
          RemoteConfig(rules_yaml, rules_origin, assign, compat, step_marker);
        },
        py::arg("rules_yaml"), py::arg("rules_origin"), py::arg("assign"), py::arg("compat"), py::arg("step_marker"),
        "ValueError for a bad option or rules text (before a cluster is asked anything)");
  m.def("find_inputs", &FindInputs, py::arg("paths"),
        "What this node holds of the paths: (inputs, encoded search diagnostics, [(path, why)])");
  m.def("input_names", [](const std::vector<std::string>& inputs) {
          py::list out;
          for (const auto& n : analysis::InputNames(inputs)) out.append(py::bytes(n));
          return out;
        },
        py::arg("inputs"), "The inputs' short unique names (as `rlprof analyse` names their folders)");
  m.def("analyse_input", &AnalyseInputBytes, py::arg("input"), py::arg("name"), py::arg("rules_yaml") = "",
        py::arg("rules_origin") = "", py::arg("assign") = "clip", py::arg("compat") = "native",
        py::arg("step_marker") = "", "One input analysed here, encoded (src/analysis/run/input_codec.h)");
  m.def("assemble", [](const std::vector<std::string>& paths, const std::string& assign, const std::string& compat,
                       const std::string& step_marker, const std::vector<std::string>& found,
                       const std::vector<std::tuple<std::string, std::string, std::string, std::string>>& inputs,
                       const std::vector<std::string>& missing, const std::vector<std::string>& lost_searches) {
          const analysis::RunConfig cfg = RemoteConfig("", "", assign, compat, step_marker);
          std::vector<analysis::RemoteInput> in;
          in.reserve(inputs.size());
          for (const auto& [input, name, result, lost] : inputs) in.push_back({input, name, result, lost});
          auto r = std::make_shared<PyRun>();
          py::gil_scoped_release release;
          r->run = std::make_shared<const analysis::RunAnalysis>(
              analysis::AssembleRemoteRun(paths, cfg.options, found, in, missing, lost_searches));
          return r;
        },
        py::arg("paths"), py::arg("assign"), py::arg("compat"), py::arg("step_marker"), py::arg("found"),
        py::arg("inputs"), py::arg("missing"), py::arg("lost_searches"),
        "The run from every node's results: inputs as (input, name, result bytes, why lost or '')");
  m.def("compare", [](const PyRun& b, const PyRun& t, size_t top) { return ComparePy(b.run, t.run, top); },
        py::arg("baseline"), py::arg("new"), py::arg("top") = 30);
  m.def("cluster", [](const PyRun& r) { return ClusterPy(r.run); }, py::arg("run"));
  m.def("write", [](const PyRun& r, const std::string& dir, const std::vector<std::string>& exports, bool report,
                    const std::string& title) { return Write(r.run, dir, exports, report, title); },
        py::arg("run"), py::arg("dir"), py::arg("exports") = std::vector<std::string>{}, py::arg("report") = true,
        py::arg("title") = "");
}

}  // namespace rlprof::python
