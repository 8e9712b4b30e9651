// samples, sample_tail, sample_outcomes (samples_run.h).
#include "src/analysis/run/samples_run.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace rlprof::analysis {
namespace {

double Us(int64_t ns) { return static_cast<double>(ns) / 1e3; }

// A duration from a to b when both are known (else empty).
Cell Span(int64_t a, int64_t b) { return a >= 0 && b >= a ? Cell(Us(b - a)) : Cell(); }
Cell Count(int64_t v) { return v >= 0 ? Cell(v) : Cell(); }

struct Item {
  const InputResult* input;
  SampleRecord s;  // the sample's records joined (JoinSamples)
  int64_t replica;
  int64_t start;  // submit, else the earliest known time
  int64_t end;    // end, else the last token
};

std::vector<Item> Collect(const std::vector<InputResult>& results) {
  std::vector<Item> out;
  for (JoinedSample& j : JoinSamples(results)) {
    const int64_t replica = j.s.replica >= 0 ? j.s.replica : std::max<int64_t>(j.input->analysis.rank, 0);
    const int64_t start = SampleStart(j.s), end = SampleEnd(j.s);
    out.push_back({j.input, std::move(j.s), replica, start, end});
  }
  std::stable_sort(out.begin(), out.end(), [](const Item& a, const Item& b) {
    return a.start != b.start ? a.start < b.start : (a.end != b.end ? a.end < b.end : a.s.id < b.s.id);
  });
  return out;
}

int64_t MinKnown(int64_t a, int64_t b) { return a < 0 ? b : (b < 0 ? a : std::min(a, b)); }
int64_t SumKnown(int64_t a, int64_t b) { return a < 0 ? b : (b < 0 ? a : a + b); }
bool FromEngine(const SampleRecord& s) { return s.completion_tokens >= 0 || s.first_token >= 0; }

// Joins record `b` (of process `in`) into the sample `j` of the same id.
void Join(JoinedSample& j, const SampleRecord& b, const InputResult* in) {
  SampleRecord& a = j.s;
  if (!FromEngine(a) && FromEngine(b)) {  // the engine's process is the sample's home
    j.input = in;
    a.replica = b.replica;
    a.step = b.step;
  } else if (a.step < 0) {
    a.step = b.step;
  }
  if (!b.finish_reason.empty() && (a.finish_reason.empty() || SampleEnd(b) >= j.finish_end)) {
    a.finish_reason = b.finish_reason;
    j.finish_end = SampleEnd(b);
  }
  if (a.group.empty()) a.group = b.group;
  a.submit = MinKnown(a.submit, b.submit);
  a.queued = MinKnown(a.queued, b.queued);
  a.scheduled = MinKnown(a.scheduled, b.scheduled);
  a.first_token = MinKnown(a.first_token, b.first_token);
  a.last_token = std::max(a.last_token, b.last_token);
  a.end = std::max(a.end, b.end);
  a.prompt_tokens = MinKnown(a.prompt_tokens, b.prompt_tokens);  // the first turn's: later ones hold it
  a.completion_tokens = SumKnown(a.completion_tokens, b.completion_tokens);
  a.cached_tokens = SumKnown(a.cached_tokens, b.cached_tokens);
  a.preemptions = SumKnown(a.preemptions, b.preemptions);
  a.version_first = MinKnown(a.version_first, b.version_first);
  a.version_last = std::max(a.version_last, b.version_last);
  a.spans.insert(a.spans.end(), b.spans.begin(), b.spans.end());
  ++j.records;
}

// Nearest-rank percentile of sorted values: the ceil(p/100·n)-th smallest.
int64_t Rank(const std::vector<int64_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  const auto n = static_cast<double>(sorted.size());
  size_t k = static_cast<size_t>(std::ceil(p / 100.0 * n - 1e-9));
  k = std::clamp<size_t>(k, 1, sorted.size());
  return sorted[k - 1];
}

Cell Pct(std::vector<int64_t> v, double p) {
  if (v.empty()) return {};
  std::sort(v.begin(), v.end());
  return Us(Rank(v, p));
}

int64_t Tpot(const SampleRecord& s) {
  if (s.first_token < 0 || s.last_token < s.first_token || s.completion_tokens < 2) return -1;
  return (s.last_token - s.first_token) / (s.completion_tokens - 1);
}

// Time in [lo, hi) covered by none of `busy` (intervals, unsorted).
int64_t IdleWithin(std::vector<std::pair<int64_t, int64_t>> busy, int64_t lo, int64_t hi) {
  if (hi <= lo) return 0;
  std::sort(busy.begin(), busy.end());
  int64_t covered = 0, cur = lo;
  for (const auto& [a0, b0] : busy) {
    const int64_t a = std::max(a0, cur), b = std::min(b0, hi);
    if (b > a) {
      covered += b - a;
      cur = b;
    }
  }
  return (hi - lo) - covered;
}

}  // namespace

