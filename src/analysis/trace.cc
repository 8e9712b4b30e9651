#include "src/analysis/trace.h"

#include <algorithm>
#include <numeric>

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
  parent.push_back(-1);
  return ts.size() - 1;
}

namespace {
template <typename T>
void Permute(std::vector<T>& v, const std::vector<size_t>& order) {
  std::vector<T> out;
  out.reserve(v.size());
  for (size_t i : order) out.push_back(v[i]);
  v.swap(out);
}
}  // namespace

void Trace::Finalize() {
  const size_t n = ts.size();
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (track[a] != track[b]) return track[a] < track[b];
    if (ts[a] != ts[b]) return ts[a] < ts[b];
    return dur[a] > dur[b];  // enclosing first
  });
  Permute(ts, order);
  Permute(dur, order);
  Permute(name, order);
  Permute(category, order);
  Permute(track, order);
  Permute(kind, order);
  Permute(correlation, order);
  Permute(shapes, order);
  Permute(bytes, order);
  Permute(group, order);
  Permute(collective, order);
  Permute(detail, order);
  Permute(external, order);
  parent.assign(n, -1);
  // Nesting per track with a stack of open slices.
  std::vector<int32_t> stack;
  uint32_t cur_track = UINT32_MAX;
  for (size_t i = 0; i < n; ++i) {
    if (track[i] != cur_track) {
      stack.clear();
      cur_track = track[i];
    }
    int64_t end = ts[i] + dur[i];
    while (!stack.empty() && ts[stack.back()] + dur[stack.back()] <= ts[i]) stack.pop_back();
    if (!stack.empty()) {
      int32_t p = stack.back();
      if (end > ts[p] + dur[p]) diagnostics.Add("improper_nesting");
      parent[i] = p;
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
