// The advisor's RL-level rules (rules.h; docs/advise.md).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "src/analysis/advise/rules.h"
#include "src/analysis/run/async_run.h"
#include "src/analysis/run/samples_run.h"
#include "src/config/stages.h"

namespace rlprof::analysis::advise {
namespace {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// A stage row of the run view with two or more ranks: each rank's time.
struct Spread {
  const RunViewRow* row;
  std::vector<std::pair<size_t, double>> lanes;  // (lane, ns)
  std::map<size_t, double> prior;                // each lane's time in the step's earlier spreads
};

std::vector<Spread> Spreads(const RunView& v) {
  std::vector<Spread> out;
  std::map<int64_t, std::map<size_t, double>> so_far;  // rows are in time order within a step
  for (const RunViewRow& r : v.rows) {
    if (r.kind != RunViewKind::kStage || r.partial) continue;
    Spread s{&r, {}, {}};
    for (size_t i = 0; i < r.per_lane.size(); ++i)
      if (r.per_lane[i] && *r.per_lane[i] > 0) s.lanes.emplace_back(i, static_cast<double>(*r.per_lane[i]));
    if (s.lanes.size() < 2) continue;
    std::map<size_t, double>& before = so_far[r.step];
    s.prior = before;
    for (const auto& [lane, ns] : s.lanes) before[lane] += ns;
    out.push_back(std::move(s));
  }
  return out;
}

int64_t LaneRank(const RunView& v, size_t lane) { return lane < v.lane_ranks.size() ? v.lane_ranks[lane] : -1; }

// The slowest lane of a spread and its excess over the median of the others.
std::pair<size_t, double> Critical(const Spread& s, double* others_median) {
  size_t at = 0;
  for (size_t i = 1; i < s.lanes.size(); ++i)
    if (s.lanes[i].second > s.lanes[at].second) at = i;
  std::vector<double> others;
  for (size_t i = 0; i < s.lanes.size(); ++i)
    if (i != at) others.push_back(s.lanes[i].second);
  *others_median = Median(others);
  return {s.lanes[at].first, s.lanes[at].second - *others_median};
}

// Whether `lane`, the slowest of `s` by `excess`, spent the least time of its lanes in the step's
// earlier stages (`s.prior`), short of the most by at least half the excess: it waited in `s` (a
// stage that synchronises the ranks, such as a data-parallel update) for the others, and its
// excess there is the earlier stages' again, not work of its own.
bool WaitedForOthers(const Spread& s, size_t lane, double excess) {
  const std::map<size_t, double>& prior = s.prior;
  if (prior.empty()) return false;
  size_t least = SIZE_MAX;
  double least_ns = 0;
  for (const auto& [l, ns] : s.lanes) {
    const auto it = prior.find(l);
    const double t = it != prior.end() ? it->second : 0;
    if (least == SIZE_MAX || t < least_ns) least = l, least_ns = t;
  }
  double most_ns = 0;
  for (const auto& [l, t] : prior) most_ns = std::max(most_ns, t);
  return least == lane && most_ns - least_ns >= 0.5 * excess;
}

// The lane that is a straggler: leaving out the spreads where the slowest lane only waited for
// the others (WaitedForOthers), it is the slowest by ≥ 5 % over the others' median in at least
// two thirds of the spreads (and at least two of them), and those spreads hold at least two thirds
// of the time every slowest lane spent over the others. The second test keeps a rank that is
// slower in small stages by chance (a loaded machine) from being named while the large excess is
// another's or changes rank from step to step (an imbalance). SIZE_MAX when none is.
size_t StragglerLane(const std::vector<Spread>& spreads) {
  std::map<size_t, size_t> critical;
  std::map<size_t, double> excess_of;
  double total = 0;
  size_t counted = 0;
  for (const Spread& s : spreads) {
    double med = 0;
    const auto [lane, excess] = Critical(s, &med);
    if (WaitedForOthers(s, lane, excess)) continue;
    ++counted;
    if (med > 0 && excess >= 0.05 * med) {
      ++critical[lane];
      excess_of[lane] += excess;
      total += excess;
    }
  }
  for (const auto& [lane, n] : critical)
    if (n >= 2 && 3 * n >= 2 * counted && 3 * excess_of[lane] >= 2 * total) return lane;
  return SIZE_MAX;
}

// Per step, the longest lane of the stage rows matching `match` (its time on the critical path):
// the largest over the matching rows (a controller's stage holds its workers' one).
template <typename Match>
std::map<int64_t, int64_t> SlowestPerStep(const RunView& v, Match match) {
  std::map<int64_t, int64_t> out;
  for (const RunViewRow& r : v.rows) {
    if (r.kind != RunViewKind::kStage || !match(r)) continue;
    int64_t slowest = 0;
    for (const auto& x : r.per_lane)
      if (x) slowest = std::max(slowest, *x);
    out[r.step] = std::max(out[r.step], slowest);
  }
  return out;
}

double MeanOver(const std::map<int64_t, int64_t>& m) {
  if (m.empty()) return 0;
  double s = 0;
  for (const auto& [k, v] : m) s += static_cast<double>(v);
  return s / static_cast<double>(m.size());
}

// "16.4": a rate or ratio as findings write it.
std::string Num1(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", std::fabs(v) < 10 ? 2 : 1, v);
  return buf;
}

double StepOr(const Context& c, double fallback) { return c.mean_step_ns > 0 ? c.mean_step_ns : fallback; }

}  // namespace

void GenerationTail(const Context& c, std::vector<Finding>* out) {
  if (!AnySamples(c.inputs)) return;
  const Table t = SampleTailTable(c.inputs);
  double saves = 0, partial = 0, step_time = 0, tail = 0, idle = 0;
  int64_t steps = 0, samples = 0, oversample = 0;
  size_t worst = SIZE_MAX;
  for (size_t i = 0; i < t.rows.size(); ++i) {
    if (Text(t, i, "replica") != "all") continue;
    ++steps;
    saves += Num(t, i, "p95_saves").value_or(0) * 1e3;
    partial += Num(t, i, "partial_saves").value_or(0) * 1e3;
    step_time += Num(t, i, "step_time").value_or(0) * 1e3;
    tail += Num(t, i, "tail").value_or(0) * 1e3;
    idle += Num(t, i, "tail_idle").value_or(0) * 1e3;
    samples += static_cast<int64_t>(Num(t, i, "samples").value_or(0));
    oversample += static_cast<int64_t>(Num(t, i, "p95_oversample").value_or(0));
    if (worst == SIZE_MAX || Num(t, i, "tail").value_or(0) > Num(t, worst, "tail").value_or(0)) worst = i;
  }
  if (steps == 0) return;
  const double n = static_cast<double>(steps);
  Finding f = MakeFinding("rl.generation_tail", saves / n, StepOr(c, step_time / n));
  f.title = "the generation waits for its slowest samples: the last 10 % end " + Duration(tail / n) +
            " after the first 90 % (mean of " + std::to_string(steps) + " steps)";
  f.how = "stop at p95: p100 − p95 of the samples' ends = " + Duration(saves / n) + " a step, over-sampling " +
          std::to_string(oversample / steps) + " of " + std::to_string(samples / steps) +
          " samples; partial rollout cut at p90 would save " + Duration(partial / n) + " (sample_tail, mean over " +
          std::to_string(steps) + " steps; estimates: the rest of the step unchanged)";
  if (worst != SIZE_MAX) {
    Evidence e;
    e.step = static_cast<int64_t>(Num(t, worst, "step").value_or(-1));
    e.stage = "rollout_generate";
    e.what = "step " + std::to_string(e.step) + ": tail " + Duration(Num(t, worst, "tail").value_or(0) * 1e3) +
             ", replica-time idle in it " + Duration(Num(t, worst, "tail_idle").value_or(0) * 1e3);
    f.evidence.push_back(e);
  }
  if (idle > 0) f.evidence.push_back({"replica-time idle during the tails: " + Duration(idle / n) + " a step"});
  out->push_back(std::move(f));
}

void StragglerRank(const Context& c, std::vector<Finding>* out) {
  const RunView& v = c.view;
  const std::vector<Spread> spreads = Spreads(v);
  const size_t lane = StragglerLane(spreads);
  if (lane == SIZE_MAX) return;
  std::map<int64_t, double> excess_by_step;
  std::vector<std::pair<double, const Spread*>> worst;
  for (const Spread& s : spreads) {
    double med = 0;
    const auto [crit, excess] = Critical(s, &med);
    if (crit != lane || excess <= 0) continue;
    excess_by_step[s.row->step] += excess;
    worst.emplace_back(excess, &s);
  }
  double sum = 0;
  for (const auto& [step, e] : excess_by_step) sum += e;
  const double steps = static_cast<double>(std::max<size_t>(c.step_ns.size(), excess_by_step.size()));
  const int64_t rank = LaneRank(v, lane);
  Finding f = MakeFinding("rl.straggler_rank", sum / steps, c.mean_step_ns);
  f.title = "rank " + std::to_string(rank) + " is the slowest in " + std::to_string(worst.size()) + " of " +
            std::to_string(spreads.size()) + " stages it shares with other ranks, " + Duration(sum / steps) +
            " a step behind their median";
  f.how = "Σ over those stages of (rank " + std::to_string(rank) + "'s time − the other ranks' median) = " +
          Duration(sum) + " over " + std::to_string(static_cast<int64_t>(steps)) + " steps (run view)";
  std::sort(worst.begin(), worst.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = 0; i < worst.size() && i < 5; ++i) {
    const RunViewRow& r = *worst[i].second->row;
    f.evidence.push_back({"step " + std::to_string(r.step) + " " + r.role + "/" + r.stage + ": +" +
                              Duration(worst[i].first) + " over the median",
                          r.step, rank, r.stage});
  }
  out->push_back(std::move(f));
}

void DpImbalance(const Context& c, std::vector<Finding>* out) {
  const RunView& v = c.view;
  const std::vector<Spread> spreads = Spreads(v);
  const size_t straggler = StragglerLane(spreads);
  double sum = 0;
  std::vector<std::pair<double, const Spread*>> worst;
  std::map<int64_t, bool> steps;
  for (const Spread& s : spreads) {
    double med = 0;
    if (straggler != SIZE_MAX && Critical(s, &med).first == straggler) continue;  // the straggler's rule
    if (straggler != SIZE_MAX) {
      // A stage that synchronises the ranks (a data-parallel update) shows the straggler as the
      // fastest: it arrives late and the others wait for it there. That wait is its cost (counted
      // by rl.straggler_rank), not an imbalance.
      const auto fastest = std::min_element(s.lanes.begin(), s.lanes.end(),
                                            [](const auto& a, const auto& b) { return a.second < b.second; });
      if (fastest->first == straggler) continue;
    }
    double mx = 0, mean = 0;
    size_t slowest = s.lanes.front().first;
    for (const auto& [lane, ns] : s.lanes) {
      if (ns > mx) mx = ns, slowest = lane;
      mean += ns;
    }
    mean /= static_cast<double>(s.lanes.size());
    if (mx - mean <= 0.02 * mean) continue;  // within 2 %: balanced
    // Likewise without a straggler: the slowest rank of a synchronising stage that waited there
    // for the others shows the earlier stages' imbalance again (counted there), not one of its own.
    if (WaitedForOthers(s, slowest, mx - mean)) continue;
    sum += mx - mean;
    steps[s.row->step] = true;
    worst.emplace_back(mx - mean, &s);
  }
  if (worst.empty()) return;
  const double n = static_cast<double>(std::max(c.step_ns.size(), steps.size()));
  Finding f = MakeFinding("rl.dp_imbalance", sum / n, c.mean_step_ns);
  f.title = "ranks finish their stages unevenly: the slowest rank is " + Duration(sum / n) +
            " a step behind the mean, in " + std::to_string(worst.size()) + " stage(s)";
  f.how = "Σ over stages of (slowest rank − mean rank) = " + Duration(sum) + " over " +
          std::to_string(static_cast<int64_t>(n)) + " steps (run view; a perfect balance's saving; a rank's wait at a "
          "synchronising stage for the others is not counted again)";
  std::sort(worst.begin(), worst.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = 0; i < worst.size() && i < 5; ++i) {
    const Spread& s = *worst[i].second;
    size_t slow = s.lanes.front().first;
    double mx = 0;
    for (const auto& [lane, ns] : s.lanes)
      if (ns > mx) mx = ns, slow = lane;
    f.evidence.push_back({"step " + std::to_string(s.row->step) + " " + s.row->role + "/" + s.row->stage + ": rank " +
                              std::to_string(LaneRank(v, slow)) + " " + Duration(worst[i].first) + " over the mean",
                          s.row->step, LaneRank(v, slow), s.row->stage});
  }
  out->push_back(std::move(f));
}

// Disjoint, sorted intervals covering `v`.
std::vector<std::pair<int64_t, int64_t>> Merged(std::vector<std::pair<int64_t, int64_t>> v) {
  std::sort(v.begin(), v.end());
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const auto& iv : v) {
    if (!out.empty() && iv.first <= out.back().second)
      out.back().second = std::max(out.back().second, iv.second);
    else
      out.push_back(iv);
  }
  return out;
}

