// rlprof._analysis: the pybind11 extension behind `rlprof.analysis` (python/rlprof/analysis.py).
// A thin layer over the analysis library's public face (include/rlprof/report/run_api.h): the
// same finding, reading, analysing and tables as `rlprof analyse`, handed to Python column by
// column (numbers as native-endian bytearrays of int64 / float64 that numpy wraps without a
// copy, np.frombuffer; text as lists of str) for pandas to wrap without building Python rows.
// The extension itself does not use numpy's C API (pybind11 2.10's numpy support misreads numpy
// 2 descriptors), so it imports without numpy. It includes public headers only
// (scripts/check_deps.py).
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
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "rlprof/analysis/table.h"
#include "rlprof/report/run_api.h"

namespace py = pybind11;

namespace rlprof::python {
namespace {

using api::Cell;
using api::ColumnType;
using api::Table;

// The Python exception an api::Error becomes (usage and output errors; see the file comment).
[[noreturn]] void Raise(const api::Error& e) {
  const char* type = e.kind() == api::Error::Kind::kNotFound ? "FileNotFoundError"
                     : e.kind() == api::Error::Kind::kIo     ? "OSError"
                                                              : nullptr;
  if (type == nullptr) throw py::value_error(e.what());
  py::object x = py::module_::import("builtins").attr(type)(e.what());
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(x.ptr())), x.ptr());
  throw py::error_already_set();
}

