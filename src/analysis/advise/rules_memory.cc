// The advisor's memory rule (rules.h; docs/advise.md): memory close to capacity, and the
// out-of-memory errors of the run with the allocator snapshots rlprof wrote at them.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "src/analysis/advise/rules.h"

namespace rlprof::analysis::advise {
namespace {

// Share of capacity from which memory is "close to capacity", and from which it is medium.
constexpr double kClose = 0.90, kVeryClose = 0.95;

std::string Bytes(double b) {
  char buf[64];
  if (b >= 1024.0 * 1024 * 1024) {
    std::snprintf(buf, sizeof buf, "%.1f GiB", b / (1024.0 * 1024 * 1024));
  } else {
    std::snprintf(buf, sizeof buf, "%.0f MiB", b / (1024.0 * 1024));
  }
  return buf;
}

// The allocator's calls into the driver: what a caching allocator near capacity pays to free
// its cache and retry (cudaFree synchronises the device).
bool IsAllocatorCall(const std::string& name) {
  static const char* const kNames[] = {"cudaMalloc", "cudaFree", "cudaMallocAsync", "cudaFreeAsync",
                                       "cuMemAlloc_v2", "cuMemFree_v2", "cuMemCreate", "cuMemRelease",
                                       "cuMemMap", "cuMemUnmap", "aclrtMalloc", "aclrtFree"};
  for (const char* n : kNames)
    if (name == n) return true;
  return false;
}

// One device of one process: the most it held and what it has.
struct DeviceUse {
  const InputResult* r = nullptr;
  std::string device;   // "cuda:0", "host"
  std::string series;   // the series the use is read from ("reserved_bytes cuda:0", "rss_bytes")
  double used = 0, capacity = 0;
  const MemoryPeakRow* at = nullptr;  // the stage holding the peak
};

std::vector<DeviceUse> Uses(const InputResult& r) {
  // Per device: the peak of each series (reserved_bytes: what the caching allocator holds, else
  // allocated_bytes; the host: rss_bytes; CPU allocated_bytes counts only the window's own
  // allocations and is not used) and its capacity.
  std::map<std::string, std::map<int, DeviceUse>> by;  // device → preference → use
  std::map<std::string, double> cap;
  for (const MemoryPeakRow& row : r.analysis.memory_peaks) {
    const std::string& s = row.series;
    std::string dev;
    int pref = 0;
    if (s.starts_with("capacity_bytes ")) {
      double& v = cap[s.substr(15)];
      v = std::max(v, row.peak);
      continue;
    }
    if (s.starts_with("reserved_bytes ")) {
      dev = s.substr(15), pref = 0;
    } else if (s.starts_with("allocated_bytes ") && s != "allocated_bytes cpu") {
      dev = s.substr(16), pref = 1;
    } else if (s == "rss_bytes") {
      dev = "host", pref = 0;
    } else if (s == "cuda_reserved_bytes" || s == "cuda_allocated_bytes") {
      // rlprof.Profiler's samples of the current device at each boundary (capacity_bytes cuda)
      dev = "cuda", pref = s == "cuda_reserved_bytes" ? 0 : 1;
    } else {
      continue;
    }
    DeviceUse& u = by[dev][pref];
    const bool in_stage = row.stage != "(none)";  // a stage over the time between stages, at a tie
    if (u.at == nullptr || row.peak > u.used || (row.peak == u.used && in_stage && u.at->stage == "(none)"))
      u = DeviceUse{&r, dev, s, row.peak, 0, &row};
  }
  std::vector<DeviceUse> out;
  for (auto& [dev, prefs] : by) {
    const auto c = cap.find(dev);
    if (c == cap.end() || c->second <= 0) continue;
    DeviceUse u = prefs.begin()->second;  // the preferred series present
    u.capacity = c->second;
    out.push_back(u);
  }
  return out;
}

// "actor/actor_update"; "between stages" for the step's time outside them.
std::string StageName(const MemoryPeakRow& row) {
  if (row.stage == "(none)") return "between stages";
  return row.role.empty() ? row.stage : row.role + "/" + row.stage;
}

double StepsOf(const InputResult& r) { return static_cast<double>(std::max<size_t>(1, r.analysis.steps.size())); }

// Where a stage row lies in its process's trace (its stage's window), for the report's timeline.
void Place(const InputResult& r, const MemoryPeakRow& row, Evidence* e) {
  for (const StageResult& s : r.analysis.stages)
    if (s.step == row.step && s.role == row.role && s.name == row.stage) {
      e->start_ns = s.start, e->end_ns = s.end;
      return;
    }
}

// One finding for every out-of-memory error of the run; false when there was none.
bool OutOfMemoryFinding(const Context& c, std::vector<Finding>* out) {
  std::vector<std::pair<const InputResult*, const OutOfMemoryRow*>> all;
  for (const InputResult& r : c.inputs)
    if (r.status.ok())
      for (const OutOfMemoryRow& o : r.analysis.out_of_memory) all.emplace_back(&r, &o);
  if (all.empty()) return false;
  Finding f = MakeFinding("device.memory", 0, c.mean_step_ns);
  f.severity = Severity::kHigh;  // the job failed, or survived it by luck (a caught error)
  f.failure = true;
  f.stated = true;
  const OutOfMemoryRow& first = *all.front().second;
  const int64_t rank = all.front().first->analysis.rank;
  f.title = std::to_string(all.size()) + " out-of-memory error" + (all.size() > 1 ? "s" : "") + ": the first on " +
            first.device + (rank >= 0 ? " of rank " + std::to_string(rank) : "") +
            (first.step >= 0 ? " in step " + std::to_string(first.step) : "") +
            (first.stage.empty() ? "" : " (" + first.role + "/" + first.stage + ")") +
            (first.bytes > 0 ? ", " + Bytes(static_cast<double>(first.bytes)) + " asked" : "");
  f.how = "no saving estimated: an out-of-memory error stops the step; the allocator's report (contents: memory)";
  bool snapshot = false;
  for (const auto& [r, o] : all) {
    if (f.evidence.size() >= 4) break;
    std::string what = o->device + ": " + (o->bytes > 0 ? Bytes(static_cast<double>(o->bytes)) + " asked" : "an allocation");
    if (!o->op.empty()) what += " in " + o->op;
    if (!o->snapshot.empty()) {
      what += "; the allocator's snapshot at the error: " + o->snapshot + " (open it in https://pytorch.org/memory_viz)";
      snapshot = true;
    } else {
      what += "; the allocations before it: `rlprof summary RUN --view memory` and the report's memory track";
    }
    f.evidence.push_back({what, o->step, r->analysis.rank, o->stage, o->ts, o->ts});
  }
  if (!snapshot)
    f.how += "; no allocator snapshot was written (rlprof writes one on CUDA when contents include memory)";
  out->push_back(std::move(f));
  return true;
}

}  // namespace

void Memory(const Context& c, std::vector<Finding>* out) {
  if (OutOfMemoryFinding(c, out)) return;  // the error says it all
  const DeviceUse* worst = nullptr;
  std::vector<DeviceUse> uses;
  for (const InputResult& r : c.inputs)
    if (r.status.ok())
      for (DeviceUse& u : Uses(r)) uses.push_back(u);
  for (const DeviceUse& u : uses)
    if (worst == nullptr || u.used / u.capacity > worst->used / worst->capacity) worst = &u;
  if (worst == nullptr) return;
  const double share = worst->used / worst->capacity;
  if (share < kClose) return;
  // What being near capacity costs: the allocator's calls into the driver in the step (cudaFree
  // synchronises; near capacity the caching allocator frees its cache and retries).
  double calls_ns = 0;
  int64_t calls = 0;
  for (const OpStat& op : worst->r->analysis.host_ops)
    if (IsAllocatorCall(op.name)) calls_ns += static_cast<double>(op.total), calls += op.count;
  const double per_step = calls_ns / StepsOf(*worst->r);
  Finding f = MakeFinding("device.memory", per_step, c.mean_step_ns);
  f.severity = std::max(f.severity, share >= kVeryClose ? Severity::kMedium : Severity::kLow);
  f.stated = true;  // a risk as much as a time
  const int64_t rank = worst->r->analysis.rank;
  const std::string pct = std::to_string(static_cast<int>(std::lround(100 * share)));
  f.title = worst->device + (rank >= 0 ? " of rank " + std::to_string(rank) : "") + " holds " + Bytes(worst->used) +
            " of " + Bytes(worst->capacity) + " (" + pct + " %) at its peak, in " + StageName(*worst->at) +
            " of step " + std::to_string(worst->at->step);
  if (calls > 0) {
    f.title += "; the allocator's calls into the driver take " + Duration(per_step) + " a step";
    f.how = "Σ of the allocator's driver calls (" + std::to_string(calls) + " cudaMalloc / cudaFree …, " +
            Duration(calls_ns) + ") / " + std::to_string(static_cast<int64_t>(StepsOf(*worst->r))) +
            " steps: what a caching allocator with room to spare would not pay; peak " + worst->series +
            " / capacity_bytes " + worst->device;
  } else {
    f.how = "no saving estimated (no allocator calls into the driver in the capture): the risk is an out-of-memory "
            "error; peak " + worst->series + " / capacity_bytes " + worst->device + " = " + pct + " %";
  }
  Evidence e{worst->series + " peaks at " + Bytes(worst->used) + " (" + pct + " % of " + Bytes(worst->capacity) + ")",
             worst->at->step, rank, StageName(*worst->at)};
  Place(*worst->r, *worst->at, &e);
  f.evidence.push_back(std::move(e));
  out->push_back(std::move(f));
}

}  // namespace rlprof::analysis::advise
