#include "src/format/perfetto_trace.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <queue>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "src/format/event_schema.h"
#include "src/format/json_escape.h"
#include "src/format/output_file.h"
#include "src/base/time_math.h"
#include "src/format/perfetto_packets.h"
#include "src/format/trace_layout.h"

namespace rlprof::format {
namespace {

constexpr size_t kFlushBytes = 1 << 20;
constexpr const char* kArgNames[] = {"step",  "role",        "index",     "seq",  "shapes", "bytes",
                                     "group", "correlation", "direction", "arg0", "arg1",
                                     "launch", "external_id", "depth", "class", "oom", "operator",
                                     "id",     "detail"};  // every name of ArgSpecFor (event_schema.cc)

uint64_t ArgIid(const char* name) {
  for (size_t i = 0; i < std::size(kArgNames); ++i) {
    if (std::strcmp(kArgNames[i], name) == 0) return i + 1;
  }
  return 0;
}

uint64_t Fnv(std::string_view s, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// Track uuids: a hash of what identifies the track, so that captures of one process that
// share a thread share its track. Never 0 (the implicit global track).
uint64_t Uuid(uint64_t kind, int64_t pid, uint64_t a = 0, uint64_t b = 0) {
  uint64_t parts[4] = {kind, static_cast<uint64_t>(pid), a, b};
  uint64_t h = Fnv(std::string_view(reinterpret_cast<const char*>(parts), sizeof parts));
  return h == 0 ? 1 : h;
}

struct PendingEnd {
  int64_t ts;
  uint64_t order;  // begin order: at equal end times the later-begun (inner) slice ends first
  uint64_t track_uuid;
  bool operator<(const PendingEnd& o) const {  // priority_queue pops the "largest"
    return ts != o.ts ? ts > o.ts : order < o.order;
  }
};

class Writer {
 public:
  Writer(std::span<const Capture> captures, ByteSink* sink, ExportStats* stats)
      : captures_(captures), layout_(BuildTraceLayout(captures)), sink_(sink), stats_(stats) {}

  void Run() {
    for (size_t i = 0; i < captures_.size(); ++i) CaptureEvents(i);
    sink_->Write(out_);
    out_.clear();
  }

 private:
  void MaybeFlush() {
    if (out_.size() >= kFlushBytes) {
      sink_->Write(out_);
      out_.clear();
    }
  }

  uint64_t ProcessUuid(size_t process) {
    const ProcessLayout& p = layout_.processes[process];
    uint64_t uuid = Uuid(0, p.pid);
    if (emitted_.insert(uuid).second) {
      seq_->ProcessTrack(uuid, static_cast<int32_t>(p.pid), SanitizeUtf8(p.name));
    }
    return uuid;
  }

  uint64_t ThreadUuid(const TrackLayout& t) {
    int64_t pid = layout_.processes[t.process].pid;
    uint64_t uuid = Uuid(1, pid, static_cast<uint64_t>(t.tid));
    if (!emitted_.count(uuid)) {
      uint64_t parent = ProcessUuid(t.process);
      emitted_.insert(uuid);
      seq_->ThreadTrack(uuid, parent, static_cast<int32_t>(pid), static_cast<int32_t>(t.tid),
                        SanitizeUtf8(t.name));
    }
    return uuid;
  }

  uint64_t NamedUuid(uint64_t kind, size_t process, const std::string& name, uint64_t lane) {
    int64_t pid = layout_.processes[process].pid;
    uint64_t uuid = Uuid(kind, pid, Fnv(name), lane);
    if (!emitted_.count(uuid)) {
      uint64_t parent = ProcessUuid(process);
      emitted_.insert(uuid);
      seq_->NamedTrack(uuid, parent, SanitizeUtf8(name), kind == 2);
    }
    return uuid;
  }

  // Pairs async begins with their ends and assigns each pair the first free lane of its
  // track, so ranges on one lane never overlap. Result: event index → lane.
  // Begins without an end stay open (shown as unfinished slices) and are counted.
  std::unordered_map<size_t, uint64_t> AsyncLanes(const Capture& c) {
    std::unordered_map<size_t, uint64_t> lane_of;
    std::unordered_map<int64_t, size_t> open;  // range id → begin index
    std::vector<std::pair<size_t, size_t>> pairs;
    const auto& ev = c.raw.events;
    for (size_t i = 0; i < ev.size(); ++i) {
      if (ev[i].kind == EventKind::kBegin) {
        open[ev[i].payload] = i;
      } else if (ev[i].kind == EventKind::kEnd) {
        auto it = open.find(ev[i].payload);
        if (it == open.end()) continue;  // counted when emitted
        pairs.push_back({it->second, i});
        open.erase(it);
      }
    }
    for (auto& [id, begin] : open) pairs.push_back({begin, SIZE_MAX});
    stats_->unmatched_async += open.size();
    std::sort(pairs.begin(), pairs.end());
    std::unordered_map<uint16_t, std::vector<int64_t>> lane_ends;  // per track
    for (auto [b, e] : pairs) {
      auto& lanes = lane_ends[ev[b].track];
      int64_t end = e == SIZE_MAX ? INT64_MAX : ev[e].ts_ns;
      size_t lane = 0;
      while (lane < lanes.size() && lanes[lane] > ev[b].ts_ns) ++lane;
      if (lane == lanes.size()) lanes.push_back(end);
      else lanes[lane] = end;
      lane_of[b] = lane;
      if (e != SIZE_MAX) lane_of[e] = lane;
    }
    return lane_of;
  }

  void FlushEnds(int64_t upto) {
    while (!ends_.empty() && ends_.top().ts <= upto) {
      PendingEnd p = ends_.top();
      ends_.pop();
      TrackEventPacket e;
      e.ts = static_cast<uint64_t>(p.ts);
      e.type = TrackEventType::kSliceEnd;
      e.track_uuid = p.track_uuid;
      e.sequence_flags = kSeqNeedsIncrementalState;
      seq_->Event(e);
    }
    MaybeFlush();
  }

  // What writing one capture's sequence keeps between its events.
  struct CaptureState {
    CaptureState(const Capture& capture, const CaptureLayout& layout, size_t index)
        : c(capture), cl(layout), ci(index), flows(capture) {}
    const Capture& c;
    const CaptureLayout& cl;
    size_t ci;
    // Categories and argument names are interned when first used (as names are), not all up
    // front: a merged run timeline has thousands of small captures, one sequence each.
    std::vector<uint8_t> cat_done = std::vector<uint8_t>(kCategoryCount + 1, 0);
    std::vector<uint8_t> arg_done = std::vector<uint8_t>(std::size(kArgNames) + 1, 0);
    std::vector<uint8_t> interned;  // per string id: its name written
    std::unordered_map<size_t, uint64_t> lanes;  // async event index → lane
    std::unordered_map<uint32_t, uint64_t> sample_lanes;  // a sample's id (arg0) → its lane
    LaunchFlows flows;
    std::unordered_map<uint32_t, uint8_t> flow_done;          // correlation → ends written (bits)
    std::unordered_map<uint16_t, std::vector<int64_t>> open;  // per track: open slice ends
    uint64_t order = 0;
    // The current event's packet parts (they must outlive seq.Event(p)).
    std::string name_text, arg0_text, arg1_text;
    InternedString new_name, new_cat, new_args[2];
    DebugArg dargs[2];
  };

  void CaptureEvents(size_t ci) {
    CaptureState st(captures_[ci], layout_.captures[ci], ci);
    PerfettoPacketWriter seq(static_cast<uint32_t>(ci + 1), &out_);
    seq_ = &seq;
    StartSequence(st);
    for (size_t i = 0; i < st.c.raw.events.size(); ++i) {
      const Event& ev = st.c.raw.events[i];
      const int64_t ts = base::SatAdd(ev.ts_ns, st.cl.offset_ns);
      if (ts < 0 || (ev.kind == EventKind::kComplete && ev.payload < 0)) {
        ++stats_->skipped_events;
        continue;
      }
      FlushEnds(ts);
      TrackEventPacket p;
      p.ts = static_cast<uint64_t>(ts);
      p.sequence_flags = kSeqNeedsIncrementalState;
      if (static_cast<uint8_t>(ev.category) < kCategoryCount) p.category_iid = static_cast<uint8_t>(ev.category) + 1;
      if (!FillEvent(st, i, ev, &p)) continue;  // counted
      InternNewNames(st, &p);
      seq.Event(p);
      ++stats_->events;
    }
    FlushEnds(INT64_MAX);
    seq_ = nullptr;
  }

  void StartSequence(CaptureState& st) {
    seq_->SequenceStart({}, {});
    const Manifest& m = st.c.manifest;
    // Saturating: the writer also takes captures that did not go through LoadCapture.
    if (m.realtime_anchor_ns != 0 && base::SatAdd(m.monotonic_anchor_ns, st.cl.offset_ns) >= 0) {
      seq_->ClockSnapshot(static_cast<uint64_t>(base::SatAdd(m.monotonic_anchor_ns, st.cl.offset_ns)),
                          static_cast<uint64_t>(m.realtime_anchor_ns));
    }
    ProcessUuid(st.cl.host_process);
    st.interned.assign(st.c.raw.strings.size() + 1, 0);
    st.lanes = AsyncLanes(st.c);
    st.sample_lanes = SampleLanes(st.c);
  }

  // Samples (category sample) overlap on their track: each gets the first lane of the
  // "samples" tracks free at its start, and its phases nest in it (same lane).
  static std::unordered_map<uint32_t, uint64_t> SampleLanes(const Capture& c) {
    std::unordered_map<uint32_t, uint64_t> lane_of;
    std::vector<int64_t> lane_ends;
    for (const Event& e : c.raw.events) {
      if (e.category != Category::kSample || e.kind != EventKind::kComplete || lane_of.count(e.arg0)) continue;
      const int64_t end = base::SatAdd(e.ts_ns, std::max<int64_t>(e.payload, 0));
      size_t lane = 0;
      while (lane < lane_ends.size() && lane_ends[lane] > e.ts_ns) ++lane;
      if (lane == lane_ends.size()) lane_ends.push_back(end);
      else lane_ends[lane] = end;
      lane_of[e.arg0] = lane;
    }
    return lane_of;
  }

  // The packet's name: interned on first use in this sequence.
  void UseName(CaptureState& st, uint32_t id, TrackEventPacket* p) {
    p->name_iid = uint64_t{id} + 1;
    if (id < st.c.raw.strings.size() && !st.interned[id]) {
      st.interned[id] = 1;
      st.name_text = SanitizeUtf8(st.c.raw.str(id));
      st.new_name = {p->name_iid, st.name_text};
      p->new_names = {&st.new_name, 1};
    } else if (id >= st.c.raw.strings.size()) {
      p->name_iid = 0;  // undefined id: written inline as ""
    }
  }

  // The event's arguments (named by its category's ArgSpec) into st.dargs; their count.
  size_t EventArgs(CaptureState& st, const Event& ev) {
    size_t n = 0;
    const ArgSpec spec = ArgSpecFor(ev.category);
    if (spec.arg0_is_string) {
      if (ev.arg0 != 0) {
        st.arg0_text = SanitizeUtf8(st.c.raw.str(ev.arg0));
        st.dargs[n++] = {ArgIid(spec.arg0), true, 0, st.arg0_text};
      }
    } else if (spec.arg0 != nullptr || ev.arg0 != 0) {
      st.dargs[n++] = {ArgIid(spec.arg0 != nullptr ? spec.arg0 : "arg0"), false, ev.arg0, {}};
    }
    if (spec.arg1_is_string && ev.arg1 != 0) {
      st.arg1_text = SanitizeUtf8(st.c.raw.str(ev.arg1));
      st.dargs[n++] = {ArgIid(spec.arg1), true, 0, st.arg1_text};
    } else if (!spec.arg1_is_string && ev.arg1 != 0) {
      st.dargs[n++] = {ArgIid(spec.arg1 != nullptr ? spec.arg1 : "arg1"), false, ev.arg1, {}};
    }
    return n;
  }

  // Fills `p` for event `i` by its kind; false when it is not written (counted in stats_).
  bool FillEvent(CaptureState& st, size_t i, const Event& ev, TrackEventPacket* p) {
    const TrackLayout& t = layout_.Track(st.ci, ev.track);
    switch (ev.kind) {
      case EventKind::kComplete:
        FillSlice(st, ev, t, p);
        return true;
      case EventKind::kInstant:
        p->type = TrackEventType::kInstant;
        p->track_uuid = ThreadUuid(t);
        UseName(st, ev.name, p);
        p->args = {st.dargs, EventArgs(st, ev)};
        return true;
      case EventKind::kCounter:
        return FillCounter(st, ev, t, p);
      case EventKind::kBegin:
      case EventKind::kEnd: {
        auto lane = st.lanes.find(i);
        if (lane == st.lanes.end()) {
          ++stats_->unmatched_async;
          return false;
        }
        p->track_uuid = NamedUuid(3, t.process, t.name, lane->second);
        if (ev.kind == EventKind::kBegin) {
          p->type = TrackEventType::kSliceBegin;
          UseName(st, ev.name, p);
          p->args = {st.dargs, EventArgs(st, ev)};
        } else {
          p->type = TrackEventType::kSliceEnd;
        }
        return true;
      }
      default:
        ++stats_->skipped_events;
        return false;
    }
  }

  // A complete event: a slice begin now, its end queued (clipped to nest in the open slice).
  void FillSlice(CaptureState& st, const Event& ev, const TrackLayout& t, TrackEventPacket* p) {
    if (ev.category == Category::kSample) {  // its sample's lane of the "samples" tracks
      auto lane = st.sample_lanes.find(ev.arg0);
      p->type = TrackEventType::kSliceBegin;
      p->track_uuid = NamedUuid(3, t.process, "samples", lane != st.sample_lanes.end() ? lane->second : 0);
      UseName(st, ev.name, p);
      p->args = {st.dargs, EventArgs(st, ev)};
      ends_.push({base::SatAdd(base::SatAdd(ev.ts_ns, std::max<int64_t>(ev.payload, 0)), st.cl.offset_ns), st.order++,
                  p->track_uuid});
      return;
    }
    auto& stack = st.open[ev.track];
    while (!stack.empty() && stack.back() <= ev.ts_ns) stack.pop_back();
    int64_t end = base::SatAdd(ev.ts_ns, ev.payload);
    if (!stack.empty() && end > stack.back()) {
      end = stack.back();
      ++stats_->clipped_slices;
    }
    stack.push_back(end);
    p->type = TrackEventType::kSliceBegin;
    p->track_uuid = ThreadUuid(t);
    UseName(st, ev.name, p);
    p->args = {st.dargs, EventArgs(st, ev)};
    if (FlowEnd fe = st.flows.Role(ev); fe != FlowEnd::kNone) {
      const uint8_t bit = fe == FlowEnd::kSource ? 1 : 2;
      if (!(st.flow_done[ev.arg0] & bit)) {
        st.flow_done[ev.arg0] |= bit;
        p->flow_id = Uuid(4, static_cast<int64_t>(st.ci), ev.arg0);
        p->flow_terminating = fe == FlowEnd::kSink;
      }
    }
    ends_.push({base::SatAdd(end, st.cl.offset_ns), st.order++, p->track_uuid});
  }

  bool FillCounter(CaptureState& st, const Event& ev, const TrackLayout& t, TrackEventPacket* p) {
    const double v = ev.counter_value();
    if (!std::isfinite(v)) {
      ++stats_->skipped_events;
      return false;
    }
    const std::string& series = t.kind == TrackKind::kCounter || ev.name == 0 ? t.name : st.c.raw.str(ev.name);
    p->type = TrackEventType::kCounter;
    p->track_uuid = NamedUuid(2, t.process, series, 0);
    p->category_iid = 0;
    if (std::fabs(v) < 9.0e15 && v == std::trunc(v)) {
      p->counter_int = static_cast<int64_t>(v);
    } else {
      p->counter_is_double = true;
      p->counter_double = v;
    }
    return true;
  }

  // The category and argument names the packet uses for the first time in this sequence.
  void InternNewNames(CaptureState& st, TrackEventPacket* p) {
    if (p->category_iid != 0 && p->category_iid <= kCategoryCount && !st.cat_done[p->category_iid]) {
      st.cat_done[p->category_iid] = 1;
      st.new_cat = {p->category_iid, CategoryName(static_cast<Category>(p->category_iid - 1))};
      p->new_categories = {&st.new_cat, 1};
    }
    size_t n = 0;
    for (const DebugArg& d : p->args) {
      if (d.name_iid == 0 || d.name_iid > std::size(kArgNames) || st.arg_done[d.name_iid]) continue;
      st.arg_done[d.name_iid] = 1;
      st.new_args[n++] = {d.name_iid, kArgNames[d.name_iid - 1]};
    }
    p->new_arg_names = {st.new_args, n};
  }

  std::span<const Capture> captures_;
  TraceLayout layout_;
  ByteSink* sink_;
  ExportStats* stats_;
  std::string out_;
  PerfettoPacketWriter* seq_ = nullptr;
  std::unordered_set<uint64_t> emitted_;
  std::priority_queue<PendingEnd> ends_;
};

}  // namespace

ExportStats WritePerfetto(std::span<const Capture> captures, ByteSink* sink) {
  ExportStats stats;
  Writer(captures, sink, &stats).Run();
  stats.diagnostics.Add("export_clipped_slices", stats.clipped_slices);
  stats.diagnostics.Add("export_skipped_events", stats.skipped_events);
  stats.diagnostics.Add("export_unmatched_async", stats.unmatched_async);
  return stats;
}

base::StatusOr<ExportStats> WritePerfettoFile(std::span<const Capture> captures,
                                              const std::string& path) {
  RLPROF_ASSIGN_OR_RETURN(auto file, OutputFile::Open(path, OutputFile::GzipFor(path)));
  ExportStats stats = WritePerfetto(captures, file.get());
  RLPROF_RETURN_IF_ERROR(file->Close());
  stats.bytes = file->bytes_on_disk();
  return stats;
}

}  // namespace rlprof::format
