// The advisor's device-level rules and its regressions against a baseline (rules.h;
// docs/advise.md).
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "src/analysis/advise/rules.h"

namespace rlprof::analysis::advise {
namespace {

// Inputs with device work, and their steps (at least 1).
bool HasDevice(const InputResult& r) { return r.status.ok() && !r.analysis.cpu_only; }
double StepsOf(const InputResult& r) { return static_cast<double>(std::max<size_t>(1, r.analysis.steps.size())); }

std::string RankName(const InputResult& r) {
  return r.analysis.rank >= 0 ? "rank " + std::to_string(r.analysis.rank) : r.name;
}

// The input with the largest per-step value of `per_step(r)`; nullptr when every value is ≤ 0.
template <typename Fn>
const InputResult* Largest(const Context& c, Fn per_step, double* value) {
  const InputResult* best = nullptr;
  *value = 0;
  for (const InputResult& r : c.inputs) {
    if (!HasDevice(r)) continue;
    const double v = per_step(r);
    if (v > *value) *value = v, best = &r;
  }
  return best;
}

bool IsHostSync(const std::string& name) {
  static const char* const kNames[] = {"aten::item", "aten::_local_scalar_dense", "cudaStreamSynchronize",
                                       "cudaDeviceSynchronize", "cudaEventSynchronize", "aclrtSynchronizeStream",
                                       "aclrtSynchronizeDevice"};
  for (const char* n : kNames)
    if (name == n) return true;
  return false;
}

// The mean over steps of the longest rank's value of each stage name (rank 0's clock, ns).
std::map<std::string, double> StageMeans(const RunView& v) {
  std::map<std::string, std::map<int64_t, int64_t>> per;
  for (const RunViewRow& r : v.rows) {
    if (r.kind != RunViewKind::kStage) continue;
    int64_t slowest = 0;
    for (const auto& x : r.per_lane)
      if (x) slowest = std::max(slowest, *x);
    per[r.role + "/" + r.stage][r.step] += slowest;
  }
  std::map<std::string, double> out;
  for (const auto& [name, steps] : per) {
    double s = 0;
    for (const auto& [step, ns] : steps) s += static_cast<double>(ns);
    out[name] = s / static_cast<double>(steps.size());
  }
  return out;
}

}  // namespace

void CommExposed(const Context& c, std::vector<Finding>* out) {
  double per_step = 0;
  const InputResult* r = Largest(c, [](const InputResult& in) {
    double s = 0;
    for (const GroupComm& g : in.analysis.comm_by_group) s += static_cast<double>(g.comm_not_overlapped);
    return s / StepsOf(in);
  }, &per_step);
  if (r == nullptr) return;
  Finding f = MakeFinding("device.comm_exposed", per_step, c.mean_step_ns);
  f.title = Duration(per_step) + " a step of communication not overlapped with computation (" + RankName(*r) + ")";
  f.how = "Σ comm_not_overlapped over its process groups and steps / " +
          std::to_string(static_cast<int64_t>(StepsOf(*r))) + " steps, the rank with the most";
  std::map<std::string, int64_t> by_group;
  for (const GroupComm& g : r->analysis.comm_by_group) by_group[g.group] += g.comm_not_overlapped;
  for (const auto& [group, ns] : by_group)
    if (ns > 0 && f.evidence.size() < 4)
      f.evidence.push_back({"group " + group + ": " + Duration(static_cast<double>(ns)) + " exposed", -1,
                            r->analysis.rank, group});
  out->push_back(std::move(f));
}

void HostSync(const Context& c, std::vector<Finding>* out) {
  double per_step = 0;
  const InputResult* r = Largest(c, [](const InputResult& in) {
    double s = 0;
    for (const OpStat& op : in.analysis.host_ops)
      if (IsHostSync(op.name)) s += static_cast<double>(op.total);
    return s / StepsOf(in);
  }, &per_step);
  if (r == nullptr) return;
  Finding f = MakeFinding("device.host_sync", per_step, c.mean_step_ns);
  int64_t calls = 0;
  for (const OpStat& op : r->analysis.host_ops)
    if (IsHostSync(op.name)) {
      calls += op.count;
      f.evidence.push_back({op.name + ": " + std::to_string(op.count) + " calls, " +
                                Duration(static_cast<double>(op.total)),
                            -1, r->analysis.rank, op.name});
    }
  const int64_t steps = static_cast<int64_t>(StepsOf(*r));
  f.title = "the host waits for the device " +
            (calls % steps == 0 ? std::to_string(calls / steps) + " times a step, "
                                : std::to_string(calls) + " times in " + std::to_string(steps) + " steps, ") +
            Duration(per_step) + " a step (" + RankName(*r) + ")";
  f.how = "Σ of the synchronising operators' time / " + std::to_string(static_cast<int64_t>(StepsOf(*r))) +
          " steps (op_statistic), the rank with the most";
  out->push_back(std::move(f));
}

void LaunchBound(const Context& c, std::vector<Finding>* out) {
  double per_step = 0;
  const InputResult* r = Largest(c, [](const InputResult& in) {
    const TraceLensTimeline& tl = in.analysis.tracelens;
    if (tl.total <= 0 || static_cast<double>(tl.busy) > 0.5 * static_cast<double>(tl.total)) return 0.0;
    double wait = 0;
    for (const IdleBreakdownRow& row : in.analysis.idle_breakdown) wait += static_cast<double>(row.host_wait);
    return wait / StepsOf(in);
  }, &per_step);
  if (r == nullptr) return;
  const TraceLensTimeline& tl = r->analysis.tracelens;
  int64_t kernels = 0;
  for (const OpStat& k : r->analysis.kernels) kernels += k.count;
  Finding f = MakeFinding("device.launch_bound", per_step, c.mean_step_ns);
  f.title = "the device is busy " +
            std::to_string(static_cast<int>(std::lround(100.0 * static_cast<double>(tl.busy) /
                                                        static_cast<double>(tl.total)))) +
            " % of the time and waits for the host " + Duration(per_step) + " a step (" + RankName(*r) + ")";
  f.how = "HTA's idle breakdown: host-wait idle / " + std::to_string(static_cast<int64_t>(StepsOf(*r))) +
          " steps, the rank with the most";
  f.evidence.push_back({std::to_string(static_cast<int64_t>(kernels / StepsOf(*r))) + " kernels a step", -1,
                        r->analysis.rank});
  out->push_back(std::move(f));
}

void MemcpyExposed(const Context& c, std::vector<Finding>* out) {
  double per_step = 0;
  const InputResult* r = Largest(c, [](const InputResult& in) {
    return static_cast<double>(in.analysis.tracelens.exposed_memcpy) / StepsOf(in);
  }, &per_step);
  if (r == nullptr) return;
  Finding f = MakeFinding("device.memcpy_exposed", per_step, c.mean_step_ns);
  f.title = Duration(per_step) + " a step of host↔device copies with no computation beside them (" + RankName(*r) + ")";
  f.how = "TraceLens exposed_memcpy / " + std::to_string(static_cast<int64_t>(StepsOf(*r))) +
          " steps, the rank with the most";
  out->push_back(std::move(f));
}

void StepRegression(const Context& c, std::vector<Finding>* out) {
  if (c.base_inputs == nullptr || c.base_view == nullptr || c.mean_step_ns <= 0) return;
  const Context b = MakeContext(*c.base_inputs, *c.base_view);
  if (b.mean_step_ns <= 0) return;
  const double grew = c.mean_step_ns - b.mean_step_ns;
  if (grew <= 0.05 * b.mean_step_ns) return;  // within 5 %: run-to-run noise
  Finding f = MakeFinding("run.regression", grew, c.mean_step_ns);
  f.regression = true;
  f.title = "the step is " + Duration(grew) + " slower than the baseline's (" + Duration(c.mean_step_ns) + " against " +
            Duration(b.mean_step_ns) + ")";
  f.how = "mean step time − the baseline's mean step time (run view)";
  const auto now = StageMeans(c.view), before = StageMeans(*c.base_view);
  std::vector<std::pair<double, std::string>> growth;
  for (const auto& [name, ns] : now) {
    const auto it = before.find(name);
    growth.emplace_back(ns - (it != before.end() ? it->second : 0.0), name);
  }
  std::sort(growth.begin(), growth.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
  for (size_t i = 0; i < growth.size() && i < 3; ++i)
    if (growth[i].first > 0)
      f.evidence.push_back({growth[i].second + ": +" + Duration(growth[i].first) + " a step", -1, -1,
                            growth[i].second});
  out->push_back(std::move(f));
}

}  // namespace rlprof::analysis::advise
