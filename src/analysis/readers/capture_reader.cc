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

}  // namespace

Trace TraceFromCapture(const format::Capture& capture, const ReadOptions& opts) {
  // Times are checked once, where captures are loaded; a capture built in memory is checked
  // here (a copy) so that the arithmetic below can never overflow.
  std::optional<format::Capture> checked;
  if (!capture.times_checked) {
    checked = capture;
    format::SanitizeCaptureTimes(&*checked);
  }
  const format::Capture& c = checked ? *checked : capture;
  Trace t;
  t.source = c.dir.empty() ? c.events_path : c.dir;
  t.format = "rlprof";
  const format::Manifest& m = c.manifest;
  t.rank = m.rank;
  t.world_size = m.world_size > 0 ? m.world_size : -1;
  t.host = m.host;
  t.pid = m.pid > 0 ? m.pid : -1;
  t.role = m.role;
  if (t.role.empty())
    for (const auto& r : m.roles) t.role += (t.role.empty() ? "" : ",") + r;
  // What loading counted: raw_* (events.rlp), manifest_*, times out of range.
  t.diagnostics.Merge(c.diagnostics);
  format::AddCaptureLossDiagnostics(c, &t.diagnostics);

  // Tracks: raw track id → trace track.
  std::unordered_map<uint16_t, uint32_t> track_of;
  for (const format::TrackEntry& e : c.raw.tracks) {
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
    if (tr.type == TrackType::kThread && tr.pid == 0 && t.pid > 0) tr.pid = t.pid;
    if (tr.type != TrackType::kDeviceStream && !m.host.empty())
      tr.process_name = m.role.empty() ? m.host : m.role + "@" + m.host;
    track_of[e.id] = t.AddTrack(std::move(tr));
  }
  auto track_for = [&](uint16_t id) -> uint32_t {
    auto it = track_of.find(id);
    if (it != track_of.end()) return it->second;
    t.diagnostics.Add("undefined_track");
    Track tr;
    tr.type = TrackType::kThread;
    tr.pid = t.pid;
    tr.tid = -static_cast<int64_t>(id) - 1;
    tr.name = "track " + std::to_string(id);
    uint32_t idx = t.AddTrack(std::move(tr));
    track_of[id] = idx;
    return idx;
  };

  // Operator stacks (kStack instants) by (raw track, ts): the operator beginning there on that
  // thread gets its stack (the operator's event comes after it, at the operator's end).
  std::map<std::pair<uint16_t, int64_t>, uint32_t> pending_stack;
  auto stack_key = [](uint16_t track, int64_t ts) { return std::make_pair(track, ts); };
  // External correlation ids of operators (torch source, device capture): kCapture instants
  // named "external_id" (arg0 = id) at the operator's begin on its thread.
  std::map<std::pair<uint16_t, int64_t>, uint32_t> pending_external;
  uint32_t external_name = UINT32_MAX;
  for (uint32_t i = 0; i < c.raw.strings.size(); ++i)
    if (c.raw.strings[i] == "external_id") external_name = i;
  auto is_external = [&](const Event& e) {
    return e.kind == EventKind::kInstant && e.category == Category::kCapture && e.name == external_name;
  };
  std::vector<uint32_t> cat_ids(format::kCategoryCount + 1);
  for (int i = 0; i < format::kCategoryCount; ++i)
    cat_ids[i] = t.Intern(format::CategoryName(static_cast<Category>(i)));
  cat_ids[format::kCategoryCount] = t.Intern("unknown");
  auto cat_of = [&](Category cat) {
    int i = static_cast<int>(cat);
    return cat_ids[i < format::kCategoryCount ? i : format::kCategoryCount];
  };
  std::vector<uint32_t> name_ids(c.raw.strings.size(), UINT32_MAX);
  auto name_of = [&](uint32_t id) {
    if (id >= name_ids.size()) return t.Intern(c.raw.str(id));
    if (name_ids[id] == UINT32_MAX) name_ids[id] = t.Intern(c.raw.strings[id]);
    return name_ids[id];
  };

  auto add = [&](const Event& e, int64_t ts, int64_t dur, uint32_t track, SliceKind kind) {
    size_t row = t.AddSlice(ts, dur, name_of(e.name), cat_of(e.category), track, kind);
    switch (e.category) {
      case Category::kOperator:
        if (e.arg1) t.shapes[row] = name_of(e.arg1);
        if (!pending_stack.empty()) {
          auto it = pending_stack.find(stack_key(e.track, e.ts_ns));
          if (it != pending_stack.end()) {
            t.detail[row] = it->second;
            pending_stack.erase(it);
          }
        }
        if (!pending_external.empty()) {
          auto it = pending_external.find(stack_key(e.track, e.ts_ns));
          if (it != pending_external.end()) {
            t.external[row] = it->second;
            pending_external.erase(it);
          }
        }
        break;
      case Category::kModule:
        if (e.arg1) t.detail[row] = name_of(e.arg1);
        break;
      case Category::kAllocation:
        t.bytes[row] = e.payload;  // signed: a free is negative
        if (e.arg1) t.detail[row] = name_of(e.arg1);
        break;
      case Category::kCommunication:
        t.bytes[row] = e.arg0;
        if (e.arg1) t.group[row] = name_of(e.arg1);
        break;
      case Category::kKernel:
        if (e.arg0) t.correlation[row] = e.arg0;
        // arg1: the launch string of the CUPTI source; NCCL kernels lead with their collective.
        if (e.arg1) {
          std::string_view launch = c.raw.str(e.arg1);
          if (launch.starts_with("collective=")) {
            launch.remove_prefix(11);
            t.collective[row] = t.Intern(launch.substr(0, launch.find(' ')));
          }
        }
        break;
      case Category::kRuntime:
        if (e.arg0) t.correlation[row] = e.arg0;
        if (e.arg1) t.external[row] = e.arg1;  // the external id pushed when it ran
        break;
      case Category::kSync:
        if (e.arg0) t.correlation[row] = e.arg0;
        break;
      case Category::kMemcpy:
      case Category::kMemset:
        t.bytes[row] = e.arg0;
        break;
      default:
        break;
    }
    if (kind != SliceKind::kRange) return;
    if (e.category == Category::kStep) {
      Marker mk{static_cast<int64_t>(e.arg0), ts, ts + (dur > 0 ? dur : 0), track, "", "step"};
      t.steps.push_back(std::move(mk));
    } else if (e.category == Category::kStage) {
      Marker mk{m.steps.empty() ? 0 : m.steps.front(), ts, ts + (dur > 0 ? dur : 0), track,
                e.arg1 ? c.raw.str(e.arg1) : m.role, c.raw.str(e.name)};
      t.stages.push_back(std::move(mk));
    }
  };

  // First the stacks: an operator and its stack share a timestamp, in either order in the file.
  for (const Event& e : c.raw.events)
    if (e.kind == EventKind::kInstant && e.category == Category::kStack)
      pending_stack[stack_key(e.track, e.ts_ns)] = name_of(e.name);
    else if (is_external(e))
      pending_external[stack_key(e.track, e.ts_ns)] = e.arg0;
  t.Reserve(c.raw.events.size());
  std::unordered_map<int64_t, std::vector<Event>> open;  // range id → begins
  for (const Event& e : c.raw.events) {
    switch (e.kind) {
      case EventKind::kComplete:
        add(e, e.ts_ns, e.payload, track_for(e.track), SliceKind::kRange);
        break;
      case EventKind::kInstant:
        if (e.category == Category::kStack || is_external(e)) {  // attributes of their operator
        } else if (opts.keep_instants || e.category == Category::kAllocation) {
          add(e, e.ts_ns, 0, track_for(e.track), SliceKind::kInstant);
        }
        break;
      case EventKind::kCounter:
        t.counters.push_back({track_for(e.track), e.ts_ns, e.counter_value(), name_of(e.name)});
        break;
      case EventKind::kBegin:
        open[e.payload].push_back(e);
        break;
      case EventKind::kEnd: {
        auto it = open.find(e.payload);
        if (it == open.end() || it->second.empty()) {
          t.diagnostics.Add("unmatched_end");
          break;
        }
        Event b = it->second.back();
        it->second.pop_back();
        if (it->second.empty()) open.erase(it);
        add(b, b.ts_ns, e.ts_ns - b.ts_ns, track_for(b.track), SliceKind::kRange);
        break;
      }
      default:
        t.diagnostics.Add("invalid_event_kind");
        break;
    }
  }
  uint64_t unmatched = 0;
  for (const auto& [id, v] : open) unmatched += v.size();
  if (unmatched) t.diagnostics.Add("unmatched_begin", unmatched);
  if (!pending_stack.empty()) t.diagnostics.Add("stack_without_operator", pending_stack.size());
  if (!pending_external.empty())
    t.diagnostics.Add("external_id_without_operator", pending_external.size());
  // Device work carries the external id of its launch (same correlation id).
  {
    std::unordered_map<int64_t, int64_t> launch_external;
    for (size_t i = 0; i < t.size(); ++i)
      if (t.external[i] >= 0 && t.correlation[i] >= 0 &&
          t.tracks[t.track[i]].type != TrackType::kDeviceStream)
        launch_external.emplace(t.correlation[i], t.external[i]);
    if (!launch_external.empty())
      for (size_t i = 0; i < t.size(); ++i)
        if (t.correlation[i] >= 0 && t.tracks[t.track[i]].type == TrackType::kDeviceStream)
          if (auto it = launch_external.find(t.correlation[i]); it != launch_external.end())
            t.external[i] = it->second;
  }

  // A discrete capture opens inside its step (and a scheduled one inside its stage), so the
  // step / stage ranges that began earlier are not in it. The manifest says which step and
  // stage the window belongs to: stand in markers spanning the window, on the busiest thread.
  const int64_t w0 = m.window_open_ns, w1 = m.window_close_ns;
  if (w1 > w0 && w0 > 0) {
    // The capture bounds: steps reaching outside them are flagged partial, and a capture
    // without step markers is one step spanning the whole window.
    t.capture_start_ns = w0;
    t.capture_end_ns = w1;
  }
  if (w1 > w0 && w0 > 0 && t.size() > 0) {
    std::vector<size_t> per_track(t.tracks.size(), 0);
    for (uint32_t tr : t.track) ++per_track[tr];
    uint32_t main_track = static_cast<uint32_t>(
        std::max_element(per_track.begin(), per_track.end()) - per_track.begin());
    if (!t.stages.empty()) main_track = t.stages.front().track;
    if (t.steps.empty() && m.steps.size() == 1) {
      t.steps.push_back(Marker{m.steps.front(), w0, w1, main_track, "", "step"});
      t.diagnostics.Add("step_from_manifest");
      t.step_is_capture_window = true;
    }
    if (t.stages.empty() && !m.stage.empty()) {
      t.stages.push_back(
          Marker{m.steps.empty() ? 0 : m.steps.front(), w0, w1, main_track, m.role, m.stage});
      t.diagnostics.Add("stage_from_manifest");
      t.stage_is_capture_window = true;
    }
  }
  // One timeline for all ranks: the measured offset to rank 0 (manifest clock) is added to
  // every time, as the exporters do, so cross-rank views (skew, arrival order) compare.
  if (const int64_t off = m.offset_to_rank0_ns; off != 0) {
    for (int64_t& x : t.ts) x += off;
    for (auto* markers : {&t.steps, &t.stages})
      for (Marker& mk : *markers) {
        mk.start_ns += off;
        mk.end_ns += off;
      }
    for (CounterSample& c : t.counters) c.ts_ns += off;
    if (t.capture_start_ns >= 0) t.capture_start_ns = base::SatAdd(t.capture_start_ns, off);
    if (t.capture_end_ns >= 0) t.capture_end_ns = base::SatAdd(t.capture_end_ns, off);
  }
  t.Finalize();
  return t;
}

}  // namespace rlprof::analysis
