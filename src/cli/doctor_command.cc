// `rlprof doctor [CONFIG [KEY=VALUE ...]] [--json]`: before a job, what device capture will find
// in this environment —
// the libcupti rlprof loads (the same search as a profiled process: docs/runtime.md "Device
// capture"), its CUPTI API version and whether rlprof reads that release's records, whether
// CUPTI takes a subscriber here (a GPU and a driver that allow it; nsys or another tool holding
// it), and the libcudart that `tool: nsys` windows drive. A capture whose manifest would say
// `sources.cupti.status: "off: …"` says so here first, with the same reason. With a CONFIG (any
// dialect, with Hydra overrides, as `rlprof plan`): whether it asks for device data (which
// roles), and whether its save_path can be written here (a directory made and removed in the
// deepest existing one; its free space) — an unwritable one would turn profiling off.
// Also the runtime library a profiled Python process and a linked program load
// (librlprof.so.0, beside this command's Python package or on the loader's path): which file,
// its version (a different one than this command's is said), and that it has the C ABI.
// Exit codes: 0 ready; 2 the config cannot be loaded; 4 its save_path cannot be written; 5
// device capture would be off (without a CONFIG; with one, only if it asks for device data).
#include <dlfcn.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>
#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "src/cli/cli.h"
#include "src/base/files.h"
#include "src/base/strings.h"
#include "src/base/version.h"
#include "src/cli/command.h"
#include "src/config/device.h"
#include "src/config/loader.h"
#include "src/sources/cuda_profiler.h"
#ifdef RLPROF_CLI_HAVE_CUPTI
#include "src/sources/cupti_api.h"
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
  const sources::CudartProfilerApi a = sources::LoadCudartProfiler(&Getenv);
  if (a.handle != nullptr) j["library"] = a.library;
  Dl_info info{};
  if (a.start != nullptr && dladdr(reinterpret_cast<void*>(a.start), &info) != 0 && info.dli_fname != nullptr)
    j["file"] = info.dli_fname;
  j["status"] = a.start != nullptr ? "on" : a.status;
  return j;
}

// Whether captures could be written under `save_path`: the deepest directory that exists must
// be one this user can create directories in (what the runtime will do below it).
json CheckSavePath(const std::string& save_path) {
  namespace fs = std::filesystem;
  json j;
  const std::string abs = base::AbsolutePath(save_path);
  j["path"] = abs;
  fs::path p = abs;
  std::error_code ec;
  while (!p.empty() && !fs::exists(p, ec) && p != p.root_path()) p = p.parent_path();
  j["existing"] = p.string();
  if (!fs::is_directory(p, ec)) {
    j["status"] = "off: " + p.string() + " is not a directory";
    return j;
  }
  // A directory made and removed at once (not access(2): root passes it for /proc, and it says
  // nothing of a quota).
  std::string probe = (p / ".rlprof-doctor-XXXXXX").string();
  if (mkdtemp(probe.data()) == nullptr) {
    j["status"] = "off: cannot write under " + p.string() + " (" + std::strerror(errno) + ")";
    return j;
  }
  rmdir(probe.c_str());
  struct statvfs fsinfo{};
  if (statvfs(p.c_str(), &fsinfo) == 0)
    j["free_bytes"] = static_cast<int64_t>(fsinfo.f_bavail) * static_cast<int64_t>(fsinfo.f_frsize);
  j["status"] = "writable";
  return j;
}

// The roles of `plan` that record device activity (CUPTI), and whether the tool drives nsys.
json ConfigNeeds(const config::Plan& plan) {
  json j;
  j["path"] = plan.config_path;
  j["tool"] = config::ToolName(plan.tool);
  std::vector<std::string> roles;
  for (const config::RolePlan& r : plan.roles) {
    config::ProcessPlan pp;
    pp.enabled = r.enabled;
    pp.contents = r.contents;
    pp.level = r.level;
    if (r.enabled && config::DeviceActivitiesFor(pp).any()) roles.push_back(r.role);
  }
  j["device_roles"] = roles;
  j["nsys_windows"] = plan.tool == config::Tool::kNsys;
  return j;
}