// Runs f() with the GIL released; an api::Error becomes its Python exception.
template <typename F>
auto NoGil(F f) -> decltype(f()) {
  try {
    py::gil_scoped_release release;
    return f();
  } catch (const api::Error& e) {
    Raise(e);
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

py::list StrList(const std::vector<std::string>& v) {
  py::list out;
  for (const auto& x : v) out.append(Str(x));
  return out;
}

using RunPtr = std::shared_ptr<const api::Run>;

RunPtr Analyse(const std::vector<std::string>& paths, const std::string& rules, const std::string& assign,
               const std::string& compat, const std::string& step_marker, size_t jobs,
               const py::object& progress, size_t activity) {
  api::AnalyseSettings s;
  s.rules = rules;
  s.assign = assign;
  s.compat = compat;
  s.step_marker = step_marker;
  s.jobs = jobs;
  s.activity = activity;
  // progress(done, total) from the worker threads, with the GIL taken for the call; what it
  // raises is reported as unraisable (sys.unraisablehook), never stops the analysis. The
  // callable is referenced, not copied: no reference counting without the GIL.
  if (!progress.is_none()) {
    const py::object* fn = &progress;
    s.progress = [fn](size_t done, size_t total) {
      py::gil_scoped_acquire gil;
      try {
        (*fn)(done, total);
      } catch (py::error_already_set& e) {
        e.discard_as_unraisable("rlprof.analysis progress callback");
      }
    };
  }
  return NoGil([&] { return api::Analyse(paths, s); });
}

// The Python object: the analysed run, and its tables once asked for (built once, with the
// GIL released; converted to Python one table at a time).
struct PyRun {
  RunPtr run;
  std::shared_ptr<const std::vector<Table>> tables;

  const std::vector<Table>& Tables() {
    if (!tables) {
      auto built = NoGil([&] { return std::make_shared<const std::vector<Table>>(run->Tables()); });
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

py::dict TableSetPy(const api::TableSet& set) {
  py::dict d;
  for (const Table& t : set.tables) d[Str(t.name)] = TableToPy(t);
  d["diagnostics"] = TableToPy(set.diagnostics);
  d["details"] = StrList(set.details);
  return d;
}

py::dict RunDiagnostics(const api::Run& r) {
  py::dict d = TableToPy(r.Diagnostics());
  d["details"] = StrList(r.DiagnosticDetails());
  return d;
}

// Exact int64 ns columns for the rows of a µs table (stage_time, kernel_details), in the
// table's row order: µs in a double cannot hold every ns of an epoch-based timestamp, these can.
py::dict NsColumns(const PyRun& r, const std::string& name) {
  py::dict d;
  for (const auto& [col, v] : r.run->NsColumns(name)) d[Str(col)] = Buffer(v.data(), v.size() * sizeof(int64_t));
  return d;
}

// ---- analysis where the captures are (rlprof.distributed, docs/scale.md) ----

// What this node holds of `paths`: (inputs as bytes, sorted; the search's diagnostics, encoded;
// [(path, why)] for each path this node cannot search — not there, or unreadable).
py::tuple FindInputs(const std::vector<std::string>& paths) {
  const api::FoundInputs f = NoGil([&] { return api::FindInputs(paths); });
  py::list in, miss;
  for (const auto& i : f.inputs) in.append(py::bytes(i));
  for (const auto& [p, why] : f.missing) miss.append(py::make_tuple(py::bytes(p), Str(why)));
  return py::make_tuple(in, py::bytes(f.diagnostics), miss);
}

}  // namespace

PYBIND11_MODULE(_analysis, m) {
  m.doc() = "rlprof's analysis library (include/rlprof/report/run_api.h); use rlprof.analysis";
  py::class_<PyRun, std::shared_ptr<PyRun>>(m, "Run")
      .def_property_readonly("paths", [](const PyRun& r) {
        py::list out;  // bytes: paths need not be UTF-8
        for (const auto& p : r.run->paths()) out.append(py::bytes(p));
        return out;
      })
      .def_property_readonly("assign", [](const PyRun& r) { return r.run->assign(); })
      .def_property_readonly("compat", [](const PyRun& r) { return r.run->compat(); })
      .def_property_readonly("step_marker", [](const PyRun& r) { return r.run->step_marker(); })
      .def("table_names", &TableNames, "The run's tables, as analysis.db holds them")
      .def("table", &TablePy, py::arg("name"), "One table: {name, columns, types, units, data}")
      .def("run_view_long", [](const PyRun& r) { return TableToPy(r.run->RunViewLong()); },
           "The run view, one row per (row, rank), exact ns")
      .def("ns_columns", &NsColumns, py::arg("name"), "Exact ns (int64) columns of a µs table's rows")
      .def("inputs", [](const PyRun& r) { return TableToPy(r.run->Inputs()); }, "One row per input found")
      .def("activity", [](const PyRun& r) { return TableToPy(r.run->Activity()); },
           "Device and host activity spans (analyse(activity=N))")
      .def("diagnostics", [](const PyRun& r) { return RunDiagnostics(*r.run); },
           "Every diagnostic with the catalogue's severity")
      .def("summary_json", [](const PyRun& r) { return Str(NoGil([&] { return r.run->SummaryJson(); })); });
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
          try {
            api::CheckOptions(rules_yaml, rules_origin, assign, compat, step_marker);
          } catch (const api::Error& e) {
            Raise(e);
          }
        },
        py::arg("rules_yaml"), py::arg("rules_origin"), py::arg("assign"), py::arg("compat"), py::arg("step_marker"),
        "ValueError for a bad option or rules text (before a cluster is asked anything)");
  m.def("find_inputs", &FindInputs, py::arg("paths"),
        "What this node holds of the paths: (inputs, encoded search diagnostics, [(path, why)])");
  m.def("input_names", [](const std::vector<std::string>& inputs) {
          py::list out;
          for (const auto& n : api::InputNames(inputs)) out.append(py::bytes(n));
          return out;
        },
        py::arg("inputs"), "The inputs' short unique names (as `rlprof analyse` names their folders)");
  m.def("analyse_input", [](const std::string& input, const std::string& name, const std::string& rules_yaml,
                            const std::string& rules_origin, const std::string& assign, const std::string& compat,
                            const std::string& step_marker) {
          return py::bytes(NoGil([&] {
            return api::AnalyseInputEncoded(input, name, rules_yaml, rules_origin, assign, compat, step_marker);
          }));
        },
        py::arg("input"), py::arg("name"), py::arg("rules_yaml") = "",
        py::arg("rules_origin") = "", py::arg("assign") = "clip", py::arg("compat") = "native",
        py::arg("step_marker") = "", "One input analysed here, encoded (api::AnalyseInputEncoded)");
  m.def("assemble", [](const std::vector<std::string>& paths, const std::string& assign, const std::string& compat,
                       const std::string& step_marker, const std::vector<std::string>& found,
                       const std::vector<std::tuple<std::string, std::string, std::string, std::string>>& inputs,
                       const std::vector<std::string>& missing, const std::vector<std::string>& lost_searches) {
          std::vector<api::RemoteInput> in;
          in.reserve(inputs.size());
          for (const auto& [input, name, result, lost] : inputs) in.push_back({input, name, result, lost});
          auto r = std::make_shared<PyRun>();
          r->run = NoGil([&] { return api::Assemble(paths, assign, compat, step_marker, found, in, missing, lost_searches); });
          return r;
        },
        py::arg("paths"), py::arg("assign"), py::arg("compat"), py::arg("step_marker"), py::arg("found"),
        py::arg("inputs"), py::arg("missing"), py::arg("lost_searches"),
        "The run from every node's results: inputs as (input, name, result bytes, why lost or '')");
  m.def("compare", [](const PyRun& b, const PyRun& t, size_t top) {
          return TableSetPy(NoGil([&] { return api::Compare(*b.run, *t.run, top); }));
        },
        py::arg("baseline"), py::arg("new"), py::arg("top") = 30);
  m.def("cluster", [](const PyRun& r) { return TableSetPy(NoGil([&] { return api::Cluster(*r.run); })); },
        py::arg("run"));
  m.def("write", [](const PyRun& r, const std::string& dir, const std::vector<std::string>& exports, bool report,
                    const std::string& title) {
          return StrList(NoGil([&] { return api::Write(*r.run, dir, exports, report, title); }));
        },
        py::arg("run"), py::arg("dir"), py::arg("exports") = std::vector<std::string>{}, py::arg("report") = true,
        py::arg("title") = "");
}

}  // namespace rlprof::python
