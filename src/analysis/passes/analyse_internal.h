// Internal pieces of AnalyseTrace, split by responsibility (not a public API).
#ifndef RLPROF_SRC_ANALYSIS_PASSES_ANALYSE_INTERNAL_H_
#define RLPROF_SRC_ANALYSIS_PASSES_ANALYSE_INTERNAL_H_

#include <array>
#include <vector>

#include "src/analysis/passes/analyse.h"

namespace rlprof::analysis::internal {

// HTA temporal breakdown + comm/comp overlap and the per-stream idle breakdown (§4.4), from
// rlprof's partition. `tl` is the partition's timeline of `work`.
void ComputeHtaViews(const Trace& t, std::span<const WorkInterval> work, const Timeline& tl,
                     const std::vector<int64_t>& launch, const AnalysisOptions& opts,
                     TraceAnalysis* out);
// The same three views as HolisticTraceAnalysis 0.5.0 computes them (`--compat hta`): its µs
// rounding, last-step rule, name-based kernel types and interval merges (hta_compat.cc).
void ComputeHtaCompat(const Trace& t, const Classification& c, const std::vector<int64_t>& launch,
                      const AnalysisOptions& opts, TraceAnalysis* out);
// HTA's kernel-type breakdown from time per set of kernel types (bit 1 COMPUTATION,
// 2 COMMUNICATION, 4 MEMORY): rows named as HTA names them, longest first.
std::vector<KernelTypeRow> KernelTypeRows(const std::array<int64_t, 8>& time_by_types);
// TraceLens gpu_timeline (§4.5): memset counts as computation, unclassified is not read.
// Over device work linked to a launch (TraceLens's default), inside Kineto's GPU-side
// ProfilerStep annotations when the trace has them.
void ComputeTraceLens(const Trace& t, std::span<const WorkInterval> work, const Timeline& tl,
                      const std::vector<int64_t>& launch, const AnalysisOptions& opts, TraceAnalysis* out);
// Operator statistics: host operators and device kernels, by name (and name + shapes).
// For each device slice, the host operator that launched it (external correlation, else the
// innermost counted host operator enclosing its correlated launch); -1 otherwise.
std::vector<int32_t> DeviceLaunchers(const Trace& t, const Classification& c);
void ComputeOpStats(const Trace& t, const Classification& c, TraceAnalysis* out);

}  // namespace rlprof::analysis::internal

#endif  // RLPROF_SRC_ANALYSIS_PASSES_ANALYSE_INTERNAL_H_
