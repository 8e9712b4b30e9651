#include "src/analysis/model/trace.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <numeric>
#include <type_traits>

#include "src/base/time_math.h"

namespace rlprof::analysis {

uint32_t StringTable::Intern(std::string_view s) {
  auto it = index_.find(std::string(s));
  if (it != index_.end()) return it->second;
  uint32_t id = static_cast<uint32_t>(strings_.size());
  strings_.emplace_back(s);
  index_.emplace(strings_.back(), id);
  return id;
}

uint32_t Trace::AddTrack(Track t) {
  uint32_t id = static_cast<uint32_t>(tracks.size());
  auto key = t.type == TrackType::kDeviceStream
                 ? std::make_tuple(static_cast<int>(t.type), static_cast<int64_t>(t.device), t.stream)
                 : std::make_tuple(static_cast<int>(t.type), t.pid, t.tid);
  track_index_.emplace(key, id);
  tracks.push_back(std::move(t));
  return id;
}

uint32_t Trace::ThreadTrack(int64_t pid, int64_t tid) {
  auto it = track_index_.find({static_cast<int>(TrackType::kThread), pid, tid});
  if (it != track_index_.end()) return it->second;
  Track t;
  t.type = TrackType::kThread;
  t.pid = pid;
  t.tid = tid;
  return AddTrack(t);
}

uint32_t Trace::StreamTrack(int32_t device, int64_t stream) {
  auto it = track_index_.find({static_cast<int>(TrackType::kDeviceStream), device, stream});
  if (it != track_index_.end()) return it->second;
  Track t;
  t.type = TrackType::kDeviceStream;
  t.device = device;
  t.stream = stream;
  t.pid = device;
  t.tid = stream;
  return AddTrack(t);
}

size_t Trace::AddSlice(int64_t ts_ns, int64_t dur_ns, uint32_t name_id, uint32_t category_id,
                       uint32_t track_id, SliceKind k) {
  // Readers drop events whose time is out of range; this is the backstop that keeps every
  // later ts + dur and end − start from overflowing (src/base/time_math.h).
  if (base::ClampTime(&ts_ns)) diagnostics.Add("time_clamped");
  if (dur_ns < 0) {
    diagnostics.Add("negative_duration");
    dur_ns = 0;
  } else if (base::ClampDuration(ts_ns, &dur_ns)) {
    diagnostics.Add("duration_clamped");
  }
  ts.push_back(ts_ns);
  dur.push_back(dur_ns);
  name.push_back(name_id);
  category.push_back(category_id);
  track.push_back(track_id);
  kind.push_back(k);
  correlation.push_back(-1);
  shapes.push_back(0);
  bytes.push_back(-1);
  group.push_back(0);
  collective.push_back(0);
  detail.push_back(0);
  external.push_back(-1);
  flags.push_back(0);
  parent.push_back(-1);
  return ts.size() - 1;
}

namespace {
// Calls f on every per-slice column but `parent` (which Finalize derives): the one list of them
// that Reserve and Finalize's reordering share.
template <typename F>
void ForEachSliceColumn(Trace& t, F&& f) {
  f(t.ts), f(t.dur), f(t.name), f(t.category), f(t.track), f(t.kind), f(t.correlation), f(t.shapes),
      f(t.bytes), f(t.group), f(t.collective), f(t.detail), f(t.external), f(t.flags);
}
}  // namespace

void Trace::Reserve(size_t n) {
  ForEachSliceColumn(*this, [n](auto& column) { column.reserve(n); });
  parent.reserve(n);
}

namespace {
// Reorders `v` by `order` in place through `scratch` (at least v.size() * 8 bytes, shared by
// every column): no new column is allocated, so no fresh pages are faulted and no old ones
// unmapped for each of the 13 columns.
template <typename T>
void Permute(std::vector<T>& v, const std::vector<uint32_t>& order, void* scratch) {
  static_assert(sizeof(T) <= sizeof(int64_t) && std::is_trivially_copyable_v<T>);
  T* out = static_cast<T*>(scratch);
  const T* in = v.data();
  const size_t n = order.size();
  for (size_t i = 0; i < n; ++i) out[i] = in[order[i]];
  std::memcpy(v.data(), out, n * sizeof(T));
}
}  // namespace

void Trace::Finalize() {
  const size_t n = ts.size();
  // The order (track, ts, -dur), stable: a counting pass by track (stable), then each track's
  // rows sorted by time only where they are not already (events come mostly in time order
  // per thread and stream). Row indices fit 32 bits: parent is int32 too.
  std::vector<uint32_t> order(n);
  {
    std::vector<uint32_t> start(tracks.size() + 2, 0);
    uint32_t max_track = 0;
    for (size_t i = 0; i < n; ++i) max_track = std::max(max_track, track[i]);
    if (start.size() < size_t{max_track} + 2) start.resize(size_t{max_track} + 2, 0);
    for (size_t i = 0; i < n; ++i) ++start[track[i] + 1];
    for (size_t t = 1; t < start.size(); ++t) start[t] += start[t - 1];
    std::vector<uint32_t> fill(start.begin(), start.end() - 1);
    for (size_t i = 0; i < n; ++i) order[fill[track[i]]++] = static_cast<uint32_t>(i);
    auto before = [&](uint32_t a, uint32_t b) {
      if (ts[a] != ts[b]) return ts[a] < ts[b];
      return dur[a] > dur[b];  // enclosing first
    };
    for (size_t t = 0; t + 1 < start.size(); ++t) {
      auto b = order.begin() + start[t], e = order.begin() + start[t + 1];
      if (!std::is_sorted(b, e, before)) std::stable_sort(b, e, before);
    }
  }
  bool identity = true;
  for (size_t i = 0; i < n && identity; ++i) identity = order[i] == i;
  if (!identity) {
    std::unique_ptr<int64_t[]> scratch(new int64_t[n]);
    ForEachSliceColumn(*this, [&](auto& column) { Permute(column, order, scratch.get()); });
  }
  parent.assign(n, -1);
  // Nesting per track with a stack of open slices. On an async track (ranges started and
  // ended by handle: NVTX domain ranges, rlprof_range_start, concurrent coroutines on one
  // event loop) ranges may overlap without nesting, as async slices do in Perfetto: a range's
  // parent is the innermost open range that encloses it, if any, and nothing is wrong.
  std::vector<int32_t> stack;
  uint32_t cur_track = UINT32_MAX;
  bool async = false;
  for (size_t i = 0; i < n; ++i) {
    if (track[i] != cur_track) {
      stack.clear();
      cur_track = track[i];
      async = cur_track < tracks.size() && tracks[cur_track].type == TrackType::kAsync;
    }
    int64_t end = ts[i] + dur[i];
    while (!stack.empty() && ts[stack.back()] + dur[stack.back()] <= ts[i]) stack.pop_back();
    if (!stack.empty()) {
      int32_t p = stack.back();
      if (end <= ts[p] + dur[p]) {
        parent[i] = p;
      } else if (!async) {
        diagnostics.Add("improper_nesting");
        parent[i] = p;
      } else {
        for (size_t k = stack.size(); k-- > 0;)
          if (ts[stack[k]] + dur[stack[k]] >= end) {
            parent[i] = stack[k];
            break;
          }
      }
    }
    if (kind[i] == SliceKind::kRange) stack.push_back(static_cast<int32_t>(i));
  }
  auto by_start = [](const Marker& a, const Marker& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
  };
  std::sort(steps.begin(), steps.end(), by_start);
  std::sort(stages.begin(), stages.end(), by_start);
  std::sort(counters.begin(), counters.end(), [](const CounterSample& a, const CounterSample& b) {
    return a.track != b.track ? a.track < b.track : a.ts_ns < b.ts_ns;
  });
}

}  // namespace rlprof::analysis
