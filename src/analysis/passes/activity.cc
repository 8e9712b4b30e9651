// Activity lanes (activity.h): per device stream and host thread, bounded-resolution spans.
#include "src/analysis/passes/activity.h"

#include <algorithm>
#include <array>
#include <map>

#include "src/base/time_math.h"

namespace rlprof::analysis {

namespace {

bool IsDeviceWork(WorkClass c) {
  return c == WorkClass::kCompute || c == WorkClass::kCommunication || c == WorkClass::kMemcpy ||
         c == WorkClass::kMemset || c == WorkClass::kUnclassified;
}
bool IsHostWork(WorkClass c) { return c == WorkClass::kHost || c == WorkClass::kCommunication; }

// A span while lanes are built: the longest event by string id, resolved at the end.
struct Raw {
  int64_t start = 0, end = 0, busy = 0, count = 0;
  WorkClass cls = WorkClass::kCompute;
  uint32_t top = 0;
  int64_t top_dur = 0;
};

template <typename S>
std::vector<S> Coarsen(std::vector<S> in, size_t max_spans) {
  if (in.empty()) return in;
  max_spans = std::max<size_t>(1, max_spans);
  // The gap before each span after the first: its start − the furthest end so far (< 0: overlap).
  std::vector<int64_t> gaps;
  gaps.reserve(in.size());
  int64_t reach = in[0].end;
  size_t breaks = 0;
  for (size_t i = 1; i < in.size(); ++i) {
    gaps.push_back(in[i].start - reach);
    if (gaps.back() >= 0) ++breaks;
    reach = std::max(reach, in[i].end);
  }
  // Merge across every gap ≤ thr: overlaps always; past the budget, the shortest gaps too.
  int64_t thr = -1;
  if (breaks + 1 > max_spans) {
    std::vector<int64_t> g = gaps;
    const size_t k = max_spans - 1;  // the gaps kept as breaks: the k largest
    std::nth_element(g.begin(), g.begin() + static_cast<std::ptrdiff_t>(k), g.end(), std::greater<>());
    thr = g[k];
  }
  std::vector<S> out;
  out.reserve(std::min(in.size(), max_spans));
  std::array<int64_t, kWorkClassCount> by_class{};
  auto close = [&](S* s) {
    s->busy = std::min(s->busy, s->end - s->start);
    size_t best = static_cast<size_t>(s->cls);
    for (size_t c = 0; c < by_class.size(); ++c)
      if (by_class[c] > by_class[best]) best = c;
    s->cls = static_cast<WorkClass>(best);
    by_class.fill(0);
  };
  for (size_t i = 0; i < in.size(); ++i) {
    S& x = in[i];
    if (i > 0 && gaps[i - 1] <= thr) {
      S& s = out.back();
      s.end = std::max(s.end, x.end);
      s.busy = base::SatAdd(s.busy, x.busy);  // hostile traces: durations up to 2^63
      s.count += x.count;
      if (x.top_dur > s.top_dur) {
        s.top = std::move(x.top);
        s.top_dur = x.top_dur;
      }
      by_class[static_cast<size_t>(x.cls)] = base::SatAdd(by_class[static_cast<size_t>(x.cls)], x.busy);
      continue;
    }
    if (!out.empty()) close(&out.back());
    by_class[static_cast<size_t>(x.cls)] += x.busy;
    out.push_back(std::move(x));
  }
  close(&out.back());
  return out;
}

std::string LaneName(const Track& tr) {
  if (tr.type == TrackType::kDeviceStream) {
    std::string n = "device " + std::to_string(tr.device) + " stream " + std::to_string(tr.stream);
    if (!tr.name.empty() && tr.name.find("tream") == std::string::npos) n += " (" + tr.name + ")";
    return n;
  }
  const std::string tid = std::to_string(tr.tid);
  // Kineto names its threads "thread 4242 (python)" already.
  if (tr.name.rfind("thread " + tid, 0) == 0) return tr.name;
  std::string n = "thread " + tid;
  if (!tr.name.empty()) n += " (" + tr.name + ")";
  return n;
}

}  // namespace

std::vector<ActivitySpan> CoarsenSpans(std::vector<ActivitySpan> spans, size_t max_spans) {
  return Coarsen(std::move(spans), max_spans);
}

ActivityLanesResult ActivityLanes(const Trace& t, const Classification& c, const ActivityOptions& opts) {
  ActivityLanesResult r;
  if (opts.max_spans == 0 || t.size() == 0 || c.of.size() != t.size()) return r;
  // A host slice is covered when an enclosing slice is host work (its time is counted there).
  std::vector<uint8_t> covered(t.size(), 0);
  std::map<uint32_t, std::vector<Raw>> by_track;  // slices come sorted by (track, ts, -dur)
  for (size_t i = 0; i < t.size(); ++i) {
    const int32_t p = i < t.parent.size() ? t.parent[i] : -1;  // -1 before Finalize
    if (p >= 0 && static_cast<size_t>(p) < i) covered[i] = covered[p] || IsHostWork(c.of[p]);
    if (t.kind[i] != SliceKind::kRange || t.dur[i] <= 0) continue;
    const TrackType tt = t.tracks[t.track[i]].type;
    const WorkClass cls = c.of[i];
    const bool keep = tt == TrackType::kDeviceStream ? IsDeviceWork(cls)
                      : tt == TrackType::kThread     ? IsHostWork(cls) && !covered[i]
                                                     : false;
    if (!keep) continue;
    by_track[t.track[i]].push_back(Raw{t.ts[i], t.ts[i] + t.dur[i], t.dur[i], 1, cls, t.name[i], t.dur[i]});
  }
  struct Lane {
    uint32_t track;
    int64_t busy, events;
    std::vector<Raw> spans;
  };
  std::vector<Lane> device, host;
  for (auto& [track, raw] : by_track) {
    std::sort(raw.begin(), raw.end(), [](const Raw& a, const Raw& b) { return a.start < b.start; });
    const int64_t events = static_cast<int64_t>(raw.size());
    std::vector<Raw> spans = Coarsen(std::move(raw), opts.max_spans);
    int64_t busy = 0;
    for (const auto& s : spans) busy = base::SatAdd(busy, s.busy);
    (t.tracks[track].type == TrackType::kDeviceStream ? device : host).push_back({track, busy, events, std::move(spans)});
  }
  auto keep_busiest = [&](std::vector<Lane>* lanes, size_t max, int64_t* left_out) {
    std::stable_sort(lanes->begin(), lanes->end(), [](const Lane& a, const Lane& b) { return a.busy > b.busy; });
    if (lanes->size() > max) {
      *left_out = static_cast<int64_t>(lanes->size() - max);
      lanes->resize(max);
    }
    // Shown in the trace's own order (device, stream / pid, tid), not by busy time.
    std::sort(lanes->begin(), lanes->end(), [&](const Lane& a, const Lane& b) {
      const Track &x = t.tracks[a.track], &y = t.tracks[b.track];
      return std::tie(x.device, x.stream, x.pid, x.tid) < std::tie(y.device, y.stream, y.pid, y.tid);
    });
  };
  keep_busiest(&device, opts.max_device_lanes, &r.device_lanes_left_out);
  keep_busiest(&host, opts.max_host_lanes, &r.host_lanes_left_out);
  for (auto* lanes : {&device, &host}) {
    for (auto& l : *lanes) {
      ActivityLane out;
      out.device = t.tracks[l.track].type == TrackType::kDeviceStream;
      out.name = LaneName(t.tracks[l.track]);
      out.busy = l.busy;
      out.events = l.events;
      out.spans.reserve(l.spans.size());
      for (const Raw& s : l.spans)
        out.spans.push_back({s.start, s.end, s.busy, s.count, s.cls, t.str(s.top), s.top_dur});
      r.lanes.push_back(std::move(out));
    }
  }
  return r;
}

}  // namespace rlprof::analysis