void StageGaps(const Context& c, std::vector<Finding>* out) {
  // An async run's processes wait between their stages by design (for samples, for weights):
  // async_pools splits that time by cause, and rl.async_balance / rl.weight_sync weigh it.
  if (AnyAsync(c.inputs)) return;
  // Per step: each process's view of it (its step window, else the span of its stages in it) and
  // every process's stages. The views that overlap are one clock's view of the step (captures
  // of another clock — or another run — form a view of their own); in each, the time no stage of
  // any process covers is the step's gap time. The step's: the mean over its views.
  std::map<int64_t, std::vector<std::pair<int64_t, int64_t>>> views, stages;
  for (const InputResult& r : c.inputs) {
    if (!r.status.ok()) continue;
    std::map<int64_t, std::pair<int64_t, int64_t>> hull;
    for (const StageResult& s : r.analysis.stages) {
      if (s.name == "(none)" || s.end <= s.start) continue;
      stages[s.step].emplace_back(s.start, s.end);
      auto& h = hull.try_emplace(s.step, s.start, s.end).first->second;
      h = {std::min(h.first, s.start), std::max(h.second, s.end)};
    }
    for (const StepResult& s : r.analysis.steps)
      if (s.window.host_end > s.window.host_start && !r.analysis.step_is_capture_window)
        hull[s.window.step] = {s.window.host_start, s.window.host_end};
    for (const auto& [step, h] : hull) views[step].push_back(h);
  }
  double sum = 0;
  size_t steps = 0;
  std::vector<std::pair<int64_t, Evidence>> gaps;
  for (auto& entry : stages) {
    const int64_t step = entry.first;  // (a lambda below uses it: not a structured binding)
    const auto covered = Merged(entry.second);
    const auto comps = Merged(views[step]);
    if (comps.empty()) continue;
    ++steps;
    double step_gap = 0;
    for (const auto& [lo, hi] : comps) {
      int64_t cur = lo;
      auto add = [&](int64_t a, int64_t b, const char* where) {
        step_gap += static_cast<double>(b - a);
        gaps.push_back({b - a, {"step " + std::to_string(step) + ": " + Duration(static_cast<double>(b - a)) + where,
                                step, -1, "", a, b}});
      };
      for (const auto& [a, b] : covered) {
        if (b <= lo || a >= hi) continue;
        if (a > cur) add(cur, a, " with no stage running");
        cur = std::max(cur, b);
      }
      if (hi > cur) add(cur, hi, cur == lo ? " with no stage running" : " after the last stage");
    }
    sum += step_gap / static_cast<double>(comps.size());
  }
  if (gaps.empty() || steps == 0) return;
  const double n = static_cast<double>(steps);
  Finding f = MakeFinding("rl.stage_gaps", sum / n, c.mean_step_ns);
  f.title = Duration(sum / n) + " a step run outside every stage (no process in a stage)";
  f.how = "Σ of the step's time no stage of any process covers = " + Duration(sum) + " over " +
          std::to_string(steps) + " steps (stages joined across processes on rank 0's clock)";
  std::sort(gaps.begin(), gaps.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = 0; i < gaps.size() && i < 5; ++i) f.evidence.push_back(gaps[i].second);
  out->push_back(std::move(f));
}

