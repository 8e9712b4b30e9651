// rlprof._rlprof: the pybind11 extension behind `import rlprof` (python/rlprof/). A thin layer
// over librlprof's C ABI (include/rlprof/rlprof.h, and the header-only rlprof.hpp over it): a
// Session class for the Python Profiler, free marker functions (markers.cc) and
// rlprof.annotate (annotate.cc). It includes public headers only (scripts/check_deps.py).
//
// GIL: session creation, step boundaries, flush and shutdown release it (they may calibrate
// the clock, wait for the writer or take the session lock); markers and stage / sub-step
// boundaries keep it (they are a few hundred ns).
// Thread-safety: as the C++ API; every call may come from any Python thread.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "python/src/bindings.h"
#include "python/src/torch_hooks.h"
#include "rlprof/rlprof.h"
#include "rlprof/rlprof.hpp"

namespace py = pybind11;

namespace rlprof::python {
namespace {

int ParseKind(const std::optional<std::string>& kind) {
  if (!kind) return 0;
  if (*kind == "decode") return RLPROF_SUB_STEP_DECODE;
  if (*kind == "micro_batch") return RLPROF_SUB_STEP_MICRO_BATCH;
  if (*kind == "mini_batch") return RLPROF_SUB_STEP_MINI_BATCH;
  if (*kind == "step") return RLPROF_SUB_STEP_STEP;
  throw py::value_error("rlprof: unknown sub-step kind '" + *kind +
                        "' (expected decode, micro_batch, mini_batch or step)");
}

// Contents bits as the names of the config's `contents` list (config::Contents::Names order).
std::vector<std::string> ContentNames(uint32_t c) {
  static const std::pair<uint32_t, const char*> kNames[] = {
      {RLPROF_CONTENTS_CPU, "cpu"},       {RLPROF_CONTENTS_DEVICE, "device"},
      {RLPROF_CONTENTS_OPS, "ops"},       {RLPROF_CONTENTS_SHAPES, "shapes"},
      {RLPROF_CONTENTS_MEMORY, "memory"}, {RLPROF_CONTENTS_STACK, "stack"},
      {RLPROF_CONTENTS_MODULE, "module"}};
  std::vector<std::string> out;
  for (const auto& [bit, name] : kNames)
    if (c & bit) out.emplace_back(name);
  return out;
}

// One profiled process's session (a librlprof handle), as the Python Profiler sees it.
class PySession {
 public:
  explicit PySession(rlprof_session* s) : s_(s) {
    info_.struct_size = sizeof info_;
    rlprof_session_get_info(s_, &info_);
    uint32_t c = info_.contents;
    if (c & (RLPROF_CONTENTS_SHAPES | RLPROF_CONTENTS_STACK)) c |= RLPROF_CONTENTS_OPS;  // of operators
    contents_ = c;
    if (c & RLPROF_CONTENTS_OPS) torch_ |= kTorchOps;
    if (c & RLPROF_CONTENTS_SHAPES) torch_ |= kTorchShapes;
    if (c & RLPROF_CONTENTS_STACK) torch_ |= kTorchStack;
    if (c & RLPROF_CONTENTS_MEMORY) torch_ |= kTorchMemory;
    if (c & RLPROF_CONTENTS_MODULE) torch_ |= kTorchModule;
    stages_ = internal::SplitCommas(info_.stages);
  }
  ~PySession() {
    Shutdown();
    rlprof_session_close(s_);
  }

  bool enabled() const { return rlprof_session_enabled(s_) != 0; }
  void BeginStep(int64_t step) {
    {
      py::gil_scoped_release nogil;
      rlprof_session_step_begin(s_, step);
    }
    AfterControl();
  }
  void EndStep() {
    {
      py::gil_scoped_release nogil;
      rlprof_session_step_end(s_);
    }
    AfterControl();
  }
  void BeginStage(const std::string& role, const std::string& stage,
                  const std::optional<std::string>& counts) {
    ParseKind(counts);  // validated; the stage follows its configured schedule
    rlprof_session_stage_begin(s_, role.c_str(), stage.c_str());
    AfterControl();
  }
  void EndStage() {
    rlprof_session_stage_end(s_);
    AfterControl();
  }
  void SubStep(const std::string& kind) {
    rlprof_session_sub_step(s_, ParseKind(kind));
    AfterControl();
  }
  bool StartCapture(const std::string& scope) {
    const bool ok = rlprof_session_capture_start(s_, scope.c_str()) == RLPROF_OK;
    AfterControl();
    return ok;
  }
  void StopCapture() {
    rlprof_session_capture_stop(s_);
    AfterControl();
  }
  bool Flush(double timeout_s) {
    py::gil_scoped_release nogil;
    return rlprof_session_flush(s_, timeout_s) == RLPROF_OK;
  }
  void Shutdown() {
    if (down_) return;
    down_ = true;
    {
      py::gil_scoped_release nogil;
      rlprof_session_shutdown(s_);
    }
    SyncTorchPython(false, torch_);
  }
  std::vector<std::string> Captures() const { return Session::View(s_)->Captures(); }
  void SetClockOffset(int64_t ns) { rlprof_session_set_clock_offset(s_, ns); }

  py::dict Identity() const {
    py::dict d;
    d["rank"] = info_.rank;
    d["local_rank"] = info_.local_rank;
    d["world_size"] = info_.world_size;
    d["host"] = info_.host;
    d["pid"] = info_.pid;
    d["roles"] = internal::SplitCommas(info_.roles);
    d["replica"] = info_.replica >= 0 ? py::cast(info_.replica) : py::none();
    d["source"] = info_.rank_source;
    return d;
  }
  std::vector<std::string> Contents() const { return ContentNames(contents_); }
  std::string run_id() const { return info_.run_id; }
  std::string run_dir() const { return info_.run_dir; }
  bool selected() const { return info_.selected != 0; }
  std::string mode() const { return info_.mode; }
  const std::vector<std::string>& stages() const { return stages_; }

