#include "src/analysis/readers/capture_reader.h"

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>
#include <vector>

#include "src/base/time_math.h"
#include "src/format/event_schema.h"

namespace rlprof::analysis {
namespace {

using format::Category;
using format::Event;
using format::EventKind;

// Builds the Trace of one capture, in the phases TraceFromCapture runs them.
class CaptureTraceBuilder {
 public:
  CaptureTraceBuilder(const format::Capture& c, const ReadOptions& opts)
      : c_(c), m_(c.manifest), opts_(opts) {}

  Trace Build() {
    Identity();
    Tracks();
    Names();
    PendingAttributes();
    Events();
    LinkDeviceWorkToLaunches();
    WindowMarkers();
    AlignToRank0();
    t_.Finalize();
    return std::move(t_);
  }

 private:
  using Key = std::pair<uint16_t, int64_t>;  // (raw track, ts)

  // Who recorded it, and what loading counted: raw_* (events.rlp), manifest_*, times.
  void Identity() {
    t_.source = c_.dir.empty() ? c_.events_path : c_.dir;
    t_.format = "rlprof";
    t_.rank = m_.rank;
    t_.world_size = m_.world_size > 0 ? m_.world_size : -1;
    t_.host = m_.host;
    t_.pid = m_.pid > 0 ? m_.pid : -1;
    t_.role = m_.role;
    t_.ops_sampling = m_.ops_sampling;
    if (t_.role.empty())
      for (const auto& r : m_.roles) t_.role += (t_.role.empty() ? "" : ",") + r;
    t_.diagnostics.Merge(c_.diagnostics);
    format::AddCaptureLossDiagnostics(c_, &t_.diagnostics);
  }

  // Tracks: raw track id → trace track.
  void Tracks() {
    for (const format::TrackEntry& e : c_.raw.tracks) {
      Track tr;
      tr.pid = e.pid;
      tr.name = e.name;
      switch (e.kind) {
        case format::TrackKind::kDeviceStream:
          tr.type = TrackType::kDeviceStream;
          tr.device = static_cast<int32_t>(e.os_id >> 32);
          tr.stream = static_cast<int64_t>(e.os_id & 0xffffffffu);
          tr.pid = tr.device;
          tr.tid = tr.stream;
          tr.process_name = "GPU " + std::to_string(tr.device);
          break;
        case format::TrackKind::kCounter:
          tr.type = TrackType::kCounter;
          tr.tid = static_cast<int64_t>(e.id);
          break;
        case format::TrackKind::kAsync:
          tr.type = TrackType::kAsync;
          tr.tid = static_cast<int64_t>(e.id);
          break;
        default:
          tr.type = TrackType::kThread;
          tr.tid = static_cast<int64_t>(e.os_id);
          break;
      }
      if (tr.type == TrackType::kThread && tr.pid == 0 && t_.pid > 0) tr.pid = t_.pid;
      if (tr.type != TrackType::kDeviceStream && !m_.host.empty())
        tr.process_name = m_.role.empty() ? m_.host : m_.role + "@" + m_.host;
      track_of_[e.id] = t_.AddTrack(std::move(tr));
    }
  }

  uint32_t TrackFor(uint16_t id) {
    auto it = track_of_.find(id);
    if (it != track_of_.end()) return it->second;
    t_.diagnostics.Add("undefined_track");
    Track tr;
    tr.type = TrackType::kThread;
    tr.pid = t_.pid;
    tr.tid = -static_cast<int64_t>(id) - 1;
    tr.name = "track " + std::to_string(id);
    uint32_t idx = t_.AddTrack(std::move(tr));
    track_of_[id] = idx;
    return idx;
  }

  // Category names interned once; raw string ids interned at first use.
  void Names() {
    cat_ids_.resize(format::kCategoryCount + 1);
    for (int i = 0; i < format::kCategoryCount; ++i)
      cat_ids_[i] = t_.Intern(format::CategoryName(static_cast<Category>(i)));
    cat_ids_[format::kCategoryCount] = t_.Intern("unknown");
    name_ids_.assign(c_.raw.strings.size(), UINT32_MAX);
    for (uint32_t i = 0; i < c_.raw.strings.size(); ++i)
      if (c_.raw.strings[i] == "external_id") external_name_ = i;
  }
  uint32_t CatOf(Category cat) const {
    int i = static_cast<int>(cat);
    return cat_ids_[i < format::kCategoryCount ? i : format::kCategoryCount];
  }
  uint32_t NameOf(uint32_t id) {
    if (id >= name_ids_.size()) return t_.Intern(c_.raw.str(id));
    if (name_ids_[id] == UINT32_MAX) name_ids_[id] = t_.Intern(c_.raw.strings[id]);
    return name_ids_[id];
  }
  // External correlation ids of operators (torch source, device capture): kCapture instants
  // named "external_id" (arg0 = id) at the operator's begin on its thread.
  bool IsExternal(const Event& e) const {
    return e.kind == EventKind::kInstant && e.category == Category::kCapture && e.name == external_name_;
  }