int64_t SampleStart(const SampleRecord& s) {
  if (s.submit >= 0) return s.submit;
  int64_t lo = INT64_MAX;
  for (int64_t t : {s.queued, s.scheduled, s.first_token, s.last_token, s.end})
    if (t >= 0) lo = std::min(lo, t);
  return lo == INT64_MAX ? -1 : lo;
}

int64_t SampleEnd(const SampleRecord& s) {
  const int64_t end = s.end >= 0 ? s.end : s.last_token;
  return end >= 0 ? end : SampleStart(s);
}

std::vector<JoinedSample> JoinSamples(const std::vector<InputResult>& results) {
  std::vector<JoinedSample> out;
  std::unordered_map<std::string, size_t> at;  // id → its index in out
  for (const InputResult& r : results) {
    if (!r.status.ok()) continue;
    for (const SampleRecord& s : r.analysis.samples) {
      auto [it, fresh] = at.try_emplace(s.id, out.size());
      if (fresh)
        out.push_back({&r, s, 1, s.finish_reason.empty() ? -1 : SampleEnd(s)});
      else
        Join(out[it->second], s, &r);
    }
  }
  return out;
}

std::unordered_map<std::string, const SampleUse*> LastUses(const std::vector<InputResult>& results) {
  std::unordered_map<std::string, const SampleUse*> out;
  for (const InputResult& r : results) {
    if (!r.status.ok()) continue;
    for (const SampleUse& u : r.analysis.sample_uses) {
      auto [it, fresh] = out.try_emplace(u.id, &u);
      if (!fresh && it->second->at <= u.at) it->second = &u;
    }
  }
  return out;
}

bool AnySamples(const std::vector<InputResult>& results) {
  for (const InputResult& r : results)
    if (r.status.ok() && (!r.analysis.samples.empty() || !r.analysis.sample_uses.empty())) return true;
  return false;
}

