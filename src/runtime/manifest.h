// manifest.json of a capture directory (schema: docs/runtime.md and the shared contract in
// docs/formats.md). Written once when a capture opens (complete: false, no close) so a killed
// process leaves a describable directory, and rewritten atomically when it closes.
//
//   ManifestData m; m.run_id = "…"; m.scope = "e2e"; …
//   base::WriteFileAtomic(dir + "/manifest.json", ManifestJson(m));
//
// Thread-safety: pure function.
#ifndef RLPROF_SRC_RUNTIME_MANIFEST_H_
#define RLPROF_SRC_RUNTIME_MANIFEST_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "rlprof/rlprof.hpp"
#include "src/runtime/clock.h"

namespace rlprof::runtime {

struct ManifestData {
  std::string run_id, scope, mode, stage, role;
  std::vector<int64_t> steps;
  Identity identity;
  ClockSource clock_source = ClockSource::kMonotonic;
  double tsc_hz = 0;
  int64_t monotonic_anchor_ns = 0;
  int64_t realtime_anchor_ns = 0;
  int64_t offset_to_rank0_ns = 0;  // measured by the Python package (torch.distributed)
  bool offset_measured = false;
  int64_t open_ns = 0;
  int64_t close_ns = 0;       // 0 while open
  std::string close_reason;   // "" while open
  std::string sampling_json;  // window.sampling (scheduled captures), JSON text; "" = absent
  std::string trigger;        // window.trigger: the `rlprof trigger` request id; "" = absent
  std::vector<std::string> contents;
  uint64_t events = 0;
  uint64_t dropped_buffer_full = 0;
  uint64_t dropped_budget = 0;
  uint64_t dropped_write_error = 0;  // recorded, but lost to a write error (full disk, EACCES…)
  uint32_t threads = 0;
  uint64_t events_bytes = 0;
  bool complete = false;
  std::vector<std::string> errors;
  std::string sources_json;  // sources.<name> objects (source.h), JSON text; "" = no sources
  uint64_t source_events = 0;  // events the sources handed over through the writer
  // The resolved plan as FormatManifestConfig() returns it ("" = omitted): a session's
  // manifests all carry the same plan, so it is formatted once (the writer keeps it) and
  // spliced in as text; a view, valid while ManifestJson runs.
  std::string_view config_text;
};

std::string ManifestJson(const ManifestData& m);

// The plan's JSON text (`config_json`) formatted as ManifestJson writes the value of "config"
// (indented for its place in the manifest); "" when it is empty or not JSON.
std::string FormatManifestConfig(const std::string& config_json);

}  // namespace rlprof::runtime

#endif  // RLPROF_SRC_RUNTIME_MANIFEST_H_
