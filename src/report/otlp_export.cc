#include "src/report/otlp_export.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/analysis/run/samples_run.h"
#include "src/base/version.h"

namespace rlprof::report {
namespace {

using analysis::InputResult;
using analysis::SampleRecord;
using analysis::SampleUse;
using json = nlohmann::ordered_json;

uint64_t Fnv(const std::string& s, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string Hex(uint64_t v) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
  return b;
}

// Ids: never all zero (OTLP's "invalid" id).
std::string SpanId(const std::string& key) {
  const uint64_t h = Fnv(key);
  return Hex(h != 0 ? h : 1);
}
std::string TraceId(const std::string& key) { return Hex(Fnv(key + "#hi")) + Hex(Fnv(key + "#lo") | 1); }

json Str(const std::string& k, const std::string& v) { return {{"key", k}, {"value", {{"stringValue", v}}}}; }
json Int(const std::string& k, int64_t v) { return {{"key", k}, {"value", {{"intValue", std::to_string(v)}}}}; }
json Dbl(const std::string& k, double v) { return {{"key", k}, {"value", {{"doubleValue", v}}}}; }
json StrArray(const std::string& k, const std::vector<std::string>& v) {
  json values = json::array();
  for (const auto& s : v) values.push_back({{"stringValue", s}});
  return {{"key", k}, {"value", {{"arrayValue", {{"values", values}}}}}};
}

class Builder {
 public:
  Builder(const analysis::RunAnalysis& run, std::string run_name, OtlpStats* st)
      : run_(run), name_(std::move(run_name)), st_(st) {}

  std::string Build() {
    uses_ = analysis::LastUses(run_.inputs);  // what became of each sample (any process)
    // The steps: every process's window of it, joined.
    for (const InputResult& r : run_.inputs) {
      if (!r.status.ok()) continue;
      const int64_t off = Offset(r);
      for (const auto& s : r.analysis.steps) {
        auto& w = steps_.try_emplace(s.window.step, INT64_MAX, INT64_MIN).first->second;
        w.first = std::min(w.first, s.window.host_start + off);
        w.second = std::max(w.second, s.window.host_end + off);
      }
    }
    // A step no window spans (samples outside every step: step -1) spans its samples, and a
    // step's span holds all of its samples.
    for (const InputResult& r : run_.inputs) {
      if (!r.status.ok()) continue;
      const int64_t off = Offset(r);
      for (const SampleRecord& s : r.analysis.samples) {
        auto& w = steps_.try_emplace(s.step, INT64_MAX, INT64_MIN).first->second;
        w.first = std::min(w.first, Start(s) + off);
        w.second = std::max(w.second, End(s) + off);
      }
    }
    json resources = json::array();
    // The run's resource: the step spans.
    json step_spans = json::array();
    for (const auto& [step, w] : steps_) {
      if (w.first == INT64_MAX) continue;
      json attrs = json::array({Int("rl.step", step)});
      step_spans.push_back(Span(TraceOf(step), StepSpan(step), "", "rl.step " + std::to_string(step), w.first,
                                w.second, std::move(attrs)));
      ++st_->traces;
    }
    resources.push_back(Resource({Str("service.name", "rlprof"), Str("service.instance.id", name_),
                                  Str("rl.run", name_)},
                                 std::move(step_spans)));
    for (const InputResult& r : run_.inputs)
      if (r.status.ok()) resources.push_back(Process(r));
    json out = {{"resourceSpans", std::move(resources)}};
    return out.dump(-1, ' ', false, json::error_handler_t::replace);
  }

 private:
  int64_t Offset(const InputResult& r) const {
    return r.analysis.wall_offset_ns != INT64_MIN ? r.analysis.wall_offset_ns : 0;
  }
  // A sample's span (analysis::SampleStart / SampleEnd), never before time 0.
  static int64_t Start(const SampleRecord& s) { return std::max<int64_t>(analysis::SampleStart(s), 0); }
  static int64_t End(const SampleRecord& s) { return std::max(analysis::SampleEnd(s), Start(s)); }
  std::string TraceOf(int64_t step) const { return TraceId(name_ + "|step|" + std::to_string(step)); }
  std::string StepSpan(int64_t step) const { return SpanId(name_ + "|step|" + std::to_string(step)); }

  json Span(const std::string& trace, const std::string& id, const std::string& parent, const std::string& name,
            int64_t t0, int64_t t1, json attrs) {
    ++st_->spans;
    json s = {{"traceId", trace}, {"spanId", id}};
    if (!parent.empty()) s["parentSpanId"] = parent;
    s["name"] = name;
    s["kind"] = 1;  // SPAN_KIND_INTERNAL
    s["startTimeUnixNano"] = std::to_string(std::max<int64_t>(t0, 0));
    s["endTimeUnixNano"] = std::to_string(std::max<int64_t>(std::max(t1, t0), 0));
    s["attributes"] = std::move(attrs);
    return s;
  }

  json Resource(json attrs, json spans) {
    return {{"resource", {{"attributes", std::move(attrs)}}},
            {"scopeSpans", json::array({{{"scope", {{"name", "rlprof"}, {"version", base::Version()}}},
                                         {"spans", std::move(spans)}}})}};
  }