Table SamplesTable(const std::vector<InputResult>& results) {
  Table t{"samples",
          {Column{"input", ColumnType::kText, ""}, Column{"rank", ColumnType::kInt, ""},
           Column{"role", ColumnType::kText, ""}, Column{"replica", ColumnType::kInt, ""},
           Column{"id", ColumnType::kText, ""}, Column{"group", ColumnType::kText, ""},
           Column{"step", ColumnType::kInt, ""}, Column{"submit", ColumnType::kReal, "us"},
           Column{"queue", ColumnType::kReal, "us"}, Column{"prefill", ColumnType::kReal, "us"},
           Column{"ttft", ColumnType::kReal, "us"}, Column{"decode", ColumnType::kReal, "us"},
           Column{"tpot", ColumnType::kReal, "us"}, Column{"e2e", ColumnType::kReal, "us"},
           Column{"tool", ColumnType::kReal, "us"}, Column{"reward", ColumnType::kReal, "us"},
           Column{"prompt_tokens", ColumnType::kInt, ""}, Column{"completion_tokens", ColumnType::kInt, ""},
           Column{"cached_tokens", ColumnType::kInt, ""}, Column{"finish_reason", ColumnType::kText, "", true},
           Column{"preemptions", ColumnType::kInt, ""}, Column{"tool_calls", ColumnType::kInt, ""},
           Column{"version_first", ColumnType::kInt, ""}, Column{"version_last", ColumnType::kInt, ""},
           Column{"outcome", ColumnType::kText, "", true}, Column{"used_step", ColumnType::kInt, ""},
           Column{"used_version", ColumnType::kInt, ""}, Column{"staleness", ColumnType::kInt, ""}},
          {}};
  const std::vector<Item> items = Collect(results);
  const auto uses = LastUses(results);
  const int64_t origin = items.empty() ? 0 : items.front().start;
  for (const Item& it : items) {
    const SampleRecord& s = it.s;
    int64_t tool = 0, reward = 0, calls = 0;
    bool any_tool = false, any_reward = false;
    for (const SampleSpan& sp : s.spans) {
      if (sp.end < sp.start || sp.start < 0) continue;
      if (sp.phase == "tool") {
        tool += sp.end - sp.start;
        ++calls;
        any_tool = true;
      } else if (sp.phase == "reward") {
        reward += sp.end - sp.start;
        any_reward = true;
      }
    }
    const auto u = uses.find(s.id);
    const SampleUse* use = u != uses.end() ? u->second : nullptr;
    const int64_t tpot = Tpot(s);
    Cell staleness;
    if (use != nullptr && use->version >= 0 && s.version_last >= 0) staleness = use->version - s.version_last;
    t.rows.push_back({it.input->name, it.input->analysis.rank, it.input->analysis.role, it.replica, s.id,
                      s.group.empty() ? Cell() : Cell(s.group), Count(s.step), Us(it.start - origin),
                      Span(s.queued, s.scheduled), Span(s.scheduled, s.first_token), Span(it.start, s.first_token),
                      Span(s.first_token, s.last_token), tpot >= 0 ? Cell(Us(tpot)) : Cell(), Span(it.start, it.end),
                      any_tool ? Cell(Us(tool)) : Cell(), any_reward ? Cell(Us(reward)) : Cell(),
                      Count(s.prompt_tokens), Count(s.completion_tokens), Count(s.cached_tokens),
                      s.finish_reason.empty() ? Cell() : Cell(s.finish_reason), Count(s.preemptions),
                      any_tool ? Cell(calls) : Cell(), Count(s.version_first), Count(s.version_last),
                      use != nullptr ? Cell(use->outcome) : Cell(), use != nullptr ? Count(use->step) : Cell(),
                      use != nullptr ? Count(use->version) : Cell(), staleness});
  }
  return t;
}

