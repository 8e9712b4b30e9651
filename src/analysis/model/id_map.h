// IdMap: the ids traces link records by (Kineto / CUPTI correlation ids, external ids) → a value,
// for the joins of one analysis. Those ids mostly count up from a small number, so the map is a
// vector indexed by id when the ids it will hold are dense enough, else a hash map; either way
// it is freed at once (no node per id).
//
//   IdMap<int64_t> launch(t.correlation);       // the ids it may be given (to pick the layout)
//   launch.Put(t.correlation[i], t.ts[i]);       // the first value put for an id stays
//   if (const int64_t* ts = launch.Find(id)) …
//
// Negative ids are "none": Put ignores them, Find returns null. Not thread-safe.
#ifndef RLPROF_SRC_ANALYSIS_MODEL_ID_MAP_H_
#define RLPROF_SRC_ANALYSIS_MODEL_ID_MAP_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

namespace rlprof::analysis {

template <typename V>
class IdMap {
 public:
  // `ids`: a superset of the ids that will be put (negative ones are ignored). Dense: the span
  // from the smallest to the largest is at most 4 × their count + 4096.
  explicit IdMap(std::span<const int64_t> ids) {
    int64_t lo = INT64_MAX, hi = -1;
    size_t count = 0;
    for (int64_t id : ids) {
      if (id < 0) continue;
      lo = std::min(lo, id);
      hi = std::max(hi, id);
      ++count;
    }
    if (count == 0) return;
    const uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
    if (span <= 4 * static_cast<uint64_t>(count) + 4096) {
      dense_ = true;
      base_ = lo;
      slots_.resize(span);
      present_.resize(span, 0);
    } else {
      sparse_.reserve(count);
    }
  }

  // The first value put for `id` stays.
  void Put(int64_t id, const V& v) { Store(id, v, false); }
  // The last value set for `id` stays.
  void Set(int64_t id, const V& v) { Store(id, v, true); }

  const V* Find(int64_t id) const {
    if (id < 0) return nullptr;
    if (InDense(id)) {
      const size_t k = static_cast<size_t>(id - base_);
      return present_[k] ? &slots_[k] : nullptr;
    }
    if (sparse_.empty()) return nullptr;
    auto it = sparse_.find(id);
    return it == sparse_.end() ? nullptr : &it->second;
  }
  bool Contains(int64_t id) const { return Find(id) != nullptr; }
  bool empty() const { return size_ == 0; }

 private:
  bool InDense(int64_t id) const {
    return dense_ && id >= base_ && static_cast<uint64_t>(id - base_) < slots_.size();
  }

  void Store(int64_t id, const V& v, bool overwrite) {
    if (id < 0) return;
    if (InDense(id)) {
      const size_t k = static_cast<size_t>(id - base_);
      if (!present_[k]) {
        present_[k] = 1;
        slots_[k] = v;
        ++size_;
      } else if (overwrite) {
        slots_[k] = v;
      }
      return;
    }
    // Sparse ids, or (when `ids` was not a superset) an id outside the vector's span.
    auto [it, fresh] = sparse_.emplace(id, v);
    if (fresh) ++size_;
    else if (overwrite) it->second = v;
  }

  bool dense_ = false;
  int64_t base_ = 0;
  std::vector<V> slots_;
  std::vector<uint8_t> present_;
  std::unordered_map<int64_t, V> sparse_;
  size_t size_ = 0;
};

}  // namespace rlprof::analysis

#endif  // RLPROF_SRC_ANALYSIS_MODEL_ID_MAP_H_
