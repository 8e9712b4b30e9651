#include "src/config/device.h"

#include <utility>

namespace rlprof::config {

std::vector<std::string> DeviceActivities::Names() const {
  std::vector<std::string> out;
  auto add = [&](bool on, const char* n) {
    if (on) out.emplace_back(n);
  };
  add(kernels, "kernels");
  add(memcpy, "memcpy");
  add(memset, "memset");
  add(launch_api && !runtime_api, "launch_api");
  add(runtime_api, "runtime_api");
  add(sync, "sync");
  add(driver_api, "driver_api");
  add(overhead, "overhead");
  add(external_correlation, "external_correlation");
  return out;
}

bool* DeviceActivities::Field(std::string_view name) {
  const std::pair<std::string_view, bool*> fields[] = {
      {"kernels", &kernels},   {"memcpy", &memcpy},         {"memset", &memset},
      {"launch_api", &launch_api}, {"runtime_api", &runtime_api}, {"sync", &sync},
      {"driver_api", &driver_api}, {"overhead", &overhead},   {"external_correlation", &external_correlation}};
  for (const auto& [n, f] : fields)
    if (n == name) return f;
  return nullptr;
}

const char* DeviceActivities::AllNames() {
  return "kernels, memcpy, memset, launch_api, runtime_api, sync, driver_api, overhead, external_correlation";
}

DeviceActivities DeviceActivitiesFor(const ProcessPlan& p) {
  DeviceActivities a;
  if (!p.contents.device || p.level == "level_none") return a;
  a.kernels = a.memcpy = a.memset = a.launch_api = true;
  // External correlation ids attribute a kernel to its operator as the launch record's enclosing
  // operator does (identical on the H200 GRPO captures, docs/performance.md) but cost CUPTI two
  // calls per operator: from level1 on.
  if (p.level == "level1" || p.level == "level2") a.runtime_api = a.sync = a.external_correlation = true;
  if (p.level == "level2") a.driver_api = a.overhead = true;
  return a;
}

}  // namespace rlprof::config
