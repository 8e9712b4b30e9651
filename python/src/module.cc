// rlprof._rlprof: the pybind11 extension behind `import rlprof` (python/rlprof/). A thin layer
// over the C++ runtime (include/rlprof/rlprof.hpp): a Session class for the Python Profiler,
// free marker functions, and the registration of the torch sources (rlprof._torch_ops) with
// the runtime's Source seam (markers.cc).
//
// GIL: session creation, step boundaries, flush and shutdown release it (they may calibrate
// the clock, wait for the writer or take the session lock); markers and stage / sub-step
// boundaries keep it (they are a few hundred ns).
// Thread-safety: as the C++ API; every call may come from any Python thread.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "python/src/bindings.h"
#include "python/src/torch_hooks.h"
#include "src/base/version.h"
#include "rlprof/rlprof.hpp"
#include "src/runtime/nvtx_host.h"
#include "src/config/loader.h"
#include "src/config/stages.h"
#include "src/runtime/session.h"

namespace py = pybind11;

namespace rlprof::python {
namespace {

std::optional<config::SubStepKind> ParseKind(const std::optional<std::string>& kind) {
  if (!kind) return std::nullopt;
  if (*kind == "decode") return config::SubStepKind::kDecode;
  if (*kind == "micro_batch") return config::SubStepKind::kMicroBatch;
  if (*kind == "mini_batch") return config::SubStepKind::kMiniBatch;
  if (*kind == "step") return config::SubStepKind::kStep;
  throw py::value_error("rlprof: unknown sub-step kind '" + *kind +
                        "' (expected decode, micro_batch, mini_batch or step)");
}

// One profiled process's session, as the Python Profiler sees it.
class PySession {
 public:
  explicit PySession(std::unique_ptr<Session> s) : s_(std::move(s)) {
    const config::ProcessPlan& p = s_->impl()->process_plan();
    contents_ = p.contents;
    if (contents_.shapes || contents_.stack) contents_.ops = true;  // both are of operators
    if (contents_.ops) torch_ |= kTorchOps;
    if (contents_.shapes) torch_ |= kTorchShapes;
    if (contents_.stack) torch_ |= kTorchStack;
    if (contents_.memory) torch_ |= kTorchMemory;
    if (contents_.module) torch_ |= kTorchModule;
    proc_enabled_ = p.enabled;
    mode_ = config::CaptureModeName(p.mode);
    stages_ = p.stages;
  }
  ~PySession() { Shutdown(); }

  bool enabled() const { return s_->enabled(); }
  void BeginStep(int64_t step) {
    {
      py::gil_scoped_release nogil;
      s_->BeginStep(step);
    }
    AfterControl();
  }
  void EndStep() {
    {
      py::gil_scoped_release nogil;
      s_->EndStep();
    }
    AfterControl();
  }
  void BeginStage(const std::string& role, const std::string& stage,
                  const std::optional<std::string>& counts) {
    s_->BeginStage(role, stage, ParseKind(counts));
    AfterControl();
  }
  void EndStage() {
    s_->EndStage();
    AfterControl();
  }
  void SubStep(const std::string& kind) {
    s_->SubStep(*ParseKind(kind));
    SyncOps();
  }
  bool StartCapture(const std::string& scope) {
    const bool ok = s_->StartCapture(scope);
    AfterControl();
    return ok;
  }
  void StopCapture() {
    s_->StopCapture();
    AfterControl();
  }
  bool Flush(double timeout_s) {
    py::gil_scoped_release nogil;
    return s_->Flush(timeout_s);
  }
  void Shutdown() {
    if (!s_) return;
    {
      py::gil_scoped_release nogil;
      s_->Shutdown();
    }
    SyncTorchPython(false, torch_);
  }
  std::vector<std::string> Captures() const { return s_->Captures(); }
  void SetClockOffset(int64_t ns) { s_->SetClockOffsetToRank0(ns); }

  py::dict Identity() const {
    const rlprof::Identity& id = s_->identity();
    py::dict d;
    d["rank"] = id.rank;
    d["local_rank"] = id.local_rank;
    d["world_size"] = id.world_size;
    d["host"] = id.host;
    d["pid"] = id.pid;
    d["roles"] = id.roles;
    d["replica"] = id.replica ? py::cast(*id.replica) : py::none();
    d["source"] = id.source;
    return d;
  }
  std::vector<std::string> Contents() const { return contents_.Names(); }
  const std::string& run_id() const { return s_->run_id(); }
  std::string run_dir() const { return s_->run_dir(); }
  bool selected() const { return proc_enabled_; }
  const std::string& mode() const { return mode_; }
  const std::vector<std::string>& stages() const { return stages_; }

 private:
  // After a call that may have opened or closed a window: the Python side of the torch
  // sources (module hooks) follows it.
  void AfterControl() { SyncOps(); }
  void SyncOps() {
    if (torch_ != 0) SyncTorchPython(Recording() && s_->enabled(), torch_);
  }

  std::unique_ptr<Session> s_;
  config::Contents contents_;
  uint32_t torch_ = 0;  // TorchContent bits of the torch sources this session switches
  bool proc_enabled_ = false;
  std::string mode_;
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
  SessionOptions so;
  so.rank = rank;
  so.local_rank = local_rank;
  so.world_size = world_size;
  so.roles = std::move(roles);
  so.run_id = run_id;
  so.install_signal_handlers = install_signal_handlers;
  so.quiet = quiet;
  std::unique_ptr<Session> s;
  std::string error;
  {
    py::gil_scoped_release nogil;
    try {
      config::LoadOptions lo;
      if (world_size) lo.world_size = *world_size;
      auto plan = config_is_text ? config::LoadPlanFromString(config, "<dict>", overrides, lo)
                                 : config::LoadPlan(config, overrides, lo);
      if (!plan.ok()) {
        error = plan.status().message();
      } else {
        s = Session::Create(*plan, so);  // never throws: output problems disable it instead
      }
    } catch (const std::exception& e) {  // the config loader failed unexpectedly
      error = std::string("cannot load the config: ") + e.what();
    }
  }
  // Only a config that cannot be loaded raises (ValueError): output problems (an unwritable or
  // full save path, no writer thread) leave a disabled session and one warning on stderr.
  if (!s && !error.empty()) throw py::value_error("rlprof: " + error);
  if (!s) throw std::bad_alloc();  // Session::Create is null only when memory is exhausted
  return std::make_unique<PySession>(std::move(s));
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
  // The stage vocabulary (src/config/stages.h), for integrations that map stage names.
  m.def("canonical_stage", [](const std::string& s) { return config::CanonicalStage(s); },
        py::arg("stage"), "rlprof's name of a stage (actor_generate -> rollout_generate).");
  m.def("stage_role", [](const std::string& s) { return config::StageRole(s); },
        py::arg("stage"), "The role owning a known stage, '' for other names.");
}

}  // namespace rlprof::python

PYBIND11_MODULE(_rlprof, m) {
  m.doc() = "rlprof's C++ runtime (use the `rlprof` package)";
  m.attr("__version__") = rlprof::base::Version();
  rlprof::python::BindSession(m);
  rlprof::python::BindMarkers(m);
  rlprof::python::BindAnnotate(m);
  // NVTX ranges of the process's other code (torch, vLLM, Megatron) record into this runtime
  // when NVTX_INJECTION64_PATH names rlprof's injection library (docs/runtime.md).
  rlprof::runtime::AttachNvtxInjection();
}
