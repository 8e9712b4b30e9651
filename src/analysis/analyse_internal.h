// Internal pieces of AnalyseTrace, split by responsibility (not a public API).
#ifndef RLPROF_SRC_ANALYSIS_ANALYSE_INTERNAL_H_
#define RLPROF_SRC_ANALYSIS_ANALYSE_INTERNAL_H_

#include <vector>

#include "src/analysis/analyse.h"

namespace rlprof::analysis::internal {

// HTA temporal breakdown + comm/comp overlap and the per-stream idle breakdown (§4.4).
// `tl` is the partition's timeline of `work` (reused in native mode).
void ComputeHtaViews(const Trace& t, std::span<const WorkInterval> work, const Timeline& tl,
                     const std::vector<StepWindow>& steps, const std::vector<int64_t>& launch,
                     const AnalysisOptions& opts, TraceAnalysis* out);
// TraceLens gpu_timeline (§4.5): memset counts as computation, unclassified is not read.
void ComputeTraceLens(const Timeline& tl, TraceAnalysis* out);
// Operator statistics: host operators and device kernels, by name (and name + shapes).
// For each device slice, the host operator that launched it (external correlation, else the
// innermost counted host operator enclosing its correlated launch); -1 otherwise.
std::vector<int32_t> DeviceLaunchers(const Trace& t, const Classification& c);
void ComputeOpStats(const Trace& t, const Classification& c, TraceAnalysis* out);

}  // namespace rlprof::analysis::internal

#endif  // RLPROF_SRC_ANALYSIS_ANALYSE_INTERNAL_H_
