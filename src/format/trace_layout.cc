#include "src/format/trace_layout.h"

#include <algorithm>
#include <limits>
#include <map>
#include <tuple>
#include <utility>

#include "src/base/time_math.h"

namespace rlprof::format {
namespace {

constexpr int64_t kSyntheticPidBase = 1'000'000'000;  // devices and pid collisions
constexpr int64_t kDeviceSortBase = 1'000'000;

constexpr int64_t kRoleSortStride = 100'000'000'000;  // role group × stride + rank

// The role a capture's process is grouped under: its role, else its roles joined.
std::string RoleKey(const Capture& c) {
  if (!c.manifest.role.empty()) return c.manifest.role;
  std::string k;
  for (const auto& r : c.manifest.roles) k += (k.empty() ? "" : ",") + r;
  return k;
}

// verl's controller first (the step as it sees it), the RL roles in pipeline order, then any
// other role alphabetically; a capture without a role last.
// With one role key in the whole set every group is 0 (sort indices stay the ranks).
std::map<std::string, int64_t> RoleGroups(std::span<const Capture> captures) {
  static constexpr const char* kOrder[] = {"controller", "rollout", "ref", "actor", "critic", "reward"};
  std::map<std::string, int64_t> groups;
  for (const Capture& c : captures) groups.emplace(RoleKey(c), 0);
  if (groups.size() <= 1) return groups;
  std::vector<std::pair<std::tuple<int, int, std::string>, std::string>> order;
  for (const auto& [k, _] : groups) {
    int pos = static_cast<int>(std::size(kOrder));
    for (size_t i = 0; i < std::size(kOrder); ++i)
      if (k.rfind(kOrder[i], 0) == 0) pos = static_cast<int>(i);
    order.push_back({{k.empty() ? 1 : 0, pos, k}, k});
  }
  std::sort(order.begin(), order.end());
  for (size_t i = 0; i < order.size(); ++i) groups[order[i].second] = static_cast<int64_t>(i);
  return groups;
}

class Builder {
 public:
  Builder(TraceLayout* out, std::map<std::string, int64_t> role_groups)
      : out_(out), role_groups_(std::move(role_groups)) {}

  size_t HostProcess(const Capture& c) {
    auto key = std::make_pair(c.manifest.host, c.manifest.pid);
    auto it = hosts_.find(key);
    if (it != hosts_.end()) return it->second;
    ProcessLayout p;
    p.pid = c.manifest.pid > 0 && !used_pids_.count(c.manifest.pid) ? c.manifest.pid : Synthetic();
    used_pids_[p.pid] = true;
    p.name = c.Label();
    p.label = "CPU";
    p.rank = c.manifest.rank;
    p.sort_index = c.manifest.rank >= 0 ? c.manifest.rank : kDeviceSortBase - 1;
    p.role_group = role_groups_[RoleKey(c)];
    if (p.role_group > 0) p.sort_index = base::SatAdd(p.sort_index, base::SatMul(p.role_group, kRoleSortStride));
    out_->processes.push_back(std::move(p));
    return hosts_[key] = out_->processes.size() - 1;
  }

  size_t DeviceProcess(size_t host, int64_t device) {
    auto key = std::make_pair(host, device);
    auto it = devices_.find(key);
    if (it != devices_.end()) return it->second;
    const ProcessLayout& h = out_->processes[host];
    ProcessLayout p;
    p.pid = Synthetic();
    p.device = true;
    p.rank = h.rank;
    p.label = "GPU " + std::to_string(device);
    p.name = (h.rank >= 0 ? "rank " + std::to_string(h.rank) + " " : h.name + " ") + p.label;
    // Saturating: a rank of INT64_MAX (a hostile manifest) must not overflow the sort key.
    p.sort_index = base::SatAdd(base::SatAdd(kDeviceSortBase, base::SatMul(std::max<int64_t>(h.rank, 0), 64)), device);
    p.role_group = h.role_group;
    if (p.role_group > 0) p.sort_index = base::SatAdd(p.sort_index, base::SatMul(p.role_group, kRoleSortStride));
    out_->processes.push_back(std::move(p));
    return devices_[key] = out_->processes.size() - 1;
  }