Table SampleTailTable(const std::vector<InputResult>& results) {
  Table t{"sample_tail",
          {Column{"step", ColumnType::kInt, ""}, Column{"replica", ColumnType::kText, ""},
           Column{"samples", ColumnType::kInt, ""}, Column{"generation", ColumnType::kReal, "us"},
           Column{"step_time", ColumnType::kReal, "us"}, Column{"p50", ColumnType::kReal, "us"},
           Column{"p90", ColumnType::kReal, "us"}, Column{"p95", ColumnType::kReal, "us"},
           Column{"p99", ColumnType::kReal, "us"}, Column{"p100", ColumnType::kReal, "us"},
           Column{"tail", ColumnType::kReal, "us"}, Column{"tail_share", ColumnType::kReal, "%"},
           Column{"tail_idle", ColumnType::kReal, "us"}, Column{"queue_p50", ColumnType::kReal, "us"},
           Column{"queue_p90", ColumnType::kReal, "us"}, Column{"ttft_p50", ColumnType::kReal, "us"},
           Column{"ttft_p90", ColumnType::kReal, "us"}, Column{"ttft_p99", ColumnType::kReal, "us"},
           Column{"tpot_p50", ColumnType::kReal, "us"}, Column{"tpot_p90", ColumnType::kReal, "us"},
           Column{"tokens", ColumnType::kInt, ""}, Column{"token_imbalance", ColumnType::kReal, ""},
           Column{"request_imbalance", ColumnType::kReal, ""}, Column{"preemptions", ColumnType::kInt, ""},
           Column{"p95_saves", ColumnType::kReal, "us"}, Column{"p95_oversample", ColumnType::kInt, ""},
           Column{"partial_saves", ColumnType::kReal, "us"}, Column{"partial_carried", ColumnType::kInt, ""},
           Column{"partial_carried_tokens", ColumnType::kInt, ""}},
          {}};
  const std::vector<Item> items = Collect(results);
  std::map<int64_t, std::vector<const Item*>> by_step;
  for (const Item& it : items) by_step[it.s.step].push_back(&it);
  for (const auto& entry : by_step) {
    const int64_t step = entry.first;  // (a lambda below uses it: not a structured binding)
    const std::vector<const Item*>& all = entry.second;
    // The step's span in the processes that made its samples.
    int64_t s0 = INT64_MAX, s1 = INT64_MIN, g0 = INT64_MAX, g1 = INT64_MIN;
    std::map<const InputResult*, bool> inputs;
    for (const Item* it : all) {
      inputs[it->input] = true;
      g0 = std::min(g0, it->start);
      g1 = std::max(g1, it->end);
    }
    for (const auto& [in, _] : inputs)
      for (const StepResult& sr : in->analysis.steps)
        if (sr.window.step == step && sr.window.host_end > sr.window.host_start) {
          s0 = std::min(s0, sr.window.host_start);
          s1 = std::max(s1, sr.window.host_end);
        }
    const int64_t step_time = s1 > s0 ? std::max(s1, g1) - std::min(s0, g0) : g1 - g0;
    std::vector<int64_t> ends;
    for (const Item* it : all) ends.push_back(it->end - g0);
    std::sort(ends.begin(), ends.end());
    const int64_t p90 = Rank(ends, 90), p100 = ends.back();
    // Per replica: its samples, busy intervals (scheduled, else submit, → end), tokens.
    std::map<int64_t, std::vector<const Item*>> by_replica;
    for (const Item* it : all) by_replica[it->replica].push_back(it);
    auto busy_of = [](const std::vector<const Item*>& v) {
      std::vector<std::pair<int64_t, int64_t>> b;
      for (const Item* it : v) b.emplace_back(it->s.scheduled >= 0 ? it->s.scheduled : it->start, it->end);
      return b;
    };
    auto tokens_of = [](const std::vector<const Item*>& v) {
      int64_t n = 0;
      for (const Item* it : v) n += std::max<int64_t>(it->s.completion_tokens, 0);
      return n;
    };
    double mean_tokens = 0, mean_requests = 0, max_tokens = 0, max_requests = 0;
    for (const auto& [rep, v] : by_replica) {
      const auto n = static_cast<double>(tokens_of(v));
      mean_tokens += n;
      mean_requests += static_cast<double>(v.size());
      max_tokens = std::max(max_tokens, n);
      max_requests = std::max(max_requests, static_cast<double>(v.size()));
    }
    const auto replicas = static_cast<double>(by_replica.size());
    mean_tokens /= replicas;
    mean_requests /= replicas;
    auto row = [&](const std::string& label, const std::vector<const Item*>& v, double token_ratio, double request_ratio,
                   int64_t tail_idle) {
      std::vector<int64_t> e, queue, ttft, tpot;
      int64_t tokens = 0, preempt = 0, carried = 0;
      double carried_tokens = 0;
      bool any_preempt = false;
      const int64_t cut = g0 + p90;
      for (const Item* it : v) {
        const SampleRecord& s = it->s;
        e.push_back(it->end - g0);
        if (s.queued >= 0 && s.scheduled >= s.queued) queue.push_back(s.scheduled - s.queued);
        if (s.first_token >= it->start) ttft.push_back(s.first_token - it->start);
        if (const int64_t tp = Tpot(s); tp >= 0) tpot.push_back(tp);
        tokens += std::max<int64_t>(s.completion_tokens, 0);
        if (s.preemptions >= 0) {
          preempt += s.preemptions;
          any_preempt = true;
        }
        if (it->end > cut) {
          ++carried;
          const int64_t from = s.first_token >= 0 ? s.first_token : it->start;
          if (s.completion_tokens > 0 && it->end > from)
            carried_tokens += static_cast<double>(s.completion_tokens) *
                              static_cast<double>(it->end - std::max(cut, from)) / static_cast<double>(it->end - from);
        }
      }
      std::sort(e.begin(), e.end());
      const int64_t n = static_cast<int64_t>(v.size());
      const int64_t r90 = Rank(e, 90), r95 = Rank(e, 95), r100 = e.back();
      const auto oversample = static_cast<int64_t>(std::ceil(static_cast<double>(n) / 0.95 - 1e-9)) - n;
      t.rows.push_back({step >= 0 ? Cell(step) : Cell(), label, n, Us(g1 - g0), Us(step_time), Us(Rank(e, 50)), Us(r90),
                        Us(r95), Us(Rank(e, 99)), Us(r100), Us(r100 - r90),
                        step_time > 0 ? Cell(100.0 * static_cast<double>(r100 - r90) / static_cast<double>(step_time)) : Cell(),
                        Us(tail_idle), Pct(queue, 50), Pct(queue, 90), Pct(ttft, 50), Pct(ttft, 90), Pct(ttft, 99),
                        Pct(tpot, 50), Pct(tpot, 90), tokens, token_ratio, request_ratio,
                        any_preempt ? Cell(preempt) : Cell(), Us(r100 - r95), oversample, Us(r100 - r90), carried,
                        static_cast<int64_t>(std::llround(carried_tokens))});
    };
    int64_t idle_all = 0;
    std::map<int64_t, int64_t> idle_of;
    for (const auto& [rep, v] : by_replica) {
      idle_of[rep] = IdleWithin(busy_of(v), g0 + p90, g0 + p100);
      idle_all += idle_of[rep];
    }
    row("all", all, mean_tokens > 0 ? max_tokens / mean_tokens : 0.0, mean_requests > 0 ? max_requests / mean_requests : 0.0,
        idle_all);
    if (by_replica.size() > 1)
      for (const auto& [rep, v] : by_replica)
        row(std::to_string(rep), v, mean_tokens > 0 ? static_cast<double>(tokens_of(v)) / mean_tokens : 0.0,
            mean_requests > 0 ? static_cast<double>(v.size()) / mean_requests : 0.0, idle_of[rep]);
  }
  return t;
}

