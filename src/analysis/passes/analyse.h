// One rank's analysis: classification → windows → atomic partition → every view's numbers,
// operator statistics and diagnostics (docs/definitions.md). Inputs are Traces from
// src/analysis/readers; outputs feed src/analysis/tables/tables.h (CSV / SQLite / JSON / terminal).
//
//   Classifier cls = Classifier::Default();
//   TraceAnalysis a = AnalyseTrace(trace, cls, AnalysisOptions{});
//   for (const StepResult& s : a.steps) use(s.atoms.compute(), s.atoms.comm_only, …);
//
// Never fails on bad data: what had to be skipped or repaired is counted in a.diagnostics
// (including every violated invariant, "invariant_*").
// Thread-safety: AnalyseTrace is reentrant; results are plain values.
#ifndef RLPROF_SRC_ANALYSIS_PASSES_ANALYSE_H_
#define RLPROF_SRC_ANALYSIS_PASSES_ANALYSE_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "src/analysis/passes/async_pools.h"
#include "src/analysis/passes/activity.h"
#include "src/analysis/passes/classify.h"
#include "src/analysis/passes/contents.h"
#include "src/analysis/passes/partition.h"
#include "src/analysis/passes/tb_steps.h"
#include "src/analysis/model/trace.h"
#include "src/analysis/passes/windows.h"