void WeightSync(const Context& c, std::vector<Finding>* out) {
  if (AnyAsync(c.inputs)) {
    const Table t = AsyncVerdictTable(c.inputs);
    const double exposed = t.rows.empty() ? 0 : Num(t, 0, "exposed_sync").value_or(0) * 1e3;
    if (exposed <= 0 || c.step_ns.empty()) return;
    const double n = static_cast<double>(c.step_ns.size());
    Finding f = MakeFinding("rl.weight_sync", exposed / n, c.mean_step_ns);
    f.title = "the weight sync holds both pools: " + Duration(exposed / n) + " a step with neither busy";
    f.how = "async_verdict's exposed_sync " + Duration(exposed) + " / " + std::to_string(c.step_ns.size()) + " steps";
    const Table syncs = AsyncSyncsTable(c.inputs);
    for (size_t i = 0; i < syncs.rows.size() && i < 3; ++i)
      f.evidence.push_back({"version " + std::to_string(static_cast<int64_t>(Num(syncs, i, "version").value_or(-1))) +
                            ": " + Duration(Num(syncs, i, "duration").value_or(0) * 1e3) +
                            (Num(syncs, i, "transfer_gbps") ? ", " + Num1(*Num(syncs, i, "transfer_gbps")) + " GB/s" : "")});
    out->push_back(std::move(f));
    return;
  }
  const auto per_step =
      SlowestPerStep(c.view, [](const RunViewRow& r) { return config::SameStage(r.stage, "weight_sync"); });
  const double mean = MeanOver(per_step);
  if (mean <= 0) return;
  Finding f = MakeFinding("rl.weight_sync", mean, c.mean_step_ns);
  f.title = "the weight sync takes " + Duration(mean) + " a step on the critical path";
  f.how = "the slowest rank's weight_sync stage, mean over " + std::to_string(per_step.size()) + " steps";
  for (const auto& [step, ns] : per_step)
    if (f.evidence.size() < 3)
      f.evidence.push_back({"step " + std::to_string(step) + ": " + Duration(static_cast<double>(ns)), step, -1,
                            "weight_sync"});
  out->push_back(std::move(f));
}