Table SampleOutcomesTable(const std::vector<InputResult>& results) {
  Table t{"sample_outcomes",
          {Column{"kind", ColumnType::kText, ""}, Column{"value", ColumnType::kText, ""},
           Column{"samples", ColumnType::kInt, ""}, Column{"share", ColumnType::kReal, "%"}},
          {}};
  const std::vector<Item> items = Collect(results);
  const auto uses = LastUses(results);
  std::map<std::string, int64_t> outcomes;
  std::map<int64_t, int64_t> staleness;
  int64_t consumed_known = 0;
  for (const Item& it : items) {
    const auto u = uses.find(it.s.id);
    if (u == uses.end()) {
      ++outcomes["unused"];
      continue;
    }
    ++outcomes[u->second->outcome];
    if (u->second->outcome == "consumed" && u->second->version >= 0 && it.s.version_last >= 0) {
      ++staleness[u->second->version - it.s.version_last];
      ++consumed_known;
    }
  }
  const auto n = static_cast<double>(items.size());
  for (const auto& [o, c] : outcomes) t.rows.push_back({"outcome", o, c, n > 0 ? Cell(100.0 * static_cast<double>(c) / n) : Cell()});
  for (const auto& [s, c] : staleness)
    t.rows.push_back({"staleness", std::to_string(s), c, 100.0 * static_cast<double>(c) / static_cast<double>(consumed_known)});
  return t;
}

}  // namespace rlprof::analysis