 private:
  // After a call that may have opened or closed a window: the Python side of the torch
  // sources (module hooks) follows it.
  void AfterControl() {
    if (torch_ != 0) SyncTorchPython(Recording() && enabled(), torch_);
  }

  rlprof_session* s_;
  rlprof_session_info info_{};
  uint32_t contents_ = 0;
  uint32_t torch_ = 0;  // TorchContent bits of the torch sources this session switches
  bool down_ = false;
  std::vector<std::string> stages_;
};

std::unique_ptr<PySession> CreateSession(const std::string& config, bool config_is_text,
                                         const std::vector<std::string>& overrides,
                                         std::optional<int64_t> rank,
                                         std::optional<int64_t> local_rank,
                                         std::optional<int64_t> world_size,
                                         std::optional<std::vector<std::string>> roles,
                                         const std::string& run_id, bool install_signal_handlers,
                                         bool quiet) {
  rlprof_options o;
  rlprof_options_init(&o);
  if (rank) o.rank = *rank;
  if (local_rank) o.local_rank = *local_rank;
  if (world_size) o.world_size = *world_size;
  const std::string role_list = roles ? internal::JoinCommas(*roles) : "";
  if (roles) o.roles = role_list.c_str();
  if (!run_id.empty()) o.run_id = run_id.c_str();
  o.install_signal_handlers = install_signal_handlers ? 1 : 0;
  o.quiet = quiet ? 1 : 0;
  std::vector<const char*> ovr;
  for (const std::string& w : overrides) ovr.push_back(w.c_str());
  rlprof_session* s = nullptr;
  int rc = RLPROF_OK;
  std::string error;
  {
    py::gil_scoped_release nogil;
    rc = config_is_text
             ? rlprof_session_open_text(config.c_str(), "<dict>", ovr.data(), ovr.size(), &o, &s)
             : rlprof_session_open(config.c_str(), ovr.data(), ovr.size(), &o, &s);
    if (rc != RLPROF_OK) error = rlprof_last_error();  // this thread's: read before the GIL
  }
  // Only a config that cannot be loaded raises (ValueError): output problems (an unwritable or
  // full save path, no writer thread) leave a disabled session and one warning on stderr.
  if (rc == RLPROF_ERROR_CONFIG || rc == RLPROF_ERROR_INVALID_ARGUMENT) throw py::value_error(error);
  if (rc != RLPROF_OK || s == nullptr) throw std::runtime_error(error.empty() ? "rlprof: cannot create a session" : error);
  return std::make_unique<PySession>(s);
}

std::string Vocabulary(int (*fn)(const char*, char*, size_t), const std::string& stage) {
  char buf[512];
  if (fn(stage.c_str(), buf, sizeof buf) != RLPROF_OK) return std::string();
  return buf;
}

}  // namespace

void BindSession(py::module_& m) {
  py::class_<PySession>(m, "Session")
      .def_static("create", &CreateSession, py::arg("config"), py::arg("config_is_text"),
                  py::arg("overrides"), py::arg("rank"), py::arg("local_rank"),
                  py::arg("world_size"), py::arg("roles"), py::arg("run_id"),
                  py::arg("install_signal_handlers"), py::arg("quiet"))
      .def_property_readonly("enabled", &PySession::enabled)
      .def_property_readonly("selected", &PySession::selected)
      .def_property_readonly("mode", &PySession::mode)
      .def_property_readonly("stages", &PySession::stages)
      .def_property_readonly("run_id", &PySession::run_id)
      .def_property_readonly("run_dir", &PySession::run_dir)
      .def_property_readonly("identity", &PySession::Identity)
      .def_property_readonly("contents", &PySession::Contents)
      .def("begin_step", &PySession::BeginStep)
      .def("end_step", &PySession::EndStep)
      .def("begin_stage", &PySession::BeginStage, py::arg("role"), py::arg("stage"),
           py::arg("counts") = py::none())
      .def("end_stage", &PySession::EndStage)
      .def("sub_step", &PySession::SubStep)
      .def("start_capture", &PySession::StartCapture, py::arg("scope") = "manual")
      .def("stop_capture", &PySession::StopCapture)
      .def("flush", &PySession::Flush, py::arg("timeout_s") = 30.0)
      .def("shutdown", &PySession::Shutdown)
      .def("captures", &PySession::Captures)
      .def("set_clock_offset", &PySession::SetClockOffset);
  // The stage vocabulary (librlprof's), for integrations that map stage names.
  m.def("canonical_stage", [](const std::string& s) { return Vocabulary(&rlprof_canonical_stage, s); },
        py::arg("stage"), "rlprof's name of a stage (actor_generate -> rollout_generate).");
  m.def("stage_role", [](const std::string& s) { return Vocabulary(&rlprof_stage_role, s); },
        py::arg("stage"), "The role owning a known stage, '' for other names.");
}

}  // namespace rlprof::python

PYBIND11_MODULE(_rlprof, m) {
  m.doc() = "rlprof's C++ runtime (use the `rlprof` package)";
  m.attr("__version__") = rlprof_version();
  rlprof::python::BindSession(m);
  rlprof::python::BindMarkers(m);
  rlprof::python::BindSamples(m);
  rlprof::python::BindAnnotate(m);
  // NVTX ranges of the process's other code (torch, vLLM, Megatron) record into the same
  // librlprof when NVTX_INJECTION64_PATH names rlprof's injection library: it links it too.
}
