// The cluster view (`rlprof cluster`): many ranks of one run side by side — is every rank
// doing the same, and if not, which one holds the others up? (docs/definitions.md §5.9,
// reference §4.3 msprof-analyze `cluster` / `slow_rank`, §4.5 collectives, §5.5–5.7.)
//
//   auto results = AnalyseInputs(inputs, cls, opts, jobs);   // one input per rank (or several)
//   ClusterResult c = AnalyseCluster(results);
//   print(ToText(c.balance)); print(ToText(c.slow_ranks));
//
// Inputs of the same rank (discrete captures of one rank) are merged; an input without a rank
// counts as its own rank (named by its index) and is noted.
// Thread-safety: pure function.
#ifndef RLPROF_SRC_ANALYSIS_RUN_CLUSTER_H_
#define RLPROF_SRC_ANALYSIS_RUN_CLUSTER_H_

#include <vector>

#include "src/analysis/run/run.h"
#include "src/analysis/tables/tables.h"

namespace rlprof::analysis {

struct ClusterResult {
  Table step_time;    // cluster_step_trace_time: msprof columns per (rank, step)
  Table balance;      // cluster_balance: per step and column, min / max / mean over ranks, imbalance
  Table slow_ranks;   // slow_rank: ranks flagged by Dixon's Q test (3σ above 100 ranks), how often
  Table collectives;  // collectives: per instance latency, waits, start/end skew, latest arrival, bandwidth
  Diagnostics diagnostics;
};

ClusterResult AnalyseCluster(const std::vector<InputResult>& results);

// Dixon's one-sided test for a low outlier at 99.5 % (reference §4.3.1): for n = 3..100 values,
// true when the smallest is an outlier. Exposed for tests.
bool DixonLowOutlier(std::vector<double> values);
// The critical value used for n (the reference's table; n between two listed sizes above 13 is
// interpolated linearly), 0 outside 3..100.
double DixonCritical(size_t n);
// NCCL's bus-bandwidth factor for a collective name on n ranks (all-reduce 2(n−1)/n, all-gather,
// reduce-scatter, all-to-all (n−1)/n, broadcast / reduce / others 1).
double BusBandwidthFactor(const std::string& name, size_t n);

}  // namespace rlprof::analysis

#endif  // RLPROF_SRC_ANALYSIS_RUN_CLUSTER_H_
