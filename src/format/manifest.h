// manifest.json of a capture directory: the one contract between the runtime that writes it and
// every reader (schema: docs/formats.md, "Capture directory"). One struct, one writer, one
// parser, round-trip tested (manifest_test.cc).
//
//   Manifest m; m.run_id = "…"; m.scope = "e2e"; …
//   base::WriteFileAtomic(dir + "/manifest.json", ManifestToJson(m));
//   Manifest back = ParseManifest(text, &problems);   // lenient: problems are noted
//
// The runtime writes it once when a capture opens (complete: false, no close) so that a killed
// process leaves a describable directory, and rewrites it atomically when the capture closes.
//
// Thread-safety: pure functions.
#ifndef RLPROF_SRC_FORMAT_MANIFEST_H_
#define RLPROF_SRC_FORMAT_MANIFEST_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rlprof::format {

inline constexpr char kManifestFormat[] = "rlprof-capture";
inline constexpr int64_t kManifestFormatVersion = 1;

struct Manifest {
  std::string format;          // as read ("rlprof-capture"); written as kManifestFormat
  int64_t format_version = 0;  // as read; written as kManifestFormatVersion
  std::string rlprof_version;
  std::string run_id;
  std::string scope;
  std::string mode;
  std::vector<int64_t> steps;
  std::string stage;  // "" = absent (not a stage capture)
  std::string role;   // "" = absent
  // identity
  int64_t rank = -1;  // -1: a process outside the ranks
  int64_t local_rank = -1;
  int64_t world_size = 0;
  std::string host;
  int64_t pid = 0;
  std::vector<std::string> roles;
  std::optional<int64_t> replica;
  std::string identity_source;  // where the rank came from ("explicit", "torchrun", …); "" = absent
  // clock
  std::string clock_source;  // "tsc" | "monotonic"; tsc_hz is written for "tsc" only
  double tsc_hz = 0;
  int64_t monotonic_anchor_ns = 0;
  int64_t realtime_anchor_ns = 0;
  int64_t offset_to_rank0_ns = 0;
  bool offset_measured = false;
  // window
  int64_t window_open_ns = 0;
  int64_t window_close_ns = 0;  // with close_reason; both absent while the window is open
  std::string close_reason;     // "" = open
  std::string trigger;          // window.trigger: the `rlprof trigger` request that opened it
  // window.sampling (scheduled captures): the sub-steps [first, first + count) of `unit` the
  // capture holds; complete = its active period ended at RECORD_AND_SAVE. unit "" = not
  // sampled (the whole stage or step), and no window.sampling object.
  struct Sampling {
    std::string unit;
    int64_t first = 0;
    int64_t count = 0;
    bool complete = false;
    std::string schedule_json;  // the schedule, a JSON object's compact text ("" = absent)
    std::string from;           // where the schedule came from (its config key)
  } sampling;
  std::vector<std::string> contents;
  // The share of operator calls the capture holds (contents ops with `ops_sampling`); written
  // only when below 1. Operator statistics read from it are estimates (docs/formats.md §3).
  double ops_sampling = 1.0;
  // counts
  int64_t event_count = 0;
  int64_t dropped_events = 0;       // every event recorded but not written (the sum of the three)
  int64_t dropped_buffer_full = 0;
  int64_t dropped_budget = 0;
  int64_t dropped_write_error = 0;  // lost to a write error (full disk, EACCES …)
  int64_t threads = 0;
  int64_t source_events = 0;  // events the sources handed over (written with `sources` only)
  std::string sources_json;   // `sources`: per-source counters, a JSON object's text ("" = absent)
  bool complete = false;
  std::vector<std::string> errors;
  struct File {
    std::string name;
    int64_t bytes = 0;  // size when the manifest was written (0: not recorded)
  };
  std::vector<File> files;  // "files": what the capture directory should hold
  std::string config_json;  // the resolved plan, as compact JSON text ("" if absent)
};

// The manifest's text (2-space indented JSON and a newline). `config_text`, when given, is
// the plan as FormatManifestConfig returns it, spliced in as the last key without formatting it
// again (the runtime formats it once per session); else config_json is formatted here. Names
// that are not UTF-8 are written with U+FFFD, never an exception.
std::string ManifestToJson(const Manifest& m, std::string_view config_text = {});

// The plan's compact JSON (`config_json`) formatted as ManifestToJson writes the value of
// "config" (indented for its place); "" when it is empty or not JSON.
std::string FormatManifestConfig(const std::string& config_json);

// Parses manifest.json text leniently: ill-typed or missing keys keep defaults and are noted in
// `diagnostics` ("manifest.json: identity.rank: expected an integer, got \"x\"").
Manifest ParseManifest(const std::string& json_text, std::vector<std::string>* diagnostics);

}  // namespace rlprof::format

#endif  // RLPROF_SRC_FORMAT_MANIFEST_H_
