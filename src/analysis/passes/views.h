// Each tool's view derived from the atoms (docs/definitions.md §4): msprof step_trace_time
// columns, HTA temporal-breakdown percentages, TraceLens rows. Pure arithmetic on results of
// AnalyseTrace; all times in ns (the table writers convert units).
//
//   MsprofRow m = MsprofFromStep(analysis.steps[0]);   // m.computing, m.free, m.stage, …
//
// Thread-safety: pure functions.
#ifndef RLPROF_SRC_ANALYSIS_PASSES_VIEWS_H_
#define RLPROF_SRC_ANALYSIS_PASSES_VIEWS_H_

#include <cstdint>

#include "src/analysis/passes/analyse.h"

namespace rlprof::analysis {

struct MsprofRow {
  int64_t computing = 0;                 // compute_only + overlap
  int64_t comm_not_overlapped = 0;       // comm_only
  int64_t overlapped = 0;                // overlap
  int64_t communication = 0;             // comm_only + overlap
  int64_t free = 0;                      // memory_only + other_only + idle
  int64_t stage = 0;                     // ‖W‖ − recv_sum
  int64_t bubble = 0;                    // recv_sum
  int64_t not_overlapped_excl_recv = 0;  // comm_only − recv_sum (may be negative)
  int64_t preparing = 0;                 // first compute/comm start − h0 (0 when none)
};
MsprofRow MsprofFromStep(const StepResult& s);

struct HtaPercent {
  double idle = 0, compute = 0, non_compute = 0;  // % of kernel_time, 2 decimals
  double comm_comp_overlap = 0;                   // %, NaN when there is no communication
};
HtaPercent HtaPercentages(const HtaBreakdown& h);

double Round2(double v);  // numpy.around(v, 2): half to even, as pandas' round(Series, 2)

}  // namespace rlprof::analysis

#endif  // RLPROF_SRC_ANALYSIS_PASSES_VIEWS_H_