  json Process(const InputResult& r) {
    const auto& a = r.analysis;
    const int64_t off = Offset(r);
    const bool anchored = a.wall_offset_ns != INT64_MIN;
    json spans = json::array();
    const std::string key = name_ + "|" + r.name;
    // Stages, under their step.
    struct StageRef {
      int64_t start, end;
      std::string id;
    };
    std::map<int64_t, std::vector<StageRef>> stages;  // step → its stages here
    size_t k = 0;
    for (const auto& s : a.stages) {
      ++k;
      if (s.name == "(none)" || s.end <= s.start) continue;
      const std::string id = SpanId(key + "|stage|" + std::to_string(k));
      stages[s.step].push_back({s.start, s.end, id});
      json attrs = json::array({Str("rl.stage", s.name), Str("rl.role", s.role), Int("rl.rank", a.rank),
                                Int("rl.step", s.step)});
      spans.push_back(Span(TraceOf(s.step), id, steps_.count(s.step) ? StepSpan(s.step) : "", s.name, s.start + off,
                           s.end + off, std::move(attrs)));
      ++st_->stages;
      if (!anchored) ++st_->unanchored_spans;
    }
    for (const SampleRecord& s : a.samples) {
      const int64_t t0 = Start(s), t1 = End(s);
      std::string parent = StepSpan(s.step);
      for (const StageRef& g : stages[s.step])
        if (g.start <= t0 && t0 <= g.end) parent = g.id;
      const std::string id = SpanId(key + "|sample|" + s.id);
      const std::string trace = TraceOf(s.step);
      json attrs = json::array({Str("gen_ai.response.id", s.id), Str("rl.sample.id", s.id), Int("rl.step", s.step),
                                Int("rl.rank", a.rank), Str("rl.role", a.role),
                                Int("rl.replica", s.replica >= 0 ? s.replica : std::max<int64_t>(a.rank, 0))});
      if (!s.group.empty()) attrs.push_back(Str("rl.sample.group", s.group));
      if (s.prompt_tokens >= 0) attrs.push_back(Int("gen_ai.usage.input_tokens", s.prompt_tokens));
      if (s.completion_tokens >= 0) attrs.push_back(Int("gen_ai.usage.output_tokens", s.completion_tokens));
      if (s.cached_tokens >= 0) attrs.push_back(Int("gen_ai.usage.cache_read.input_tokens", s.cached_tokens));
      if (!s.finish_reason.empty()) attrs.push_back(StrArray("gen_ai.response.finish_reasons", {s.finish_reason}));
      if (s.preemptions >= 0) attrs.push_back(Int("rl.sample.preemptions", s.preemptions));
      if (s.version_first >= 0) attrs.push_back(Int("rl.weight_version.first", s.version_first));
      if (s.version_last >= 0) attrs.push_back(Int("rl.weight_version.last", s.version_last));
      if (s.first_token >= 0 && s.first_token >= t0) attrs.push_back(Dbl("rl.sample.ttft_s", (s.first_token - t0) / 1e9));
      if (auto u = uses_.find(s.id); u != uses_.end()) {
        const SampleUse& use = *u->second;
        attrs.push_back(Str("rl.sample.outcome", use.outcome));
        if (use.step >= 0) attrs.push_back(Int("rl.sample.used_step", use.step));
        if (use.version >= 0) attrs.push_back(Int("rl.sample.used_version", use.version));
        if (use.version >= 0 && s.version_last >= 0) attrs.push_back(Int("rl.sample.staleness", use.version - s.version_last));
      }
      spans.push_back(Span(trace, id, parent, "rl.sample", t0 + off, t1 + off, std::move(attrs)));
      ++st_->samples;
      // Its phases.
      auto phase = [&](const std::string& name, int64_t p0, int64_t p1, json extra) {
        if (p0 < 0 || p1 < p0) return;
        spans.push_back(Span(trace, SpanId(key + "|sample|" + s.id + "|" + name + "|" + std::to_string(p0)), id, name,
                             p0 + off, p1 + off, std::move(extra)));
      };
      phase("queue", s.queued, s.scheduled, json::array());
      phase("prefill", s.scheduled, s.first_token, json::array());
      phase("decode", s.first_token, s.last_token, json::array());
      for (const auto& sp : s.spans) {
        json extra = json::array({Str("rl.sample.phase", sp.phase)});
        if (!sp.label.empty()) extra.push_back(Str(sp.phase == "tool" ? "gen_ai.tool.name" : "rl.sample.label", sp.label));
        phase(sp.phase, sp.start, sp.end, std::move(extra));
      }
      if (!anchored) ++st_->unanchored_spans;
    }
    json res = json::array({Str("service.name", "rlprof"), Str("service.instance.id", r.name), Str("rl.run", name_),
                            Str("rl.role", a.role), Int("rl.rank", a.rank)});
    if (!a.host.empty()) res.push_back(Str("host.name", a.host));
    if (a.pid >= 0) res.push_back(Int("process.pid", a.pid));
    return Resource(std::move(res), std::move(spans));
  }

  const analysis::RunAnalysis& run_;
  const std::string name_;
  OtlpStats* st_;
  std::unordered_map<std::string, const SampleUse*> uses_;
  std::map<int64_t, std::pair<int64_t, int64_t>> steps_;  // step → (start, end), wall ns
};

}  // namespace

std::string OtlpJson(const analysis::RunAnalysis& run, const std::string& run_name, OtlpStats* stats) {
  OtlpStats local;
  OtlpStats* st = stats != nullptr ? stats : &local;
  *st = {};
  return Builder(run, run_name, st).Build();
}

}  // namespace rlprof::report