  // Operator stacks (kStack instants) and external ids by (raw track, ts): the operator
  // beginning there on that thread gets them (its event comes after them, at its end). First,
  // since an operator and its stack share a timestamp, in either order in the file.
  void PendingAttributes() {
    for (const Event& e : c_.raw.events)
      if (e.kind == EventKind::kInstant && e.category == Category::kStack)
        pending_stack_[Key(e.track, e.ts_ns)] = NameOf(e.name);
      else if (IsExternal(e))
        pending_external_[Key(e.track, e.ts_ns)] = e.arg0;
  }

  // A slice and the columns its category fills; step and stage ranges are markers too.
  void Add(const Event& e, int64_t ts, int64_t dur, uint32_t track, SliceKind kind) {
    size_t row = t_.AddSlice(ts, dur, NameOf(e.name), CatOf(e.category), track, kind);
    switch (e.category) {
      case Category::kOperator:
        if (e.arg1) t_.shapes[row] = NameOf(e.arg1);
        if (!pending_stack_.empty()) {
          auto it = pending_stack_.find(Key(e.track, e.ts_ns));
          if (it != pending_stack_.end()) {
            t_.detail[row] = it->second;
            pending_stack_.erase(it);
          }
        }
        if (!pending_external_.empty()) {
          auto it = pending_external_.find(Key(e.track, e.ts_ns));
          if (it != pending_external_.end()) {
            t_.external[row] = it->second;
            pending_external_.erase(it);
          }
        }
        break;
      case Category::kModule:
        if (e.arg1) t_.detail[row] = NameOf(e.arg1);
        break;
      case Category::kAllocation:
        t_.bytes[row] = e.payload;  // signed: a free is negative
        if (e.arg1) t_.detail[row] = NameOf(e.arg1);
        if (e.arg0 == 1) t_.flags[row] |= kSliceOutOfMemory;  // payload: the bytes asked for
        break;
      case Category::kCommunication:
        t_.bytes[row] = e.arg0;
        if (e.arg1) t_.group[row] = NameOf(e.arg1);
        break;
      case Category::kKernel:
        if (e.arg0) t_.correlation[row] = e.arg0;
        // arg1: the launch string of the CUPTI source; NCCL kernels lead with their collective.
        if (e.arg1) {
          std::string_view launch = c_.raw.str(e.arg1);
          if (launch.starts_with("collective=")) {
            launch.remove_prefix(11);
            t_.collective[row] = t_.Intern(launch.substr(0, launch.find(' ')));
          }
        }
        break;
      case Category::kRuntime:
        if (e.arg0) t_.correlation[row] = e.arg0;
        if (e.arg1) t_.external[row] = e.arg1;  // the external id pushed when it ran
        break;
      case Category::kSync:
        if (e.arg0) t_.correlation[row] = e.arg0;
        break;
      case Category::kMemcpy:
      case Category::kMemset:
        t_.bytes[row] = e.arg0;
        break;
      default:
        break;
    }
    if (kind != SliceKind::kRange) return;
    if (e.category == Category::kStep) {
      Marker mk{static_cast<int64_t>(e.arg0), ts, ts + (dur > 0 ? dur : 0), track, "", "step"};
      t_.steps.push_back(std::move(mk));
    } else if (e.category == Category::kStage) {
      Marker mk{m_.steps.empty() ? 0 : m_.steps.front(), ts, ts + (dur > 0 ? dur : 0), track,
                e.arg1 ? c_.raw.str(e.arg1) : m_.role, c_.raw.str(e.name)};
      t_.stages.push_back(std::move(mk));
    }
  }

