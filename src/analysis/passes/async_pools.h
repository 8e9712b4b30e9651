// Asynchronous RL, one process's view (docs/definitions.md §7, issue 32): where its capture
// window went — the weight sync (rlprof.rl's sync/<phase> ranges and the `weight_sync` stage),
// idle by cause (wait/<cause> ranges), busy (its other stages), other — each instant counted
// once, in that priority (a sync inside a wait is sync); the weight versions it went through
// and the staleness of what it consumed (rlprof.rl's counters).
//
//   AsyncBreakdown b = AsyncPools(trace);
//   if (b.present) … b.wait[kWaitSamples] / b.window: the share a trainer was starved …
//
// Thread-safety: a pure function of the trace.
#ifndef RLPROF_SRC_ANALYSIS_PASSES_ASYNC_POOLS_H_
#define RLPROF_SRC_ANALYSIS_PASSES_ASYNC_POOLS_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "src/analysis/model/trace.h"

namespace rlprof::analysis {

// rlprof.rl's vocabulary (python/rlprof/rl.py): wait/<cause>, sync/<phase>.
inline constexpr const char* kWaitCauses[] = {"samples", "weights", "staleness", "queue_full"};
inline constexpr const char* kSyncPhases[] = {"drain", "gather", "wait", "transfer", "load", "resume"};
inline constexpr size_t kWaitCauseCount = 4, kSyncPhaseCount = 6;
enum WaitCause { kWaitSamples = 0, kWaitWeights, kWaitStaleness, kWaitQueueFull };
// Indices of kSyncPhases (AsyncBreakdown::sync, AsyncSegment::cause of a kSync segment).
enum SyncPhase { kPhaseDrain = 0, kPhaseGather, kPhaseWait, kPhaseTransfer, kPhaseLoad, kPhaseResume };

// A stretch of the window in one class, on rank 0's timeline (what run-level figures join).
struct AsyncSegment {
  enum Kind : int { kSync = 0, kWait = 1, kBusy = 2 };
  int64_t start = 0, end = 0;
  int kind = kBusy;
  int cause = -1;  // kWait: its WaitCause; kSync: its phase (kSyncPhaseCount: the stage's rest)
};

// A timestamped rl/ counter sample: when, and its value.
struct AsyncFact {
  int64_t at = 0;
  int64_t value = 0;
};

struct AsyncBreakdown {
  bool present = false;       // the capture holds rlprof.rl's ranges or counters
  int64_t window = 0;         // ns: the capture window (else first to last event)
  std::array<int64_t, kSyncPhaseCount> sync{};  // per phase, ns
  int64_t sync_other = 0;     // in the weight_sync stage, outside every named phase
  std::array<int64_t, kWaitCauseCount> wait{};  // per cause, ns (outside sync)
  int64_t busy = 0;           // in a stage (not weight_sync), outside sync and waits
  int64_t other = 0;          // the rest of the window
  int64_t syncs = 0;          // weight_sync stages
  double transfer_bytes = 0;  // Σ rl/sync_bytes
  int64_t version_first = -1, version_last = -1;  // rl/weight_version, else rl/trainer_version
  int64_t generated = 0;      // Σ rl/generated: samples a rollout process made
  int64_t tokens = 0;         // Σ rl/generated_tokens: the tokens in them (when recorded)
  int64_t consumed = 0;       // rl/staleness samples: what a trainer took
  double staleness_mean = 0;
  int64_t staleness_max = 0;
  int64_t queue_samples = 0;  // rl/queue_depth samples this process took
  double queue_depth_mean = 0;
  int64_t queue_depth_max = 0;
  std::vector<AsyncSegment> segments;  // the split in time order (other left out), merged
  // The facts in time order, for the run's version intervals (async_run.h).
  std::vector<AsyncFact> published;      // rl/published_version: (when, version)
  std::vector<AsyncFact> generated_at;   // rl/generated: (when, samples)
  std::vector<AsyncFact> consumed_at;    // rl/staleness: (when, staleness)
  std::vector<AsyncFact> trained_at;     // rl/trainer_version: (when, the version an update made)
  std::vector<AsyncFact> sync_bytes_at;  // rl/sync_bytes: (when, bytes)
  std::vector<AsyncSegment> sync_stages; // the weight_sync stages (kind kSync), in time order
  int64_t sync_total() const;
  int64_t wait_total() const;
};

AsyncBreakdown AsyncPools(const Trace& t);

}  // namespace rlprof::analysis

#endif  // RLPROF_SRC_ANALYSIS_PASSES_ASYNC_POOLS_H_
