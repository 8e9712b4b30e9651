// async_syncs (async_run.h): one row per weight sync, joined across the processes that took part.
#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "src/analysis/run/async_run.h"

namespace rlprof::analysis {
namespace {

double Us(int64_t ns) { return static_cast<double>(ns) / 1e3; }

// Time in each sync phase (kSyncPhaseCount: the stage's rest) inside [lo, hi).
std::array<int64_t, kSyncPhaseCount + 1> Phases(const AsyncBreakdown& b, int64_t lo, int64_t hi) {
  std::array<int64_t, kSyncPhaseCount + 1> out{};
  for (const AsyncSegment& g : b.segments) {
    if (g.kind != AsyncSegment::kSync || g.cause < 0 || g.cause > static_cast<int>(kSyncPhaseCount)) continue;
    const int64_t len = std::min(g.end, hi) - std::max(g.start, lo);
    if (len > 0) out[static_cast<size_t>(g.cause)] += len;
  }
  return out;
}

// A partial rollout's drain (just before its weight_sync stage) and resume (just after) belong
// to the sync too: the phases of those kinds that touch [lo, hi) within 1 ms.
void AddAdjacent(const AsyncBreakdown& b, int64_t lo, int64_t hi, std::array<int64_t, kSyncPhaseCount + 1>* out) {
  constexpr int64_t kNear = 1'000'000;
  for (const AsyncSegment& g : b.segments) {
    if (g.kind != AsyncSegment::kSync) continue;
    if (g.cause == kPhaseDrain && g.end <= lo && g.end >= lo - kNear) (*out)[kPhaseDrain] += g.end - g.start;
    if (g.cause == kPhaseResume && g.start >= hi && g.start <= hi + kNear) (*out)[kPhaseResume] += g.end - g.start;
  }
}

}  // namespace

Table AsyncSyncsTable(const std::vector<InputResult>& results) {
  Table t{"async_syncs",
          {Column{"version", ColumnType::kInt, ""}, Column{"start", ColumnType::kReal, "us"},
           Column{"duration", ColumnType::kReal, "us"}, Column{"participants", ColumnType::kInt, ""},
           Column{"last_join", ColumnType::kReal, "us"}, Column{"publisher_gather", ColumnType::kReal, "us"},
           Column{"publisher_wait", ColumnType::kReal, "us"}, Column{"publisher_transfer", ColumnType::kReal, "us"},
           Column{"receiver_drain", ColumnType::kReal, "us"}, Column{"receiver_wait", ColumnType::kReal, "us"},
           Column{"receiver_transfer", ColumnType::kReal, "us"}, Column{"receiver_load", ColumnType::kReal, "us"},
           Column{"receiver_resume", ColumnType::kReal, "us"}, Column{"transfer_mb", ColumnType::kReal, "MB"},
           Column{"transfer_gbps", ColumnType::kReal, "GB/s"}},
          {}};
  const AsyncRun run = CollectAsyncRun(results);
  std::vector<const AsyncBreakdown*> procs;
  for (const InputResult* r : run.processes) procs.push_back(&r->analysis.async);
  const int64_t lo = run.lo;
  for (const auto& [version, p] : run.publishes) {
    const int64_t at = p.at;
    const size_t pub = p.process;
    // The publisher's sync: its weight_sync stage around the publish (else the instant).
    AsyncSegment w{at, at, AsyncSegment::kSync, -1};
    for (const AsyncSegment& s : procs[pub]->sync_stages)
      if (s.start <= at && at <= s.end) w = s;
    // Everyone whose weight_sync stage overlaps it took part.
    int64_t start = w.start, end = w.end, last_join = w.start;
    int64_t receivers = 0;
    std::array<double, kSyncPhaseCount + 1> recv{};
    for (size_t p = 0; p < procs.size(); ++p) {
      if (p == pub) continue;
      for (const AsyncSegment& s : procs[p]->sync_stages) {
        if (!(s.start < std::max(w.end, w.start + 1) && s.end > w.start)) continue;
        ++receivers;
        start = std::min(start, s.start);
        end = std::max(end, s.end);
        last_join = std::max(last_join, s.start);
        auto ph = Phases(*procs[p], s.start, s.end);
        AddAdjacent(*procs[p], s.start, s.end, &ph);
        for (size_t i = 0; i < ph.size(); ++i) recv[i] += static_cast<double>(ph[i]);
        break;
      }
    }
    const auto own = Phases(*procs[pub], w.start, w.end);
    double bytes = 0;
    for (const AsyncFact& f : procs[pub]->sync_bytes_at)
      if (f.at >= w.start && f.at <= w.end) bytes += static_cast<double>(f.value);
    const int64_t transfer = own[kPhaseTransfer];
    auto mean = [&](size_t phase) { return receivers > 0 ? Cell(recv[phase] / static_cast<double>(receivers) / 1e3) : Cell(); };
    t.rows.push_back({version, Us(start - (lo == INT64_MAX ? start : lo)), Us(end - start), receivers + 1,
                      Us(last_join - w.start), Us(own[kPhaseGather]), Us(own[kPhaseWait]), Us(transfer), mean(kPhaseDrain),
                      mean(kPhaseWait), mean(kPhaseTransfer), mean(kPhaseLoad), mean(kPhaseResume), bytes / 1e6, transfer > 0 ? Cell(bytes / static_cast<double>(transfer)) : Cell()});
  }
  return t;
}

}  // namespace rlprof::analysis
