// The atomic partition (docs/definitions.md §3): one sweep over the sorted boundaries of a
// rank's classified work intervals builds a timeline of runs, each labelled with the set
// (bit mask) of classes active in it. Any window's atoms are then read off that timeline by
// binary search: O(n log n) to build, O(log n + runs in the window) per window, no buckets.
//
//   std::vector<WorkInterval> work = …;            // compute / comm / memcpy / memset / other
//   Timeline tl = Timeline::Build(work);
//   MaskHistogram h = tl.Histogram(w_start, w_end);  // time per class mask inside the window
//   Atoms a = h.atoms();                              // compute_only, overlap, …, idle
//
// Thread-safety: immutable after Build; read concurrently.
#ifndef RLPROF_SRC_ANALYSIS_PASSES_PARTITION_H_
#define RLPROF_SRC_ANALYSIS_PASSES_PARTITION_H_

#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace rlprof::analysis {

// Class bits of the partition.
inline constexpr uint8_t kBitCompute = 1;
inline constexpr uint8_t kBitComm = 2;
inline constexpr uint8_t kBitMemcpy = 4;
inline constexpr uint8_t kBitMemset = 8;
inline constexpr uint8_t kBitOther = 16;
inline constexpr int kMaskCount = 32;

struct WorkInterval {
  int64_t start = 0;
  int64_t end = 0;  // half-open [start, end)
  uint8_t bit = 0;  // exactly one kBit*
  bool recv = false;
  int32_t slice = -1;  // row in the Trace, -1 if synthetic
};

struct Atoms {
  int64_t compute_only = 0;  // C − M
  int64_t comm_only = 0;     // M − C
  int64_t overlap = 0;       // C ∩ M
  int64_t memory_only = 0;   // Y − C − M
  int64_t other_only = 0;    // O − C − M − Y
  int64_t idle = 0;          // W − (C ∪ M ∪ Y ∪ O)
  int64_t compute() const { return compute_only + overlap; }
  int64_t comm() const { return comm_only + overlap; }
  int64_t sum() const { return compute_only + comm_only + overlap + memory_only + other_only + idle; }
};

// Time inside one window per class mask, plus the span of activity inside it.
struct MaskHistogram {
  std::array<int64_t, kMaskCount> time{};  // time[0] = idle
  int64_t window_start = 0;
  int64_t window_end = 0;
  int64_t first_active = -1;  // first instant with any activity (-1: none)
  int64_t last_active = -1;   // end of the last activity

  int64_t window() const { return window_end - window_start; }
  Atoms atoms() const;
  // ‖class set‖ within the window for any of `bits` (e.g. kBitCompute | kBitMemset).
  int64_t Covered(uint8_t bits) const;
  // ‖any of `bits` and none of `excluded`‖.
  int64_t CoveredExcept(uint8_t bits, uint8_t excluded) const;
  // ‖memcpy − C − M‖ and ‖memset − C − M − memcpy‖.
  int64_t memcpy_only() const { return CoveredExcept(kBitMemcpy, kBitCompute | kBitComm); }
  int64_t memset_only() const {
    return CoveredExcept(kBitMemset, kBitCompute | kBitComm | kBitMemcpy);
  }
  void Add(const MaskHistogram& o);  // sums times (windows must be disjoint); spans widen
};

struct Run {
  int64_t start;
  int64_t end;
  uint8_t mask;
};

class Timeline {
 public:
  // One sweep over 2n sorted boundaries; zero-length and inverted intervals are ignored.
  static Timeline Build(std::span<const WorkInterval> work);
  MaskHistogram Histogram(int64_t start, int64_t end) const;
  const std::vector<Run>& runs() const { return runs_; }

 private:
  std::vector<Run> runs_;  // sorted, disjoint, only non-zero masks, adjacent equal masks merged
};

// A merged interval set (§0 merging: touching intervals join) with prefix sums, used to check
// the invariants independently of the sweep.
class MergedSet {
 public:
  static MergedSet Build(std::vector<std::pair<int64_t, int64_t>> intervals);
  int64_t Length(int64_t start, int64_t end) const;  // ‖set ∩ [start, end)‖
  int64_t Length() const { return prefix_.empty() ? 0 : prefix_.back(); }
  const std::vector<std::pair<int64_t, int64_t>>& intervals() const { return iv_; }

 private:
  std::vector<std::pair<int64_t, int64_t>> iv_;
  std::vector<int64_t> prefix_;  // prefix_[i] = Σ lengths of iv_[0..i]
};

// Interval-set difference of two merged, sorted lists: A − B.
std::vector<std::pair<int64_t, int64_t>> Subtract(const std::vector<std::pair<int64_t, int64_t>>& a,
                                                  const std::vector<std::pair<int64_t, int64_t>>& b);

}  // namespace rlprof::analysis

#endif  // RLPROF_SRC_ANALYSIS_PASSES_PARTITION_H_