// librlprof.so.0 as a profiled process finds it: beside the Python package this command belongs
// to (<build>/python/rlprof/ from <build>/bin/, or site-packages/rlprof/ from rlprof/_bin/),
// else by its soname. Loaded here with dlopen (the command itself records nothing).
json CheckRuntime() {
  json j;
  std::vector<std::string> candidates;
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    self[n] = '\0';
    const std::filesystem::path dir = std::filesystem::path(self).parent_path();
    candidates.push_back((dir / ".." / "python" / "rlprof" / "librlprof.so.0").lexically_normal().string());
    candidates.push_back((dir / ".." / "librlprof.so.0").lexically_normal().string());
  }
  candidates.push_back("librlprof.so.0");
  void* h = nullptr;
  for (const std::string& c : candidates)
    if ((c.find('/') == std::string::npos || std::filesystem::exists(c)) &&
        (h = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL)) != nullptr)
      break;
  if (h == nullptr) {
    const char* e = dlerror();
    j["status"] = std::string("off: no librlprof.so.0 found (") + (e != nullptr ? e : "not found") + ")";
    return j;
  }
  using VersionFn = const char* (*)();
  auto version = reinterpret_cast<VersionFn>(dlsym(h, "rlprof_version"));
  Dl_info info{};
  if (version != nullptr && dladdr(reinterpret_cast<void*>(version), &info) != 0 && info.dli_fname != nullptr)
    j["file"] = info.dli_fname;
  int present = 0, asked = 0;
  for (const char* fn : {"rlprof_session_open", "rlprof_session_open_text", "rlprof_emit", "rlprof_emit_complete",
                         "rlprof_register_source", "rlprof_window", "rlprof_session_get_info", "rlprof_hot"}) {
    ++asked;
    if (dlsym(h, fn) != nullptr) ++present;
  }
  j["records"] = std::to_string(present) + " of " + std::to_string(asked) + " C ABI entry points checked";
  if (version == nullptr || present != asked) {
    j["status"] = "off: " + std::string(j.value("file", "the library")) + " lacks rlprof's C ABI";
  } else if (std::string(version()) != base::Version()) {
    j["library"] = std::string(version());
    j["status"] = "on, version " + std::string(version()) + " (this command is " + base::Version() + ")";
  } else {
    j["library"] = std::string(version());
    j["status"] = "on";
  }
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
  auto words = std::make_shared<std::vector<std::string>>();
  cmd->add_flag("--json", *as_json, "Print as JSON");
  cmd->add_option("config", *words, "A profiler config (verl, MindSpeed-RL or rlprof YAML) and Hydra overrides");
  return {cmd, [as_json, words](Io& io) {
    json report;
    report["version"] = base::Version();
    std::optional<config::Plan> plan;
    if (!words->empty()) {
      const std::vector<std::string> overrides(words->begin() + 1, words->end());
      auto loaded = config::LoadPlan(words->front(), overrides, config::LoadOptions{});
      if (!loaded.ok()) {  // printed here: a config error's later lines are indented, not prefixed
        io.err << "rlprof doctor: " << loaded.status().message() << "\n";
        return Silent(loaded.status().code());
      }
      plan = std::move(*loaded);
      report["config"] = ConfigNeeds(*plan);
      report["save_path"] = CheckSavePath(plan->save_path);
    }
#ifdef RLPROF_CLI_HAVE_CUPTI
    report["cupti"] = CheckCupti();
#else
    report["cupti"] = {{"status", "off: this rlprof was built without the CUPTI headers"}};
#endif
    report["cuda_profiler"] = CheckCudart();
    report["runtime"] = CheckRuntime();
    const bool on = report["cupti"]["status"] == "on";
    const bool wants_device = !plan || !report["config"]["device_roles"].empty();
    const bool writable = !plan || report["save_path"]["status"] == "writable";
    if (*as_json) {
      io.out << report.dump(1) << "\n";
    } else {
      io.out << "rlprof " << base::Version() << "\n";
      if (plan) {
        const json& c = report["config"];
        const auto& roles = c["device_roles"];
        std::string list;
        for (const auto& r : roles) list += (list.empty() ? "" : ", ") + r.get<std::string>();
        io.out << "config: " << c["path"].get<std::string>() << " (tool " << c["tool"].get<std::string>() << ")\n"
               << "  device data: " << (roles.empty() ? "not asked for" : "asked for by " + list) << "\n";
        const json& sp = report["save_path"];
        io.out << "save_path: " << sp["status"].get<std::string>() << "\n  path: " << sp["path"].get<std::string>()
               << "\n";
        if (sp.contains("free_bytes"))
          io.out << "  free: " << base::FormatBytes(sp["free_bytes"].get<int64_t>()) << "\n";
      }
      PrintSection(io.out, "runtime library (librlprof.so)", report["runtime"]);
      PrintSection(io.out, "device activity (CUPTI)", report["cupti"]);
      PrintSection(io.out, "nsys windows (cudaProfilerStart/Stop)", report["cuda_profiler"]);
      if (!on && wants_device)
        io.out << "captures here would say sources.cupti.status \"" << report["cupti"]["status"].get<std::string>()
               << "\" and hold the host timeline only\n";
      if (!writable)
        io.out << "profiling would turn itself off at start (rlprof: warning: cannot write captures under …)\n";
    }
    // What is missing is said above (the report is the output).
    if (!writable) return Silent(base::StatusCode::kIoError);
    return on || !wants_device ? base::Status::Ok() : Silent(base::StatusCode::kUnavailable);
  }};
}

}  // namespace rlprof::cli
