#include "src/analysis/passes/partition.h"

#include <algorithm>

namespace rlprof::analysis {

Atoms MaskHistogram::atoms() const {
  Atoms a;
  for (int m = 0; m < kMaskCount; ++m) {
    const int64_t t = time[m];
    if (m == 0) a.idle += t;
    else if ((m & kBitCompute) && (m & kBitComm)) a.overlap += t;
    else if (m & kBitCompute) a.compute_only += t;
    else if (m & kBitComm) a.comm_only += t;
    else if (m & (kBitMemcpy | kBitMemset)) a.memory_only += t;
    else a.other_only += t;
  }
  return a;
}

int64_t MaskHistogram::Covered(uint8_t bits) const { return CoveredExcept(bits, 0); }

int64_t MaskHistogram::CoveredExcept(uint8_t bits, uint8_t excluded) const {
  int64_t s = 0;
  for (int m = 1; m < kMaskCount; ++m)
    if ((m & bits) && !(m & excluded)) s += time[m];
  return s;
}

void MaskHistogram::Add(const MaskHistogram& o) {
  for (int m = 0; m < kMaskCount; ++m) time[m] += o.time[m];
  if (o.first_active >= 0 && (first_active < 0 || o.first_active < first_active))
    first_active = o.first_active;
  last_active = std::max(last_active, o.last_active);
  window_start = std::min(window_start, o.window_start);
  window_end = std::max(window_end, o.window_end);
}

Timeline Timeline::Build(std::span<const WorkInterval> work) {
  struct Edge {
    int64_t t;
    int8_t delta;
    uint8_t bit;
  };
  std::vector<Edge> edges;
  edges.reserve(work.size() * 2);
  for (const auto& w : work) {
    if (w.end <= w.start) continue;
    edges.push_back({w.start, +1, w.bit});
    edges.push_back({w.end, -1, w.bit});
  }
  std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) { return a.t < b.t; });
  Timeline tl;
  int64_t count[8] = {};
  size_t i = 0;
  while (i < edges.size()) {
    const int64_t t = edges[i].t;
    while (i < edges.size() && edges[i].t == t) {
      int b = __builtin_ctz(edges[i].bit);
      count[b] += edges[i].delta;
      ++i;
    }
    if (i == edges.size()) break;
    uint8_t mask = 0;
    for (int b = 0; b < 5; ++b)
      if (count[b] > 0) mask |= static_cast<uint8_t>(1u << b);
    const int64_t next = edges[i].t;
    if (mask == 0) continue;
    if (!tl.runs_.empty() && tl.runs_.back().end == t && tl.runs_.back().mask == mask)
      tl.runs_.back().end = next;
    else
      tl.runs_.push_back({t, next, mask});
  }
  return tl;
}

MaskHistogram Timeline::Histogram(int64_t start, int64_t end) const {
  MaskHistogram h;
  h.window_start = start;
  h.window_end = std::max(start, end);
  if (end <= start) return h;
  auto it = std::upper_bound(runs_.begin(), runs_.end(), start,
                             [](int64_t v, const Run& r) { return v < r.end; });
  int64_t covered = 0;
  for (; it != runs_.end() && it->start < end; ++it) {
    const int64_t s = std::max(start, it->start);
    const int64_t e = std::min(end, it->end);
    if (e <= s) continue;
    h.time[it->mask] += e - s;
    covered += e - s;
    if (h.first_active < 0) h.first_active = s;
    h.last_active = e;
  }
  h.time[0] = (end - start) - covered;
  return h;
}

MergedSet MergedSet::Build(std::vector<std::pair<int64_t, int64_t>> in) {
  std::sort(in.begin(), in.end());
  MergedSet m;
  for (const auto& [s, e] : in) {
    if (!m.iv_.empty() && s <= m.iv_.back().second) {
      m.iv_.back().second = std::max(m.iv_.back().second, e);
    } else {
      m.iv_.push_back({s, e});
    }
  }
  // Zero-length intervals are dropped after merging.
  std::erase_if(m.iv_, [](const auto& p) { return p.second <= p.first; });
  int64_t acc = 0;
  for (const auto& [s, e] : m.iv_) m.prefix_.push_back(acc += e - s);
  return m;
}

int64_t MergedSet::Length(int64_t start, int64_t end) const {
  if (end <= start || iv_.empty()) return 0;
  auto lo = std::upper_bound(iv_.begin(), iv_.end(), start,
                             [](int64_t v, const auto& p) { return v < p.second; });
  auto hi = std::lower_bound(iv_.begin(), iv_.end(), end,
                             [](const auto& p, int64_t v) { return p.first < v; });
  if (lo >= hi) return 0;
  size_t a = lo - iv_.begin(), b = hi - iv_.begin();  // [a, b) overlap the window
  int64_t total = prefix_[b - 1] - (a ? prefix_[a - 1] : 0);
  total -= std::max<int64_t>(0, start - iv_[a].first);
  total -= std::max<int64_t>(0, iv_[b - 1].second - end);
  return total;
}

std::vector<std::pair<int64_t, int64_t>> Subtract(const std::vector<std::pair<int64_t, int64_t>>& a,
                                                  const std::vector<std::pair<int64_t, int64_t>>& b) {
  std::vector<std::pair<int64_t, int64_t>> out;
  size_t j = 0;
  for (auto [s, e] : a) {
    while (j < b.size() && b[j].second <= s) ++j;
    size_t k = j;
    while (s < e) {
      if (k >= b.size() || b[k].first >= e) {
        out.push_back({s, e});
        break;
      }
      if (b[k].first > s) out.push_back({s, b[k].first});
      s = std::max(s, b[k].second);
      ++k;
    }
  }
  return out;
}

}  // namespace rlprof::analysis
