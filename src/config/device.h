// Which device activities a process records, from its contents and level (docs/config.md,
// "Device activities"). The one place that maps verl's `contents: [cuda]` / `[npu]`,
// `level0..2` and MindSpeed-RL's `profile_with_npu` (all resolved into ProcessPlan::contents
// .device and ::level by the schemas) onto what a device source enables.
//
//   config::DeviceActivities a = config::DeviceActivitiesFor(process_plan);
//   if (a.any()) { enable kernels if a.kernels, … }
//
// Thread-safety: pure function.
#ifndef RLPROF_SRC_CONFIG_DEVICE_H_
#define RLPROF_SRC_CONFIG_DEVICE_H_

#include <string>
#include <string_view>
#include <vector>

#include "rlprof/config/plan.h"

namespace rlprof::config {

struct DeviceActivities {
  bool kernels = false;       // concurrent kernels (and CUDA graph launches' kernels)
  bool memcpy = false;
  bool memset = false;
  bool launch_api = false;    // only the runtime calls that launch work (launch → kernel flows)
  bool runtime_api = false;   // every CUDA runtime API call
  bool sync = false;          // synchronisation (stream / event / context waits)
  bool driver_api = false;
  bool overhead = false;      // the profiler's own overhead records
  bool external_correlation = false;  // kernels attributed to the host range that launched them
  bool any() const { return kernels || memcpy || memset || runtime_api || driver_api; }
  // Names in a fixed order, e.g. {"kernels", "memcpy", "memset", "launch_api", …}.
  std::vector<std::string> Names() const;
  // The flag a name (as Names() spells it) stands for; nullptr for an unknown name.
  bool* Field(std::string_view name);
  // Every name, comma-separated: "kernels, memcpy, …, external_correlation".
  static const char* AllNames();
};

// Nothing unless contents.device. level_none: nothing; level0 (the default, also for an
// unknown level): kernels, memcpy, memset, launch API calls; level1: + every runtime API call,
// synchronisation and external correlation; level2: + driver API and overhead records.
DeviceActivities DeviceActivitiesFor(const ProcessPlan& p);

}  // namespace rlprof::config

#endif  // RLPROF_SRC_CONFIG_DEVICE_H_