  // Every event: complete ranges, instants, counters, begin/end pairs matched by range id.
  void Events() {
    t_.Reserve(c_.raw.events.size());
    std::unordered_map<int64_t, std::vector<Event>> open;  // range id → begins
    for (const Event& e : c_.raw.events) {
      if (e.category == Category::kSample) {  // records, not slices: no thread's work
        SampleEvent(e);
        continue;
      }
      switch (e.kind) {
        case EventKind::kComplete:
          Add(e, e.ts_ns, e.payload, TrackFor(e.track), SliceKind::kRange);
          break;
        case EventKind::kInstant:
          if (e.category == Category::kStack || IsExternal(e)) {  // attributes of their operator
          } else if (opts_.keep_instants || e.category == Category::kAllocation ||
                     e.category == Category::kCapture) {  // notes: "out of memory on …", snapshots
            Add(e, e.ts_ns, 0, TrackFor(e.track), SliceKind::kInstant);
          }
          break;
        case EventKind::kCounter:
          t_.counters.push_back({TrackFor(e.track), e.ts_ns, e.counter_value(), NameOf(e.name)});
          break;
        case EventKind::kBegin:
          open[e.payload].push_back(e);
          break;
        case EventKind::kEnd: {
          auto it = open.find(e.payload);
          if (it == open.end() || it->second.empty()) {
            t_.diagnostics.Add("unmatched_end");
            break;
          }
          Event b = it->second.back();
          it->second.pop_back();
          if (it->second.empty()) open.erase(it);
          Add(b, b.ts_ns, e.ts_ns - b.ts_ns, TrackFor(b.track), SliceKind::kRange);
          break;
        }
        default:
          t_.diagnostics.Add("invalid_event_kind");
          break;
      }
    }
    uint64_t unmatched = 0;
    for (const auto& [id, v] : open) unmatched += v.size();
    if (unmatched) t_.diagnostics.Add("unmatched_begin", unmatched);
    if (!pending_stack_.empty()) t_.diagnostics.Add("stack_without_operator", pending_stack_.size());
    if (!pending_external_.empty())
      t_.diagnostics.Add("external_id_without_operator", pending_external_.size());
  }

  // A sample's events (src/runtime/sample_source.h): joined by id (arg0) into one record.
  static int64_t Hi(int64_t packed) {
    const auto v = static_cast<uint32_t>(static_cast<uint64_t>(packed) >> 32);
    return v == 0xffffffffu ? -1 : static_cast<int64_t>(v);
  }
  static int64_t Lo(int64_t packed) {
    const auto v = static_cast<uint32_t>(static_cast<uint64_t>(packed));
    return v == 0xffffffffu ? -1 : static_cast<int64_t>(v);
  }
  void SampleEvent(const Event& e) {
    const std::string& name = c_.raw.str(e.name);
    if (!name.starts_with("sample") || e.arg0 == 0) {
      t_.diagnostics.Add("sample_event_unknown");
      return;
    }
    const std::string& arg1 = e.arg1 != 0 ? c_.raw.str(e.arg1) : kEmpty;
    if (name == "sample/use") {
      t_.sample_uses.push_back({c_.raw.str(e.arg0), arg1, e.ts_ns, Lo(e.payload), Hi(e.payload)});
      return;
    }
    auto [it, fresh] = sample_of_.try_emplace(e.arg0, t_.samples.size());
    if (fresh) {
      t_.samples.emplace_back();
      t_.samples.back().id = c_.raw.str(e.arg0);
    }
    SampleRecord& s = t_.samples[it->second];
    const int64_t end = e.kind == EventKind::kComplete ? base::SatAdd(e.ts_ns, std::max<int64_t>(e.payload, 0)) : e.ts_ns;
    if (e.kind == EventKind::kComplete) {
      if (name == "sample") {
        s.submit = e.ts_ns;
        s.end = end;
        s.group = arg1;
      } else if (name == "sample/queue") {
        s.queued = e.ts_ns;
        s.scheduled = end;
      } else if (name == "sample/prefill") {
        s.scheduled = e.ts_ns;
        s.first_token = end;
      } else if (name == "sample/decode") {
        s.first_token = e.ts_ns;
        s.last_token = end;
      } else if (name.starts_with("sample/")) {
        s.spans.push_back({name.substr(7), arg1, e.ts_ns, end});
      }
    } else if (e.kind == EventKind::kInstant) {
      if (name == "sample/tokens") {
        s.completion_tokens = Hi(e.payload);
        s.prompt_tokens = Lo(e.payload);
      } else if (name == "sample/cached") {
        s.cached_tokens = Hi(e.payload);
        s.preemptions = Lo(e.payload);
      } else if (name == "sample/finish") {
        s.replica = Hi(e.payload);
        s.finish_reason = arg1;
      } else if (name == "sample/version") {
        s.version_first = Hi(e.payload);
        s.version_last = Lo(e.payload);
      } else {
        t_.diagnostics.Add("sample_event_unknown");
      }
    } else {
      t_.diagnostics.Add("sample_event_unknown");
    }
  }

