// The advisor's engine: the catalogue, the context the rules share, ranking and the outputs.
#include "src/analysis/advise/advise.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <variant>

#include "src/analysis/advise/rules.h"
#include "src/config/stages.h"

namespace rlprof::analysis {
namespace {

// What a rule needs from the capture (run.missing_data names what to turn on when it is absent).
enum class Needs { kNothing, kSamples, kRanks, kStages, kDevice, kMemory };

struct Entry {
  RuleSpec spec;
  advise::Rule fn;
  Needs needs = Needs::kNothing;
};

// The catalogue: every rule, in the order docs/advise.md lists them.
constexpr Entry kRules[] = {
    {{"rl.generation_tail", "rl",
      "a step waiting for its slowest samples: the last tenth of the generation's samples ends long after the rest "
      "(sample_tail)",
      "p100 − p95 of the samples' ends per step (stop at p95: over-sample by ⌈n/0.95⌉ − n and drop the slowest), "
      "mean over the steps",
      "sample records (rlprof's vLLM source under verl; rlprof.sample elsewhere)",
      "over-sample and drop the slowest (verl: raise `actor_rollout_ref.rollout.n` or `data.train_batch_size` and "
      "filter, DAPO-style), cap `data.max_response_length`, or carry unfinished samples over (verl fully_async: "
      "`async_training.partial_rollout=True`)"},
     advise::GenerationTail, Needs::kSamples},
    {{"rl.straggler_rank", "rl",
      "one rank slower than its peers in most stages it shares with them (run view)",
      "Σ over that rank's stages of (its time − the median of the other ranks), per step",
      "two or more ranks of a role in the capture (`all_ranks` / `ranks`)",
      "look at that rank's host and device (thermal throttling, a noisy neighbour, a slower link); `rlprof cluster` "
      "compares its collectives; move or exclude the node"},
     advise::StragglerRank, Needs::kRanks},
    {{"rl.dp_imbalance", "rl",
      "data-parallel ranks finishing a stage at different times, the slowest rank changing from step to step (uneven "
      "sequence lengths)",
      "Σ over the stages of (the slowest rank − the mean rank), per step (a perfect balance's saving)",
      "two or more ranks of a role in the capture",
      "balance the tokens, not the samples (verl: `trainer.balance_batch=True`, "
      "`actor_rollout_ref.actor.use_dynamic_bsz=True` with `ppo_max_token_len_per_gpu`)"},
     advise::DpImbalance, Needs::kRanks},
    {{"rl.stage_gaps", "rl",
      "time in a step when no process is in any stage: the driver's or a colocated worker's own work between "
      "stages (not in async runs, whose waits async_pools splits by cause)",
      "Σ of the step's time that no stage of any process covers (stages joined on rank 0's clock), mean over the "
      "steps",
      "the stages of a step (any capture with stages)",
      "find what runs between the stages (the controller's data preparation, metrics, `balance_batch`, a reward "
      "computed on the driver): move it off the critical path or into a stage (verl: `reward.num_workers` for "
      "streamed reward)"},
     advise::StageGaps, Needs::kStages},
    {{"rl.weight_sync", "rl",
      "the weight sync exposed on the step's critical path (colocated: its stage; async: sync time with neither "
      "pool busy)",
      "colocated: the slowest rank's weight_sync per step; async: async_verdict's exposed_sync / trainer steps",
      "the weight_sync stage (verl's update_weights timer) or rlprof.rl's sync facts",
      "larger buckets and a faster backend (verl: "
      "`actor_rollout_ref.rollout.checkpoint_engine.update_weights_bucket_megabytes`, `checkpoint_engine.backend`), "
      "fewer syncs in async runs (`async_training.trigger_parameter_sync_step`)"},
     advise::WeightSync, Needs::kStages},
    {{"rl.async_balance", "rl",
      "an async run whose generating and training pools are out of balance: one waits for the other "
      "(async_verdict)",
      "the step time × (1 − capacity now / capacity with one process moved to the bound pool)",
      "rlprof.rl's facts in both pools (verl's fully_async / one-step-off hooks; rlprof.rl elsewhere)",
      "move a device from the idle pool to the bound one (verl fully_async: `rollout.n_gpus_per_node` / "
      "`trainer.n_gpus_per_node`, `rollout.nnodes` / `trainer.nnodes`), or raise `async_training.staleness_threshold`"},
     advise::AsyncBalance},
    {{"rl.colocated_rollout", "rl",
      "generation and training running one after the other in a colocated run (informational: the share of each)",
      "min(generation, the rest of the step) per step: what overlapping them (one-step-off) could hide at most",
      "the rollout stage in the capture",
      "if the rollout dominates, consider verl's one_step_off_policy or fully_async recipes (separate pools, "
      "generation overlapped with training)"},
     advise::ColocatedRollout, Needs::kStages},
    {{"rl.logprob_recompute", "rl",
      "the old policy's log-probs recomputed by the actor (actor_compute_log_prob) although the rollout can return "
      "them",
      "the slowest rank's actor_compute_log_prob per step (the controller's, dispatch included, where it recorded one)",
      "the actor_compute_log_prob stage (verl's old_log_prob timer)",
      "when training is on-policy (one PPO epoch, the rollout's numerics close to the trainer's), use the rollout's "
      "log-probs (verl: `algorithm.rollout_correction.bypass_mode=true` with "
      "`actor_rollout_ref.rollout.calculate_log_probs=True`)"},
     advise::LogProbRecompute, Needs::kStages},
    {{"device.comm_exposed", "device",
      "collective communication not overlapped with computation (comm_by_group)",
      "the largest rank's Σ comm_not_overlapped per step (the most overlapping could hide)",
      "device activity with communication kernels (`contents: [..., device]`)",
      "overlap communication with compute (FSDP: `actor_rollout_ref.actor.fsdp_config.forward_prefetch=True`; "
      "Megatron: `overlap_grad_reduce`, `overlap_param_gather`), or fewer, larger collectives"},
     advise::CommExposed, Needs::kDevice},
    {{"device.host_sync", "device",
      "the host waiting for the device in the loop: `.item()`, `aten::_local_scalar_dense`, "
      "cudaStreamSynchronize / cudaDeviceSynchronize / cudaEventSynchronize",
      "Σ of those operators' time per step on the largest rank",
      "host operators (`contents: [cpu, ops]`) in a run with device work",
      "keep values on the device (log them every N steps, or gather them once per step); `rlprof summary --view "
      "stack` shows the line that calls them"},
     advise::HostSync, Needs::kDevice},
    {{"device.launch_bound", "device",
      "the device idle most of the step while the host launches many short kernels",
      "HTA's host-wait idle per step (the device idle waiting for the host), on the largest rank",
      "device activity (`contents: [..., device]`)",
      "fewer, larger kernels: CUDA graphs (verl rollout: `enforce_eager=False`), torch.compile "
      "(`actor_rollout_ref.actor.use_torch_compile=True`), larger micro-batches (`ppo_micro_batch_size_per_gpu`)"},
     advise::LaunchBound, Needs::kDevice},
    {{"device.memcpy_exposed", "device",
      "host↔device copies not overlapped with computation (TraceLens exposed_memcpy)",
      "exposed memcpy time per step, the largest rank",
      "device activity with memcpy records",
      "pin host memory and copy asynchronously; avoid `.cpu()` / `.to(device)` in the loop; offloading "
      "(`param_offload`, `optimizer_offload`) trades these copies for memory"},
     advise::MemcpyExposed, Needs::kDevice},
    {{"device.memory", "device",
      "memory close to capacity at a stage's peak (≥ 90 % of the device's memory; the host's or its cgroup's "
      "limit for the RSS), and out-of-memory errors with the allocator snapshot rlprof wrote at each",
      "the allocator's calls into the driver (cudaMalloc / cudaFree …) per step on the fullest device: what a "
      "caching allocator with room to spare would not pay; none for an out-of-memory error (high whatever the "
      "saving) or without such calls (low from 90 %, medium from 95 %)",
      "`contents: [..., memory]` (allocator counters, RSS and capacities; on CUDA the allocator snapshot at an "
      "out-of-memory error); torch.profiler traces with `profile_memory=True`",
      "lower the peak in the stage named: verl `actor_rollout_ref.rollout.gpu_memory_utilization` (vLLM's KV "
      "cache), `ppo_micro_batch_size_per_gpu` or `use_dynamic_bsz=True` with a lower `ppo_max_token_len_per_gpu`, "
      "`actor_rollout_ref.model.enable_gradient_checkpointing=True`, `fsdp_config.param_offload` / "
      "`optimizer_offload`; when reserved ≫ allocated (fragmentation) "
      "`PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`"},
     advise::Memory, Needs::kMemory},
    {{"run.regression", "run",
      "a step or stage slower than in the baseline run (`--baseline`)",
      "mean step time − the baseline's (the stage that grew most named)",
      "a baseline run of the same job",
      "look at what changed between the runs (config, code, versions); `rlprof compare` has the tables"},
     advise::StepRegression},
    {{"run.missing_data", "run",
      "rules that had nothing to look at in this capture (informational: what to turn on for them)",
      "none (info)",
      "nothing",
      "turn on what the finding names for the rules it lists, in the next capture"},
     advise::MissingData},
};

// Evidence naming a step and a stage (and maybe a rank) but no place gets the place of that
// stage in the inputs (the longest such stage when several processes ran it): a click in the
// report zooms the timeline there.
void PlaceEvidence(const std::vector<InputResult>& inputs, std::vector<Finding>* findings) {
  for (Finding& f : *findings)
    for (Evidence& e : f.evidence) {
      if (e.start_ns >= 0 || e.step < 0 || e.stage.empty()) continue;
      const size_t slash = e.stage.find('/');
      const std::string role = slash == std::string::npos ? "" : e.stage.substr(0, slash);
      const std::string stage = slash == std::string::npos ? e.stage : e.stage.substr(slash + 1);
      int64_t best = -1;
      for (const InputResult& r : inputs) {
        if (!r.status.ok() || (e.rank >= 0 && r.analysis.rank != e.rank)) continue;
        for (const StageResult& s : r.analysis.stages)
          if (s.step == e.step && (role.empty() || s.role == role) && config::SameStage(s.name, stage) &&
              s.end - s.start > best) {
            best = s.end - s.start;
            e.start_ns = s.start, e.end_ns = s.end;
          }
      }
    }
}

std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

}  // namespace

const char* SeverityName(Severity s) {
  switch (s) {
    case Severity::kHigh: return "high";
    case Severity::kMedium: return "medium";
    case Severity::kLow: return "low";
    case Severity::kInfo: break;
  }
  return "info";
}

std::span<const RuleSpec> RuleCatalogue() {
  static const std::vector<RuleSpec> specs = [] {
    std::vector<RuleSpec> v;
    for (const Entry& e : kRules) v.push_back(e.spec);
    return v;
  }();
  return specs;
}

std::string RuleCatalogueMarkdown() {
  std::string md = "| rule | level | looks for | saving per step | needs | action |\n|---|---|---|---|---|---|\n";
  for (const RuleSpec& r : RuleCatalogue())
    md += std::string("| `") + r.id + "` | " + r.level + " | " + r.looks_for + " | " + r.saving + " | " + r.needs +
          " | " + r.action + " |\n";
  return md;
}

std::string DurationText(double ns) { return advise::Duration(ns); }

Severity SeverityOf(double saving_ns, double step_ns) {
  if (!(saving_ns > 0) || !(step_ns > 0)) return Severity::kInfo;
  const double share = saving_ns / step_ns;
  if (share >= 0.10) return Severity::kHigh;
  if (share >= 0.03) return Severity::kMedium;
  if (share >= 0.01) return Severity::kLow;
  return Severity::kInfo;
}

Advice Advise(const std::vector<InputResult>& inputs, const RunView& view,
             const std::vector<InputResult>* base_inputs, const RunView* base_view) {
  const advise::Context c = advise::MakeContext(inputs, view, base_inputs, base_view);
  Advice a;
  a.steps = c.steps;
  a.step_ns = c.mean_step_ns;
  for (const Entry& e : kRules) {
    a.rules_run.push_back(e.spec.id);
    e.fn(c, &a.findings);
  }
  PlaceEvidence(inputs, &a.findings);
  // A finding whose saving is under 0.1 % of the step says nothing worth reading (unless its rule
  // states it whatever its saving: Finding::stated).
  std::erase_if(a.findings, [&](const Finding& f) {
    return !f.stated && c.mean_step_ns > 0 && f.saving_ns < 1e-3 * c.mean_step_ns && !f.regression;
  });
  std::stable_sort(a.findings.begin(), a.findings.end(), [](const Finding& x, const Finding& y) {
    if (x.failure != y.failure) return x.failure;
    if (x.severity != y.severity) return x.severity > y.severity;
    if (x.saving_ns != y.saving_ns) return x.saving_ns > y.saving_ns;
    return x.id < y.id;
  });
  return a;
}

Table FindingsTable(const Advice& a) {
  Table t{"findings",
          {Column{"rank", ColumnType::kInt, ""}, Column{"id", ColumnType::kText, ""},
           Column{"severity", ColumnType::kText, ""}, Column{"saving", ColumnType::kReal, "us"},
           Column{"share", ColumnType::kReal, "%"}, Column{"title", ColumnType::kText, ""},
           Column{"action", ColumnType::kText, ""}, Column{"how", ColumnType::kText, ""},
           Column{"evidence", ColumnType::kText, ""}, Column{"regression", ColumnType::kInt, ""}},
          {}};
  int64_t rank = 0;
  for (const Finding& f : a.findings) {
    std::string ev;
    for (size_t i = 0; i < f.evidence.size() && i < 3; ++i) ev += (i ? "; " : "") + f.evidence[i].what;
    if (f.evidence.size() > 3) ev += "; … (" + std::to_string(f.evidence.size() - 3) + " more)";
    t.rows.push_back({++rank, f.id, SeverityName(f.severity), f.saving_ns > 0 ? Cell(f.saving_ns / 1e3) : Cell(),
                      f.saving_ns > 0 && f.step_ns > 0 ? Cell(100.0 * f.saving_ns / f.step_ns) : Cell(), f.title,
                      f.action, f.how, ev, static_cast<int64_t>(f.regression)});
  }
  return t;
}

nlohmann::json AdviceJson(const Advice& a) {
  using nlohmann::json;
  auto us = [](double ns) -> json { return std::isfinite(ns) ? json(std::round(ns / 100.0) / 10.0) : json(nullptr); };
  json rules = json::array(), findings = json::array();
  for (const auto& r : a.rules_run) rules.push_back(r);
  int64_t rank = 0;
  for (const Finding& f : a.findings) {
    json ev = json::array();
    for (const Evidence& e : f.evidence)
      ev.push_back({{"what", e.what},
                    {"step", e.step >= 0 ? json(e.step) : json(nullptr)},
                    {"rank", e.rank >= 0 ? json(e.rank) : json(nullptr)},
                    {"stage", e.stage.empty() ? json(nullptr) : json(e.stage)},
                    {"start_us", e.start_ns >= 0 ? us(static_cast<double>(e.start_ns)) : json(nullptr)},
                    {"end_us", e.end_ns >= 0 ? us(static_cast<double>(e.end_ns)) : json(nullptr)}});
    findings.push_back({{"rank", ++rank},
                        {"id", f.id},
                        {"severity", SeverityName(f.severity)},
                        {"regression", f.regression},
                        {"title", f.title},
                        {"saving_us_per_step", f.saving_ns > 0 ? us(f.saving_ns) : json(nullptr)},
                        {"share_pct", f.saving_ns > 0 && f.step_ns > 0
                                          ? json(std::round(1000.0 * f.saving_ns / f.step_ns) / 10.0)
                                          : json(nullptr)},
                        {"how", f.how},
                        {"action", f.action},
                        {"evidence", std::move(ev)}});
  }
  return {{"schema", 1},
          {"steps", a.steps},
          {"step_us", a.step_ns > 0 ? us(a.step_ns) : json(nullptr)},
          {"rules", std::move(rules)},
          {"findings", std::move(findings)}};
}

namespace advise {

std::map<int64_t, int64_t> StepTimes(const RunView& v) {
  std::map<int64_t, int64_t> window, span;
  for (const RunViewRow& r : v.rows) {
    if (r.kind != RunViewKind::kStepWindow && r.kind != RunViewKind::kStageSpan) continue;
    auto& m = r.kind == RunViewKind::kStepWindow ? window : span;
    for (const auto& x : r.per_lane)
      if (x) m[r.step] = std::max(m[r.step], *x);
  }
  for (const auto& [step, ns] : span) window.try_emplace(step, ns);
  return window;
}

Context MakeContext(const std::vector<InputResult>& inputs, const RunView& view,
                    const std::vector<InputResult>* base_inputs, const RunView* base_view) {
  Context c{inputs, view, base_inputs, base_view, StepTimes(view), 0, 0};
  c.steps = static_cast<int64_t>(c.step_ns.size());
  double sum = 0;
  for (const auto& [step, ns] : c.step_ns) sum += static_cast<double>(ns);
  if (!c.step_ns.empty()) {
    c.mean_step_ns = sum / static_cast<double>(c.step_ns.size());
    return c;
  }
  // No step in the run view (a trace without stages): the inputs' own step windows (a trace
  // without step markers is one step), the longest of each step.
  std::map<int64_t, int64_t> own;
  for (const InputResult& r : inputs)
    if (r.status.ok())
      for (const StepResult& s : r.analysis.steps)
        own[s.window.step] = std::max(own[s.window.step], s.window.host_end - s.window.host_start);
  for (const auto& [step, ns] : own) sum += static_cast<double>(ns);
  if (!own.empty()) c.mean_step_ns = sum / static_cast<double>(own.size());
  c.steps = static_cast<int64_t>(own.size());
  return c;
}

std::optional<double> Num(const Table& t, size_t row, const std::string& column) {
  for (size_t i = 0; i < t.columns.size(); ++i) {
    if (t.columns[i].name != column) continue;
    const Cell& cell = t.rows.at(row).at(i);
    if (const auto* d = std::get_if<double>(&cell)) return *d;
    if (const auto* n = std::get_if<int64_t>(&cell)) return static_cast<double>(*n);
    return std::nullopt;
  }
  return std::nullopt;
}

std::string Text(const Table& t, size_t row, const std::string& column) {
  for (size_t i = 0; i < t.columns.size(); ++i)
    if (t.columns[i].name == column)
      if (const auto* s = std::get_if<std::string>(&t.rows.at(row).at(i))) return *s;
  return "";
}

std::string Duration(double ns) {
  const double a = std::fabs(ns);
  if (a >= 1e9) return Fixed(ns / 1e9, 2) + " s";
  if (a >= 1e6) return Fixed(ns / 1e6, 1) + " ms";
  return Fixed(ns / 1e3, 0) + " µs";
}

void MissingData(const Context& c, std::vector<Finding>* out) {
  bool samples = false, stages = false, device = false, memory = false;
  for (const InputResult& r : c.inputs) {
    if (!r.status.ok()) continue;
    samples |= !r.analysis.samples.empty();
    device |= !r.analysis.cpu_only && !r.analysis.kernels.empty();
    memory |= !r.analysis.memory_peaks.empty() || !r.analysis.out_of_memory.empty();
    for (const StageResult& s : r.analysis.stages) stages |= s.name != "(none)";
  }
  const bool ranks = c.view.lanes.size() >= 2;
  struct Want {
    Needs needs;
    bool have;
    const char* what;
  };
  const Want wants[] = {
      {Needs::kSamples, samples, "sample records (verl's rollout under `tool: rlprof`; rlprof.sample elsewhere)"},
      {Needs::kRanks, ranks, "two or more ranks of a role (`all_ranks: true` or `ranks: [...]`)"},
      {Needs::kStages, stages, "stages (verl's timers under `tool: rlprof`; rlprof.stage elsewhere)"},
      {Needs::kDevice, device, "device activity (`contents: [..., device]`, on a GPU or NPU)"},
      {Needs::kMemory, memory, "memory (`contents: [..., memory]`)"},
  };
  Finding f = MakeFinding("run.missing_data", 0, c.mean_step_ns);
  f.stated = true;
  std::vector<std::string> rules;
  for (const Want& w : wants) {
    if (w.have) continue;
    std::string ids;
    for (const Entry& e : kRules)
      if (e.needs == w.needs) {
        ids += (ids.empty() ? "" : ", ") + std::string(e.spec.id);
        rules.push_back(e.spec.id);
      }
    f.evidence.push_back({std::string(w.what) + ": " + ids});
  }
  if (rules.empty()) return;
  f.title = std::to_string(rules.size()) + " rules had nothing to look at: turn on what the evidence names";
  f.how = "none (info): the capture lacks what these rules read";
  out->push_back(std::move(f));
}

Finding MakeFinding(const char* id, double saving_ns, double step_ns) {
  Finding f;
  f.id = id;
  f.saving_ns = saving_ns > 0 ? saving_ns : 0;
  f.step_ns = step_ns;
  f.severity = SeverityOf(f.saving_ns, step_ns);
  for (const Entry& e : kRules)
    if (std::string(e.spec.id) == id) f.action = e.spec.action;
  return f;
}

}  // namespace advise
}  // namespace rlprof::analysis
