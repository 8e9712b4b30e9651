// `rlprof doctor [--json]`: before a job, what device capture will find in this environment —
// the libcupti rlprof loads (the same search as a profiled process: docs/runtime.md "Device
// capture"), its CUPTI API version and whether rlprof reads that release's records, whether
// CUPTI takes a subscriber here (a GPU and a driver that allow it; nsys or another tool holding
// it), and the libcudart that `tool: nsys` windows drive. A capture whose manifest would say
// `sources.cupti.status: "off: …"` says so here first, with the same reason.
// Exit codes: 0 device capture would be on, 5 it would be off (the report says why).
#include <dlfcn.h>

#include <cstdlib>
#include <memory>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "src/cli/cli.h"
#include "src/cli/command.h"
#include "src/sources/cuda_profiler.h"
#ifdef RLPROF_CLI_HAVE_CUPTI
#include "src/sources/cupti_api.h"
#endif

#ifndef RLPROF_VERSION
#define RLPROF_VERSION "0.0.0"
#endif

namespace rlprof::cli {
namespace {

using nlohmann::json;

const char* Getenv(const char* k) { return std::getenv(k); }

#ifdef RLPROF_CLI_HAVE_CUPTI
// Why a subscriber was refused, in the user's terms.
std::string SubscribeHint(CUptiResult r) {
  switch (r) {
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
      return "a profiler started this command (nsys profile …?): the job's own processes may find CUPTI free";
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
      return "the driver allows profiling to administrators only (NVreg_RestrictProfilingToAdminUsers)";
    case CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED:
      return "this kind of device (MIG slice, virtual GPU, WSL) does not allow CUPTI tracing";
    case CUPTI_ERROR_NOT_INITIALIZED:
    case CUPTI_ERROR_UNKNOWN:
      return "no GPU this process can use, or a driver older than this libcupti";
    default:
      return "";
  }
}

json CheckCupti() {
  json j;
  sources::CuptiApi api;
  std::string why;
  if (!api.Load(&Getenv, &why)) {
    j["status"] = "off: " + why;
    return j;
  }
  j["library"] = api.path;
  j["cupti_version"] = api.version;
  Dl_info info{};
  if (api.GetVersion != nullptr && dladdr(reinterpret_cast<void*>(api.GetVersion), &info) != 0 &&
      info.dli_fname != nullptr)
    j["file"] = info.dli_fname;
  j["records"] = "read as CUDA 13.0's: the fields rlprof reads lie alike in CUDA 11.7 to 13.5";
  CUpti_SubscriberHandle sub = nullptr;
  auto noop = [](void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {};
  const CUptiResult r = api.Subscribe(&sub, noop, nullptr);
  if (r != CUPTI_SUCCESS) {
    j["status"] = "off: " + api.SubscribeFailure(r);  // as the manifest says it
    if (const std::string hint = SubscribeHint(r); !hint.empty()) j["hint"] = hint;
    return j;
  }
  api.Unsubscribe(sub);
  j["status"] = "on";
  return j;
}
#endif

json CheckCudart() {
  json j;
  std::string library, tried;
  void* h = sources::OpenCudart(&Getenv, &library, &tried);
  if (h == nullptr) {
    j["status"] = "off: libcudart not found (tried " + tried + ")";
    return j;
  }
  j["library"] = library;
  Dl_info info{};
  void* start = dlsym(h, "cudaProfilerStart");
  if (start != nullptr && dladdr(start, &info) != 0 && info.dli_fname != nullptr) j["file"] = info.dli_fname;
  j["status"] = start != nullptr && dlsym(h, "cudaProfilerStop") != nullptr
                    ? "on"
                    : "off: " + library + " has no cudaProfilerStart/Stop";
  return j;
}

void PrintSection(std::ostream& out, const char* title, const json& j) {
  out << title << ": " << j.value("status", std::string("?")) << "\n";
  for (const char* k : {"hint", "library", "file", "cupti_version", "records"})
    if (j.contains(k)) out << "  " << k << ": " << (j[k].is_string() ? j[k].get<std::string>() : j[k].dump()) << "\n";
}

}  // namespace

Command AddDoctorCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "doctor", "Show what device capture finds here: libcupti, its version, whether CUPTI takes a subscriber");
  auto as_json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *as_json, "Print as JSON");
  return {cmd, [as_json](Io& io) {
    json report;
    report["version"] = RLPROF_VERSION;
#ifdef RLPROF_CLI_HAVE_CUPTI
    report["cupti"] = CheckCupti();
#else
    report["cupti"] = {{"status", "off: this rlprof was built without the CUPTI headers"}};
#endif
    report["cuda_profiler"] = CheckCudart();
    const bool on = report["cupti"]["status"] == "on";
    if (*as_json) {
      io.out << report.dump(1) << "\n";
    } else {
      io.out << "rlprof " << RLPROF_VERSION << "\n";
      PrintSection(io.out, "device activity (CUPTI)", report["cupti"]);
      PrintSection(io.out, "nsys windows (cudaProfilerStart/Stop)", report["cuda_profiler"]);
      if (!on)
        io.out << "captures here would say sources.cupti.status \"" << report["cupti"]["status"].get<std::string>()
               << "\" and hold the host timeline only\n";
    }
    return on ? kExitOk : kExitUnavailable;
  }};
}

}  // namespace rlprof::cli
