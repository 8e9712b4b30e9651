// Asynchronous RL across a run's processes (issue 32; docs/definitions.md §7): one row per
// process that recorded rlprof.rl's facts (AsyncPools: its window split into sync phases, idle
// by cause, busy and other), then one row per pool (role) summing its processes — the table of
// `rlprof summary RUN --view async`.
// Thread-safety: a pure function of the results.
#ifndef RLPROF_SRC_ANALYSIS_RUN_ASYNC_RUN_H_
#define RLPROF_SRC_ANALYSIS_RUN_ASYNC_RUN_H_

#include <cstdint>
#include <map>
#include <vector>

#include "src/analysis/run/run.h"
#include "src/analysis/tables/tables.h"

namespace rlprof::analysis {

// async_pools: input, rank, role, window, busy, wait_<cause>…, sync, sync_<phase>…, sync_other,
// other (µs), busy_pct, syncs, transfer_mb, transfer_gbps, version_first, version_last,
// consumed, staleness_mean, staleness_max, queue_depth_mean, queue_depth_max (over the
// rl/queue_depth samples the process took), generated, tokens (rl/generated_tokens),
// samples_per_s (generated, else consumed, over the window) and tokens_per_s. Pool rows: input
// "pool <role>", rank = processes, throughput over the pool's longest window (its processes run
// side by side).
Table AsyncPoolsTable(const std::vector<InputResult>& results);

// The run's balance (docs/definitions.md §5.12): the processes that generated (rl/generated)
// against those that consumed (rl/staleness), each pool's rate per process (samples per busy
// second), the balance ratio (generation capacity / training capacity), the verdict
// (rollout-bound < 0.9 ≤ balanced ≤ 1.1 < train-bound), the throughput that capacity allows now
// and with one process moved to the other pool — estimates from the measured rates, as if each
// process kept its rate. Then the run's timeline joined across processes (rank 0's clock):
// generation (busy time of any generating process, as a union), training (likewise), their
// overlap, exposed generation (generation while no training process is busy) and exposed sync
// (a sync while neither pool is busy), µs. One row; "incomplete" without both pools.
Table AsyncVerdictTable(const std::vector<InputResult>& results);

// The run by version interval (docs/definitions.md §5.12): one row from each version's first
// publish (rl/published_version, any process) to the next one — the last to the end of the
// run, and one before the first publish (version null) when the run starts earlier — with the
// trainer steps that ended in it (distinct rl/trainer_version values), the samples generated
// and consumed in it, the staleness of what was consumed, samples per second, the joined
// timeline clipped to it (generation, training, overlap, exposed generation, exposed sync, the
// sync as a union over processes) and the waits by cause summed over processes, µs. Empty
// when no process published.
Table AsyncVersionsTable(const std::vector<InputResult>& results);

// The weight syncs (docs/definitions.md §5.12): one row per published version — the
// publisher's weight_sync stage around its publish, and every process whose weight_sync stage
// overlaps it — with its start (µs from the run's first instant), its duration (first join to
// last end), the participants, `last_join` (from the publisher's sync start to the last
// participant joining: the drain the publisher waits out), the publisher's gather / wait /
// transfer, the receivers' mean drain / wait / transfer / load / resume, the bytes the publisher
// sent (rl/sync_bytes) and their GB/s over its transfer. Empty when no process published.
Table AsyncSyncsTable(const std::vector<InputResult>& results);

// The processes with rlprof.rl's records, their span on the run's clock (first to last instant of
// their splits; lo = INT64_MAX when empty), and each published version's first publish and the
// process (index into `processes`) that made it — what the run-level async tables share.
struct AsyncRun {
  struct Publish {
    int64_t at = 0;
    size_t process = 0;
  };
  std::vector<const InputResult*> processes;
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  std::map<int64_t, Publish> publishes;  // version → its first publish
};
AsyncRun CollectAsyncRun(const std::vector<InputResult>& results);

// Whether some analysed input holds rlprof.rl's records (then runs get the table).
bool AnyAsync(const std::vector<InputResult>& results);

// A process of an async run: one with rlprof.rl's records, or — when `any_async` (some process
// has them) — any other that ran stages (reward workers, a critic, an engine whose generation is
// its stages): a row of its role's pool, with its busy time, in the tables and the report's lanes.
bool InAsyncRun(const InputResult& r, bool any_async);

}  // namespace rlprof::analysis

#endif  // RLPROF_SRC_ANALYSIS_RUN_ASYNC_RUN_H_