  // Device work carries the external id of its launch (same correlation id).
  void LinkDeviceWorkToLaunches() {
    std::unordered_map<int64_t, int64_t> launch_external;
    for (size_t i = 0; i < t_.size(); ++i)
      if (t_.external[i] >= 0 && t_.correlation[i] >= 0 &&
          t_.tracks[t_.track[i]].type != TrackType::kDeviceStream)
        launch_external.emplace(t_.correlation[i], t_.external[i]);
    if (launch_external.empty()) return;
    for (size_t i = 0; i < t_.size(); ++i)
      if (t_.correlation[i] >= 0 && t_.tracks[t_.track[i]].type == TrackType::kDeviceStream)
        if (auto it = launch_external.find(t_.correlation[i]); it != launch_external.end())
          t_.external[i] = it->second;
  }

  // A discrete capture opens inside its step (and a scheduled one inside its stage), so the
  // step / stage ranges that began earlier are not in it. The manifest says which step and
  // stage the window belongs to: stand in markers spanning the window, on the busiest thread.
  void WindowMarkers() {
    const int64_t w0 = m_.window_open_ns, w1 = m_.window_close_ns;
    if (w1 <= w0 || w0 <= 0) return;
    // The capture bounds: steps reaching outside them are flagged partial, and a capture
    // without step markers is one step spanning the whole window.
    t_.capture_start_ns = w0;
    t_.capture_end_ns = w1;
    if (t_.size() == 0) return;
    std::vector<size_t> per_track(t_.tracks.size(), 0);
    for (uint32_t tr : t_.track) ++per_track[tr];
    uint32_t main_track = static_cast<uint32_t>(
        std::max_element(per_track.begin(), per_track.end()) - per_track.begin());
    if (!t_.stages.empty()) main_track = t_.stages.front().track;
    if (t_.steps.empty() && m_.steps.size() == 1) {
      t_.steps.push_back(Marker{m_.steps.front(), w0, w1, main_track, "", "step"});
      t_.diagnostics.Add("step_from_manifest");
      t_.step_is_capture_window = true;
    }
    if (t_.stages.empty() && !m_.stage.empty()) {
      t_.stages.push_back(
          Marker{m_.steps.empty() ? 0 : m_.steps.front(), w0, w1, main_track, m_.role, m_.stage});
      t_.diagnostics.Add("stage_from_manifest");
      t_.stage_is_capture_window = true;
    }
  }

  // One timeline for all ranks: the measured offset to rank 0 (manifest clock) is added to
  // every time, as the exporters do, so cross-rank views (skew, arrival order) compare.
  void AlignToRank0() {
    const int64_t off = m_.offset_to_rank0_ns;
    if (m_.realtime_anchor_ns > 0 && m_.monotonic_anchor_ns > 0)
      t_.wall_offset_ns = m_.realtime_anchor_ns - m_.monotonic_anchor_ns - off;
    if (off == 0) return;
    for (int64_t& x : t_.ts) x += off;
    for (auto* markers : {&t_.steps, &t_.stages})
      for (Marker& mk : *markers) {
        mk.start_ns += off;
        mk.end_ns += off;
      }
    for (CounterSample& cs : t_.counters) cs.ts_ns += off;
    auto shift = [off](int64_t* x) {
      if (*x >= 0) *x = base::SatAdd(*x, off);
    };
    for (SampleRecord& s : t_.samples) {
      for (int64_t* x : {&s.submit, &s.queued, &s.scheduled, &s.first_token, &s.last_token, &s.end}) shift(x);
      for (SampleSpan& sp : s.spans) {
        shift(&sp.start);
        shift(&sp.end);
      }
    }
    for (SampleUse& u : t_.sample_uses) shift(&u.at);
    if (t_.capture_start_ns >= 0) t_.capture_start_ns = base::SatAdd(t_.capture_start_ns, off);
    if (t_.capture_end_ns >= 0) t_.capture_end_ns = base::SatAdd(t_.capture_end_ns, off);
  }

  const format::Capture& c_;
  const format::Manifest& m_;
  const ReadOptions& opts_;
  Trace t_;
  std::unordered_map<uint16_t, uint32_t> track_of_;
  std::vector<uint32_t> cat_ids_;
  std::vector<uint32_t> name_ids_;
  uint32_t external_name_ = UINT32_MAX;
  std::map<Key, uint32_t> pending_stack_;
  std::map<Key, uint32_t> pending_external_;
  std::unordered_map<uint32_t, size_t> sample_of_;  // raw string id of a sample's id → t_.samples
  inline static const std::string kEmpty;
};

}  // namespace

Trace TraceFromCapture(const format::Capture& capture, const ReadOptions& opts) {
  // Times are checked once, where captures are loaded; a capture built in memory is checked
  // here (a copy) so that the arithmetic below can never overflow.
  std::optional<format::Capture> checked;
  if (!capture.times_checked) {
    checked = capture;
    format::SanitizeCaptureTimes(&*checked);
  }
  return CaptureTraceBuilder(checked ? *checked : capture, opts).Build();
}

}  // namespace rlprof::analysis
