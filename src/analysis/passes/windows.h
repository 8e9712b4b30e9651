// Step and stage windows (docs/definitions.md §2). For rank r and step N with host step range
// H = [h0, h1): W = [max(h0, end of the previous window), max(h1, end of the last device work
// launched by a host call inside H)). Stage windows are built the same way from stage ranges
// and clipped to their step. No step marker at all: the whole trace is step 0.
//
//   std::vector<int64_t> launch = LaunchTimes(trace);          // per slice, -1 if none
//   auto steps = BuildStepWindows(trace, device_work, launch, &diag);
//   auto stages = BuildStageWindows(trace, steps, device_work, launch);
//
// Thread-safety: pure functions.
#ifndef RLPROF_SRC_ANALYSIS_PASSES_WINDOWS_H_
#define RLPROF_SRC_ANALYSIS_PASSES_WINDOWS_H_

#include <cstdint>
#include <regex>
#include <span>
#include <string>
#include <vector>

#include "src/analysis/passes/partition.h"
#include "src/analysis/model/trace.h"

namespace rlprof::analysis {

struct StepWindow {
  int64_t step = 0;
  int64_t host_start = 0;  // h0 (whole-trace step: trace start)
  int64_t host_end = 0;    // h1
  int64_t start = 0;       // W
  int64_t end = 0;
  bool whole_trace = false;
  bool partial = false;
  std::string partial_reason;  // "before_capture_start" | "after_capture_end" | "last_step_fewer_launches"
  int64_t launches = 0;        // host launch calls inside H that have device work
};

struct StageWindow {
  size_t step_index = 0;  // into the step windows
  int64_t step = 0;
  std::string role;
  std::string name;
  int64_t host_start = 0;
  int64_t host_end = 0;
  int64_t start = 0;
  int64_t end = 0;
};

// The user's step option (`--step-marker REGEX`): host ranges whose name matches `re`
// (std::regex_search, ECMAScript) replace the trace's step markers. The step number is the
// regex's first capture group if it is an integer, else the first integer in the name, else
// the 1-based occurrence of the range in start order. Returns the number of markers; with no
// match the trace's own steps are kept and `step_marker_not_found` is counted.
size_t ApplyStepMarker(Trace* t, const std::regex& re);

// For every slice: the start of the host call that launched it (matched by correlation id on
// a host track), or -1. Host slices get -1.
std::vector<int64_t> LaunchTimes(const Trace& t);

// `work` = device work intervals (their `slice` indexes `launch`). Steps come from
// Trace::steps (same step number on several tracks merge into one host range).
std::vector<StepWindow> BuildStepWindows(const Trace& t, std::span<const WorkInterval> work,
                                         const std::vector<int64_t>& launch, Diagnostics* diag);

std::vector<StageWindow> BuildStageWindows(const Trace& t, const std::vector<StepWindow>& steps,
                                           std::span<const WorkInterval> work,
                                           const std::vector<int64_t>& launch);

}  // namespace rlprof::analysis

#endif  // RLPROF_SRC_ANALYSIS_PASSES_WINDOWS_H_