namespace rlprof::analysis {

enum class AssignMode { kClip, kByStart, kByLaunch };
// kTraceLens: the TraceLens gpu_timeline as TraceLens computes it — device work linked to its
// launch only through an "ac2g" flow pair, no GPU-side step windows (docs/definitions.md §5.3).
enum class CompatMode { kNative, kHta, kTraceLens };

struct AnalysisOptions {
  AssignMode assign = AssignMode::kClip;
  // kHta: the HTA view rounds µs (end = floor(ts + dur), ts = ceil(ts)) and drops the last
  // ProfilerStep when there are ≥ 2 (HTA's include_last_profiler_step=False).
  CompatMode compat = CompatMode::kNative;
  int64_t consecutive_kernel_delay_ns = 30000;  // HTA idle breakdown threshold (30 µs)
  // The user's step option (docs/definitions.md §2.1): a regex over host range names whose
  // matches replace the trace's step markers (applied by AnalyseInputs after reading).
  std::string step_marker;
  // false: no per-kernel rows (kernel_details empty), so an analysis held in memory grows with
  // steps × stages, not with kernels — for the views that never show them (the report, the
  // cluster view, the run view of `rlprof summary --view rl`; docs/scale.md).
  bool kernel_rows = true;
  // > 0: TraceAnalysis::activity holds each device stream's and host thread's activity at
  // most this many spans per lane (activity.h) — the report timeline's device and host lanes.
  size_t activity_spans = 0;
};

struct StepResult {
  StepWindow window;
  MaskHistogram hist;  // over W (clip) or over W ∪ assigned intervals (by_start, by_launch)
  Atoms atoms;
  int64_t recv_sum = 0;    // Σ p2p receive durations (clipped to W in clip mode)
  int64_t preparing = -1;  // first compute/communication start − h0; -1 if none
  int64_t kernels = 0;     // device work intervals touching the step
  int64_t overflow = 0;    // by_start / by_launch: Σ atoms − ‖W‖ (0 in clip mode)
};

// Communication of one process group in one step (docs/definitions.md §3 comm_by_group).
struct GroupComm {
  int64_t step = 0;
  std::string group;  // process group / HCCL group name, "(none)" when the trace has none
  int64_t ops = 0;    // communication intervals of the group starting in the window
  int64_t comm = 0;   // ‖M_g ∩ W‖
  int64_t comm_not_overlapped = 0;  // ‖(M_g − C) ∩ W‖
};

// One collective operation as the rank saw it (device kernel, or host op in CPU-only traces),
// for the cluster view. P2p send/receive are left out (they do not synchronise all ranks).
struct CollectiveRow {
  std::string name;
  std::string group;  // process group, "" when unknown
  int64_t start = 0, end = 0;
  int64_t bytes = -1;
};

struct StageResult {
  int64_t step = 0;
  std::string role;
  std::string name;  // "(none)" for step time outside every stage
  int64_t start = 0, end = 0;
  int64_t duration = 0;  // ‖stage window‖ (for "(none)": uncovered step time)
  Atoms atoms;
  int64_t recv_sum = 0;
};

struct HtaBreakdown {
  int64_t kernel_time = 0, idle = 0, compute = 0, non_compute = 0;  // ns
  int64_t comm = 0, overlap = 0;  // for comp_comm_overlap_pctg (NaN when comm == 0)
};

// HTA's get_gpu_kernel_breakdown, its kernel-type part: device time by the set of kernel types
// running at once — "COMPUTATION", "COMMUNICATION", "MEMORY" and their overlaps, e.g.
// "COMPUTATION overlapping COMMUNICATION" (docs/definitions.md §4.4).
struct KernelTypeRow {
  std::string kernel_type;
  int64_t time = 0;  // ns
};

struct IdleBreakdownRow {
  std::string stream;
  int64_t host_wait = 0, kernel_wait = 0, other = 0;
};

struct TraceLensTimeline {
  int64_t total = 0, computation = 0, exposed_comm = 0, exposed_memcpy = 0, busy = 0, idle = 0,
          total_comm = 0, total_memcpy = 0;
  // GPU-side ProfilerStep annotations the timeline was computed inside (0: the whole trace).
  int64_t gpu_step_windows = 0;
};

struct OpStat {
  std::string name;
  std::string shapes;  // "" in the by-name table
  int64_t count = 0, total = 0, self = 0, min = 0, max = 0, p50 = 0, p99 = 0;
  double mean = 0;
  // Host operators: Σ durations and count of the device work they launched (the kernel's
  // launching operator: by external correlation id where the capture has it, else the
  // innermost host operator enclosing the launch with the kernel's correlation id). 0 on
  // device rows.
  int64_t device_total = 0, kernels = 0;
};

// One device work interval (kernel_details.csv).
struct KernelRow {
  int64_t step = -1;  // step of the window containing its start, -1 outside every window
  std::string name;
  WorkClass cls = WorkClass::kCompute;
  std::string stream;  // "device:stream"
  int64_t start = 0, dur = 0;
  int64_t wait = 0;  // gap since the previous work on the same stream ended (0 if none)
};

struct ClassTotal {
  int64_t count = 0;
  int64_t total = 0;  // Σ durations (not a union)
};

struct TraceAnalysis {
  std::string source, format;
  int64_t rank = -1;
  std::string host, role;  // Trace's identity
  int64_t pid = -1;
  bool cpu_only = false;  // no device work: the partition runs over host threads
  double ops_sampling = 1.0;  // Trace::ops_sampling: host_ops are estimates when below 1
  bool step_is_capture_window = false;   // Trace::step_is_capture_window
  bool stage_is_capture_window = false;  // Trace::stage_is_capture_window
  std::vector<StepResult> steps;
  std::vector<StageResult> stages;
  std::vector<GroupComm> comm_by_group;  // by step, then group name
  std::vector<CollectiveRow> collectives;  // in start order
  HtaBreakdown hta;
  std::vector<KernelTypeRow> kernel_types;  // by time, longest first
  std::vector<IdleBreakdownRow> idle_breakdown;
  TraceLensTimeline tracelens;
  std::vector<OpStat> host_ops, host_ops_by_shape, kernels;
  std::vector<KernelRow> kernel_rows;
  std::array<ClassTotal, kWorkClassCount> classes{};
  // Framework contents (src/analysis/passes/contents.h): empty when the capture has none.
  std::vector<ModuleRow> modules;
  std::vector<RangeRow> user_ranges;  // --view ranges
  AsyncBreakdown async;               // --view async (async_pools.h): present with rlprof.rl's records
  std::vector<SampleRecord> samples;  // --view samples: each sample's life (step filled in)
  std::vector<SampleUse> sample_uses; // what became of samples (recorded where they were used)
  int64_t wall_offset_ns = INT64_MIN; // Trace::wall_offset_ns (Unix ns = time + it; exports)
  std::vector<MemoryPeakRow> memory_peaks;
  std::vector<OutOfMemoryRow> out_of_memory;  // allocations that failed (contents: memory)
  std::vector<FrameRow> ops_by_frame;
  // torch-tb-profiler 0.4.3's step time breakdown (tb_steps.h; --view tb).
  std::vector<TbStepRow> tb_steps;
  // Device and host activity lanes (AnalysisOptions::activity_spans > 0; activity.h).
  std::vector<ActivityLane> activity;
  int64_t activity_lanes_left_out = 0;  // streams and threads beyond the busiest kept
  Diagnostics diagnostics;  // reader's + analysis's
};

TraceAnalysis AnalyseTrace(const Trace& t, const Classifier& cls, const AnalysisOptions& opts);

// Work intervals of a trace (device tracks; host threads when there is no device work).
// Exposed for tests and benchmarks. Same-stream overlaps are clipped to the next start and
// counted as "overlapping_same_stream_kernels".
std::vector<WorkInterval> CollectWork(const Trace& t, const Classification& c, bool* cpu_only,
                                      Diagnostics* diag);

}  // namespace rlprof::analysis

#endif  // RLPROF_SRC_ANALYSIS_PASSES_ANALYSE_H_