 private:
  int64_t Synthetic() {
    while (used_pids_.count(next_synthetic_)) ++next_synthetic_;
    used_pids_[next_synthetic_] = true;
    return next_synthetic_++;
  }

  TraceLayout* out_;
  std::map<std::string, int64_t> role_groups_;
  std::map<std::pair<std::string, int64_t>, size_t> hosts_;
  std::map<std::pair<size_t, int64_t>, size_t> devices_;
  std::map<int64_t, bool> used_pids_;
  int64_t next_synthetic_ = kSyntheticPidBase;
};

TrackLayout LayoutTrack(Builder* b, size_t host, const TrackEntry& t) {
  TrackLayout l;
  l.kind = t.kind;
  l.sort_index = t.id;
  l.name = t.name;
  l.process = host;
  switch (t.kind) {
    case TrackKind::kDeviceStream: {
      int64_t device = static_cast<int64_t>(t.os_id >> 32);
      l.tid = static_cast<int64_t>(t.os_id & 0xFFFFFFFFu);
      l.process = b->DeviceProcess(host, device);
      if (l.name.empty()) l.name = "stream " + std::to_string(l.tid);
      break;
    }
    case TrackKind::kCounter:
      l.tid = 0;
      if (l.name.empty()) l.name = "counter " + std::to_string(t.id);
      break;
    case TrackKind::kAsync:
      l.tid = static_cast<int64_t>(t.os_id);
      if (l.name.empty()) l.name = "async " + std::to_string(t.id);
      break;
    case TrackKind::kThread:
    default:
      l.tid = static_cast<int64_t>(t.os_id);
      if (l.name.empty()) l.name = "thread " + std::to_string(t.os_id);
      break;
  }
  return l;
}

}  // namespace

TraceLayout BuildTraceLayout(std::span<const Capture> captures) {
  TraceLayout out;
  Builder b(&out, RoleGroups(captures));
  int64_t base = std::numeric_limits<int64_t>::max();
  for (const Capture& c : captures) {
    CaptureLayout cl;
    cl.host_process = b.HostProcess(c);
    cl.offset_ns = c.manifest.offset_to_rank0_ns;
    for (const TrackEntry& t : c.raw.tracks) cl.tracks[t.id] = LayoutTrack(&b, cl.host_process, t);
    for (const Event& e : c.raw.events) {
      if (!cl.tracks.count(e.track)) {
        TrackEntry synthetic{e.track, TrackKind::kThread, e.track, 0, "track " + std::to_string(e.track)};
        cl.tracks[e.track] = LayoutTrack(&b, cl.host_process, synthetic);
        cl.tracks[e.track].defined = false;
      }
    }
    for (const Event& e : c.raw.events) base = std::min(base, base::SatAdd(e.ts_ns, cl.offset_ns));
    out.captures.push_back(std::move(cl));
  }
  out.base_ns = base == std::numeric_limits<int64_t>::max() ? 0 : base;
  for (size_t i = 0; i < captures.size(); ++i) {
    const Manifest& m = captures[i].manifest;
    if (m.realtime_anchor_ns != 0) {
      out.base_realtime_ns = base::SatAdd(
          base::SatSub(base::SatSub(out.base_ns, out.captures[i].offset_ns), m.monotonic_anchor_ns),
          m.realtime_anchor_ns);
      break;
    }
  }
  return out;
}

LaunchFlows::LaunchFlows(const Capture& c) {
  std::unordered_map<uint32_t, uint8_t> seen;  // bit 1: runtime, bit 2: kernel
  for (const Event& e : c.raw.events) {
    if (e.kind != EventKind::kComplete || e.arg0 == 0) continue;
    if (e.category == Category::kRuntime) seen[e.arg0] |= 1;
    if (e.category == Category::kKernel) seen[e.arg0] |= 2;
  }
  for (auto [corr, bits] : seen) {
    if (bits == 3) linked_[corr] = true;
  }
}

FlowEnd LaunchFlows::Role(const Event& e) const {
  if (e.kind != EventKind::kComplete || e.arg0 == 0 || !linked_.count(e.arg0)) return FlowEnd::kNone;
  if (e.category == Category::kRuntime) return FlowEnd::kSource;
  if (e.category == Category::kKernel) return FlowEnd::kSink;
  return FlowEnd::kNone;
}

}  // namespace rlprof::format
