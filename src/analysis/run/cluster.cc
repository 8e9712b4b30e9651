#include "src/analysis/run/cluster.h"

#include <array>
#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "src/analysis/passes/views.h"

namespace rlprof::analysis {
namespace {

double Us(double ns) { return ns / 1e3; }
Column R(std::string n, std::string unit) { return {std::move(n), ColumnType::kReal, std::move(unit)}; }
Column I(std::string n) { return {std::move(n), ColumnType::kInt, ""}; }
Column T(std::string n) { return {std::move(n), ColumnType::kText, ""}; }

std::string Lower(const std::string& s) {
  std::string o(s);
  for (char& c : o) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return o;
}

// One rank's inputs merged: its complete steps and its collectives.
struct RankData {
  std::vector<StepResult> steps;  // non-partial
  std::vector<CollectiveRow> collectives;
};

constexpr int kColumns = 6;
const char* const kColumnNames[kColumns] = {"Computing", "Communication(Not Overlapped)", "Overlapped",
                                            "Free", "Bubble", "Stage"};
std::array<double, kColumns> Columns(const StepResult& s) {
  const MsprofRow m = MsprofFromStep(s);
  return {static_cast<double>(m.computing), static_cast<double>(m.comm_not_overlapped),
          static_cast<double>(m.overlapped), static_cast<double>(m.free),
          static_cast<double>(m.bubble), static_cast<double>(m.stage)};
}

}  // namespace

double DixonCritical(size_t n) {
  // One-sided Dixon critical values at 99.5 % for n = 3 … 100, every n (the standard table of
  // GB/T 4883-2008, as msprof-analyze's slow_rank recipe tabulates it in dixon_table.py; issue
  // 29: interpolating between n = 16, 20, 30, 50, 100 under-flagged slow ranks at 17–99).
  static constexpr double kTable[98] = {
      0.994, 0.920, 0.823, 0.744, 0.680, 0.723, 0.676, 0.638, 0.707, 0.675,
      0.649, 0.672, 0.649, 0.629, 0.611, 0.595, 0.580, 0.568, 0.556, 0.545,
      0.536, 0.526, 0.519, 0.510, 0.503, 0.496, 0.489, 0.484, 0.478, 0.473,
      0.468, 0.463, 0.458, 0.454, 0.450, 0.446, 0.442, 0.439, 0.435, 0.432,
      0.429, 0.425, 0.423, 0.420, 0.417, 0.414, 0.412, 0.409, 0.407, 0.405,
      0.402, 0.400, 0.398, 0.396, 0.394, 0.392, 0.391, 0.388, 0.387, 0.385,
      0.383, 0.382, 0.380, 0.379, 0.377, 0.376, 0.374, 0.372, 0.371, 0.370,
      0.368, 0.368, 0.366, 0.365, 0.364, 0.363, 0.361, 0.360, 0.359, 0.358,
      0.356, 0.356, 0.355, 0.353, 0.352, 0.352, 0.351, 0.350, 0.349, 0.348,
      0.347, 0.346, 0.345, 0.344, 0.344, 0.343, 0.341, 0.341,
  };
  if (n < 3 || n > 100) return 0;
  return kTable[n - 3];
}

bool DixonLowOutlier(std::vector<double> x) {
  const size_t n = x.size();
  if (n < 3 || n > 100) return false;
  std::sort(x.begin(), x.end());
  if (std::set<double>(x.begin(), x.end()).size() <= 3) return false;  // too few distinct values
  double num, den;
  if (n <= 7) {
    num = x[1] - x[0], den = x[n - 1] - x[0];  // r10
  } else if (n <= 10) {
    num = x[1] - x[0], den = x[n - 2] - x[0];  // r11
  } else if (n <= 13) {
    num = x[2] - x[0], den = x[n - 2] - x[0];  // r21
  } else {
    num = x[2] - x[0], den = x[n - 3] - x[0];  // r22
  }
  const double r = den > 0 ? num / den : 0;
  return r > DixonCritical(n);
}

double BusBandwidthFactor(const std::string& name, size_t n) {
  if (n == 0) return 1;
  const std::string s = Lower(name);
  const double nn = static_cast<double>(n);
  if (s.find("allreduce") != std::string::npos || s.find("all_reduce") != std::string::npos)
    return 2 * (nn - 1) / nn;
  if (s.find("allgather") != std::string::npos || s.find("all_gather") != std::string::npos ||
      s.find("reducescatter") != std::string::npos || s.find("reduce_scatter") != std::string::npos ||
      s.find("alltoall") != std::string::npos || s.find("all_to_all") != std::string::npos)
    return (nn - 1) / nn;
  return 1;
}

namespace {

// Each input's steps and collectives, by rank (inputs without one get a negative rank of
// their own); a second process claiming a rank's step is merged and said.
std::map<int64_t, RankData> GatherRanks(const std::vector<InputResult>& results, Diagnostics& diag) {
  std::map<int64_t, RankData> ranks;
  // rank → step → the input whose own step markers cover it (not a window capture): a second
  // such input claiming the same rank and step is another process with the same rank (traces
  // of separate jobs, or a rank id that was not set), merged, and said.
  std::map<std::pair<int64_t, std::string>, std::map<int64_t, const TraceAnalysis*>> step_owner;  // (rank, role)
  std::set<std::pair<int64_t, std::string>> duplicate_noted;
  int64_t next_unknown = -1;
  for (size_t i = 0; i < results.size(); ++i) {
    const InputResult& r = results[i];
    if (!r.status.ok()) {
      diag.Add("unreadable_inputs");
      continue;
    }
    int64_t rank = r.analysis.rank;
    if (rank < 0) {
      rank = next_unknown--;  // its own pseudo-rank, shown as negative
      diag.Add("inputs_without_rank");
    }
    RankData& d = ranks[rank];
    if (rank >= 0 && !r.analysis.step_is_capture_window && !r.analysis.stage_is_capture_window) {
      for (const auto& s : r.analysis.steps) {
        if (s.window.partial) continue;
        auto [it, fresh] = step_owner[{rank, r.analysis.role}].try_emplace(s.window.step, &r.analysis);
        const TraceAnalysis& o = *it->second;
        // The same process (two windows of one job) is one rank; another process is not.
        if (fresh || o.source == r.analysis.source ||
            (o.pid > 0 && !o.host.empty() && o.pid == r.analysis.pid && o.host == r.analysis.host))
          continue;
        if (duplicate_noted.insert({rank, r.analysis.source}).second)
          diag.Note("duplicate_rank_inputs", "rank " + std::to_string(rank) + ": " + r.analysis.source + " and " +
                                                 o.source + " both hold step " + std::to_string(s.window.step) +
                                                 " of it; merged as one rank");
      }
    }
    for (const auto& s : r.analysis.steps) {
      if (s.window.partial) {
        diag.Add("partial_steps_left_out");
        continue;
      }
      d.steps.push_back(s);
    }
    d.collectives.insert(d.collectives.end(), r.analysis.collectives.begin(), r.analysis.collectives.end());
  }
  for (auto& [rank, d] : ranks)
    std::stable_sort(d.collectives.begin(), d.collectives.end(),
                     [](const CollectiveRow& a, const CollectiveRow& b) { return a.start < b.start; });

  return ranks;
}

// cluster_step_trace_time (msprof's columns per rank and step) and cluster_balance.
void StepTimeAndBalance(const std::map<int64_t, RankData>& ranks, ClusterResult& out) {
  // Per (rank, step): the msprof columns (a step of a rank seen in several discrete captures is
  // one row per capture window).
  out.step_time = {"cluster_step_trace_time", {I("rank"), I("step")}, {}};
  for (const char* c : kColumnNames) out.step_time.columns.push_back(R(c, "us"));
  std::map<int64_t, std::map<int64_t, std::array<double, kColumns>>> per_step;  // step → rank → Σ
  for (const auto& [rank, d] : ranks) {
    for (const auto& s : d.steps) {
      const auto v = Columns(s);
      std::vector<Cell> row;
      row.reserve(2 + v.size());
      row.emplace_back(rank);
      row.emplace_back(s.window.step);
      for (double x : v) row.emplace_back(Us(x));
      out.step_time.rows.push_back(std::move(row));
      auto& acc = per_step[s.window.step][rank];
      for (int k = 0; k < kColumns; ++k) acc[k] += v[k];
    }
  }

  // Balance per step and column over ranks: (max − min) / mean, flagged above 5 %.
  out.balance = {"cluster_balance",
                 {I("step"), T("column"), I("ranks"), R("min", "us"), R("mean", "us"), R("max", "us"),
                  R("imbalance", "%"), I("min_rank"), I("max_rank"), I("flagged")},
                 {}};
  for (const auto& [step, by_rank] : per_step) {
    if (by_rank.size() < 2) continue;
    for (int k = 0; k < kColumns; ++k) {
      double lo = INFINITY, hi = -INFINITY, sum = 0;
      int64_t lo_rank = 0, hi_rank = 0;
      for (const auto& [rank, v] : by_rank) {
        sum += v[k];
        if (v[k] < lo) lo = v[k], lo_rank = rank;
        if (v[k] > hi) hi = v[k], hi_rank = rank;
      }
      const double mean = sum / static_cast<double>(by_rank.size());
      const double imb = mean > 0 ? 100.0 * (hi - lo) / mean : 0;
      out.balance.rows.push_back({step, std::string(kColumnNames[k]), static_cast<int64_t>(by_rank.size()),
                                  Us(lo), Us(mean), Us(hi), imb, lo_rank, hi_rank,
                                  static_cast<int64_t>(imb > 5.0)});
    }
  }
}

// The collectives table (each instance across ranks: latency, skew, bandwidth, the slow rank)
// and slow_rank (how often each rank held the others up).
void CollectivesAndSlowRanks(const std::map<int64_t, RankData>& ranks, ClusterResult& out) {
  Diagnostics& diag = out.diagnostics;
  // Collective instances: the k-th occurrence of (group, name) on every rank.
  std::map<std::pair<std::string, std::string>, std::map<int64_t, std::vector<const CollectiveRow*>>> ops;
  for (const auto& [rank, d] : ranks)
    for (const auto& c : d.collectives) ops[{c.group, c.name}][rank].push_back(&c);
  out.collectives = {"collectives",
                     {T("group"), T("name"), I("index"), I("ranks"), R("latency", "us"), R("max_duration", "us"),
                      R("max_wait", "us"), I("earliest_rank"), R("start_skew", "us"), R("end_skew", "us"),
                      I("latest_arrival_rank"), I("slow_rank"), I("bytes"), R("algbw", "GB/s"),
                      R("busbw", "GB/s")},
                     {}};
  std::map<int64_t, int64_t> slow_count;
  std::map<int64_t, std::set<std::string>> slow_ops;
  for (const auto& [key, by_rank] : ops) {
    if (by_rank.size() < 2) continue;  // seen on one rank only: nothing to compare
    size_t count = by_rank.begin()->second.size();
    bool equal = true;
    for (const auto& [rank, v] : by_rank) equal = equal && v.size() == count;
    if (!equal) {
      diag.Add("collectives_with_unequal_counts_skipped");
      continue;
    }
    const size_t n = by_rank.size();
    for (size_t idx = 0; idx < count; ++idx) {
      std::vector<double> durs;
      int64_t min_d = INT64_MAX, max_d = INT64_MIN, min_s = INT64_MAX, max_s = INT64_MIN;
      int64_t min_e = INT64_MAX, max_e = INT64_MIN, min_rank = 0, latest = 0, earliest = 0, bytes = -1;
      for (const auto& [rank, v] : by_rank) {
        const CollectiveRow& c = *v[idx];
        const int64_t d = c.end - c.start;
        durs.push_back(static_cast<double>(d));
        if (d < min_d) min_d = d, min_rank = rank;
        max_d = std::max(max_d, d);
        if (c.start > max_s) max_s = c.start, latest = rank;
        if (c.start < min_s) min_s = c.start, earliest = rank;
        min_e = std::min(min_e, c.end);
        max_e = std::max(max_e, c.end);
        bytes = std::max(bytes, c.bytes);
      }
      // The slow rank is the one with the shortest collective: the others waited for it.
      // ≤ 100 ranks: Dixon's test flags the shortest. More: the three-sigma rule flags every
      // rank below mean − 3σ, and the shortest too when one is above mean + 3σ (msprof-analyze's
      // judge_norm; population σ).
      std::vector<int64_t> slow;
      if (n <= 100) {
        if (DixonLowOutlier(durs)) slow.push_back(min_rank);
      } else {
        double mean = 0, var = 0;
        for (double x : durs) mean += x;
        mean /= static_cast<double>(n);
        for (double x : durs) var += (x - mean) * (x - mean);
        const double sd = std::sqrt(var / static_cast<double>(n));
        size_t k = 0;
        for (const auto& [rank, v] : by_rank) {
          if (durs[k++] < mean - 3 * sd) slow.push_back(rank);
        }
        if (static_cast<double>(max_d) > mean + 3 * sd &&
            std::find(slow.begin(), slow.end(), min_rank) == slow.end())
          slow.push_back(min_rank);
      }
      for (int64_t r : slow) {
        ++slow_count[r];
        slow_ops[r].insert(key.second);
      }
      Cell algbw{}, busbw{};
      if (bytes > 0 && min_d > 0) {
        const double a = static_cast<double>(bytes) / static_cast<double>(min_d);  // bytes/ns = GB/s
        algbw = a;
        busbw = a * BusBandwidthFactor(key.second, n);
      }
      out.collectives.rows.push_back({key.first, key.second, static_cast<int64_t>(idx),
                                      static_cast<int64_t>(n), Us(static_cast<double>(min_d)),
                                      Us(static_cast<double>(max_d)), Us(static_cast<double>(max_d - min_d)),
                                      earliest, Us(static_cast<double>(max_s - min_s)),
                                      Us(static_cast<double>(max_e - min_e)), latest,
                                      slow.empty() ? Cell{} : Cell{min_rank}, bytes >= 0 ? Cell{bytes} : Cell{},
                                      algbw, busbw});
    }
  }
  out.slow_ranks = {"slow_rank", {I("rank"), I("slow_affect_count"), T("collectives")}, {}};
  std::vector<std::pair<int64_t, int64_t>> order(slow_count.begin(), slow_count.end());
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  for (const auto& [rank, n] : order) {
    std::string names;
    for (const auto& s : slow_ops[rank]) names += (names.empty() ? "" : ", ") + s;
    out.slow_ranks.rows.push_back({rank, n, names});
  }
}

}  // namespace

ClusterResult AnalyseCluster(const std::vector<InputResult>& results) {
  ClusterResult out;
  const std::map<int64_t, RankData> ranks = GatherRanks(results, out.diagnostics);
  StepTimeAndBalance(ranks, out);
  CollectivesAndSlowRanks(ranks, out);
  if (ranks.size() < 2) out.diagnostics.Add("fewer_than_two_ranks");
  return out;
}

}  // namespace rlprof::analysis