void AsyncBalance(const Context& c, std::vector<Finding>* out) {
  if (!AnyAsync(c.inputs)) return;
  const Table t = AsyncVerdictTable(c.inputs);
  if (t.rows.empty()) return;
  const std::string verdict = Text(t, 0, "verdict");
  const double cap = Num(t, 0, "throughput_capacity").value_or(0);
  const bool rollout_bound = verdict == "rollout-bound";
  if ((!rollout_bound && verdict != "train-bound") || cap <= 0) return;
  const double with = Num(t, 0, rollout_bound ? "with_one_more_generating" : "with_one_more_training").value_or(0);
  const double step = c.mean_step_ns;
  const double saving = with > cap && step > 0 ? step * (1.0 - cap / with) : 0;
  Finding f = MakeFinding("rl.async_balance", saving, step);
  f.title = "the run is " + verdict + " (balance " + Num1(Num(t, 0, "balance").value_or(0)) + "): the " +
            (rollout_bound ? "trainers wait for samples" : "rollouters wait for the trainer");
  f.how = "capacity " + Num1(cap) + " samples/s now, " + Num1(with) + " with one process moved to " +
          (rollout_bound ? "generation" : "training") + ": step × (1 − now / moved) (async_verdict; as if each "
          "process kept its rate)";
  f.evidence.push_back({"generate_rate " + Num1(Num(t, 0, "generate_rate").value_or(0)) + "/s, train_rate " +
                        Num1(Num(t, 0, "train_rate").value_or(0)) + "/s per process"});
  out->push_back(std::move(f));
}

