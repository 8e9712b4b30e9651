// Activity lanes: what each device stream and host thread of one rank was busy with, over
// time, at a bounded resolution — the report timeline's device and host lanes
// (docs/report.md). Each lane is a list of spans; a span stands for one or more consecutive
// events of the lane (merged across the shortest gaps until the lane holds at most
// `max_spans`), with the time they were busy, their dominant class and their longest event.
//
//   Classification c = Classifier::Default().Classify(trace, &diag);
//   std::vector<ActivityLane> lanes = ActivityLanes(trace, c, {.max_spans = 2000});
//   for (const auto& l : lanes) for (const auto& s : l.spans) draw(s.start, s.end, s.cls);
//
// Device lanes: every device stream's work (compute, communication, memcpy, memset,
// unclassified). Host lanes: every thread's outermost host operators and host communication
// (a slice inside another host or communication slice is covered by it; step and stage
// markers are structure, not activity, so operators inside them count). The busiest
// `max_device_lanes` streams and `max_host_lanes` threads are kept; how many were left out is
// in ActivityLanesResult.
// Thread-safety: pure functions of their arguments.
#ifndef RLPROF_SRC_ANALYSIS_PASSES_ACTIVITY_H_
#define RLPROF_SRC_ANALYSIS_PASSES_ACTIVITY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "src/analysis/passes/classify.h"
#include "src/analysis/model/trace.h"

namespace rlprof::analysis {

struct ActivitySpan {
  int64_t start = 0, end = 0;  // ns, trace clock; half-open
  int64_t busy = 0;            // ns of [start, end) covered by the lane's events
  int64_t count = 0;           // events merged into the span
  WorkClass cls = WorkClass::kCompute;  // the class busy longest in the span
  std::string top;             // name of the longest event
  int64_t top_dur = 0;         // its duration (ns)
};

struct ActivityLane {
  bool device = false;
  std::string name;  // "device 0 stream 7", "thread 4242 (MainThread)"
  int64_t busy = 0;  // Σ busy of the spans (ns)
  int64_t events = 0;
  std::vector<ActivitySpan> spans;  // by start, disjoint
};

struct ActivityOptions {
  size_t max_spans = 2000;  // per lane; 0: no lanes
  size_t max_device_lanes = 8;
  size_t max_host_lanes = 4;
};

struct ActivityLanesResult {
  std::vector<ActivityLane> lanes;  // device lanes first, each kind busiest first
  int64_t device_lanes_left_out = 0, host_lanes_left_out = 0;
};

ActivityLanesResult ActivityLanes(const Trace& t, const Classification& c, const ActivityOptions& opts);

// Merges consecutive spans (sorted by start) across the shortest gaps until at most
// `max_spans` remain (≥ 1); spans that overlap are always merged. Busy time, counts and the
// longest event are kept; the class is the one busy longest.
std::vector<ActivitySpan> CoarsenSpans(std::vector<ActivitySpan> spans, size_t max_spans);

}  // namespace rlprof::analysis

#endif  // RLPROF_SRC_ANALYSIS_PASSES_ACTIVITY_H_