void ColocatedRollout(const Context& c, std::vector<Finding>* out) {
  if (AnyAsync(c.inputs) || c.step_ns.empty()) return;
  const auto gen =
      SlowestPerStep(c.view, [](const RunViewRow& r) { return config::SameStage(r.stage, "rollout_generate"); });
  if (gen.empty()) return;
  double hide = 0, share = 0;
  for (const auto& [step, g] : gen) {
    const auto it = c.step_ns.find(step);
    if (it == c.step_ns.end() || it->second <= 0) continue;
    const double total = static_cast<double>(it->second), rest = std::max(0.0, total - static_cast<double>(g));
    hide += std::min(static_cast<double>(g), rest);
    share += static_cast<double>(g) / total;
  }
  const double n = static_cast<double>(gen.size());
  Finding f = MakeFinding("rl.colocated_rollout", hide / n, c.mean_step_ns);
  f.severity = Severity::kInfo;  // a design choice, not a fault: stated, never ranked above info
  f.stated = true;
  f.title = "generation is " + std::to_string(static_cast<int>(std::lround(100.0 * share / n))) +
            " % of the step and runs apart from training";
  f.how = "min(generation, rest of the step) per step, mean over " + std::to_string(gen.size()) +
          " steps: the most that overlapping them (one-step-off) could hide";
  out->push_back(std::move(f));
}

void LogProbRecompute(const Context& c, std::vector<Finding>* out) {
  const auto per_step = SlowestPerStep(
      c.view, [](const RunViewRow& r) { return config::SameStage(r.stage, "actor_compute_log_prob"); });
  const double mean = MeanOver(per_step);
  if (mean <= 0) return;
  Finding f = MakeFinding("rl.logprob_recompute", mean, c.mean_step_ns);
  f.title = "the actor recomputes the old policy's log-probs: " + Duration(mean) + " a step";
  f.how = "the slowest rank's actor_compute_log_prob, mean over " + std::to_string(per_step.size()) + " steps";
  for (const auto& [step, ns] : per_step)
    if (f.evidence.size() < 3)
      f.evidence.push_back({"step " + std::to_string(step) + ": " + Duration(static_cast<double>(ns)), step, -1,
                            "actor_compute_log_prob"});
  out->push_back(std::move(f));
}

}  // namespace rlprof::analysis::advise
