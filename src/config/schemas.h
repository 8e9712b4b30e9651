// The config dialects rlprof reads (internal to src/config). Each Parse* fills a Plan from a
// loaded Doc, reporting problems into the Doc; loader.cc picks the dialect and validates the
// result as a whole. Vocabularies are shared so every dialect accepts the same words.
#ifndef RLPROF_SRC_CONFIG_SCHEMAS_H_
#define RLPROF_SRC_CONFIG_SCHEMAS_H_

#include <optional>
#include <string>
#include <vector>

#include "rlprof/config/plan.h"
#include "src/config/reader.h"

namespace rlprof::config {

// Vocabularies (docs/config.md lists them).
const std::vector<std::string>& KnownTools();     // nsys npu torch torch_memory precision_debugger rlprof
const std::vector<std::string>& KnownLevels();    // level_none level0 level1 level2
const std::vector<std::string>& KnownStages();    // verl + MindSpeed-RL + rlprof stage names
const std::vector<std::string>& NativeContents(); // cpu device ops shapes memory stack module
const std::vector<std::string>& ScheduleUnits();  // step decode micro_batch mini_batch

// The stage names a role runs by default (used to enumerate discrete captures).
std::vector<std::string> DefaultStagesOfRole(const std::string& role, Dialect dialect);

struct ParseContext {
  Doc& doc;
  Reader& rd;
  Plan& plan;
  std::vector<std::string> stage_vocabulary;  // KnownStages() + custom_stages
};

// rlprof's global extras (export, combine, budget, buffer, flush_interval_s, backstop_s,
// custom_stages) from `block` (native top level, verl global_tool_config.rlprof, MindSpeed
// profiler_config.rlprof). `extra_allowed` are keys the caller reads itself.
void ParseRlprofGlobals(ParseContext& ctx, const Ref& block,
                        const std::vector<std::string>& extra_allowed);
// A schedule mapping {unit?, stage?, skip_first, wait, warmup, active, repeat}. `unit` and
// `stage` are rlprof's keys (allow_rlprof_keys); `stage` is checked against the vocabulary.
std::optional<Schedule> ParseSchedule(ParseContext& ctx, const Ref& block, bool allow_rlprof_keys,
                                      SubStepKind default_unit);
// `schedule:` as one mapping or (rlprof blocks) a list of mappings, one per sampled stage.
// Disabled entries (active 0) are dropped; two entries for one stage (or two role-wide
// entries of one unit) are an error.
std::optional<std::vector<Schedule>> ParseSchedules(ParseContext& ctx, const Ref& r,
                                                    bool allow_rlprof_keys,
                                                    SubStepKind default_unit);
// steps: list | null | "all" | {start, end}.
StepSelection ParseSteps(ParseContext& ctx, const Ref& r);
// A stage allow-list (string or list of strings) checked against the vocabulary.
std::optional<std::vector<std::string>> ParseStages(ParseContext& ctx, const Ref& block,
                                                    const std::string& key);
// tool_config.rlprof (also the per-role block of the native dialect, minus rank keys).
struct RlprofRoleExtras {
  std::optional<bool> discrete;
  std::optional<std::vector<std::string>> contents;
  std::optional<std::string> level;
  std::optional<std::vector<std::string>> stages;
  std::optional<std::vector<Schedule>> schedules;
  std::optional<int64_t> token_start, token_end;
  std::optional<double> ops_sampling;  // (0, 1]
};
RlprofRoleExtras ParseRlprofRoleExtras(ParseContext& ctx, const Ref& block,
                                       const std::vector<std::string>& extra_allowed);
Contents NativeContentsFrom(const std::vector<std::string>& words);

// Reports role blocks verl never reads: `actor_rollout_ref.<x>.profiler` or `<x>.profiler`
// whose name is a misspelt role (an error with "did you mean"; other names are warned about
// and ignored) and keys near `profiler` under the given role parents.
void CheckVerlRoleBlockNames(ParseContext& ctx, const std::vector<KeyPath>& role_parents);

void ParseVerlGen3(ParseContext& ctx);
void ParseVerlLegacy(ParseContext& ctx);  // Gen 1 and Gen 2
void ParseMindSpeed(ParseContext& ctx);
void ParseNative(ParseContext& ctx);

// After parsing: stage names (allow-lists, schedules) in their canonical form (stages.h), and
// plan warnings for stages no known annotation emits in the config's framework.
void NormaliseStages(Plan& plan, const std::vector<std::string>& custom_stages);

}  // namespace rlprof::config

#endif  // RLPROF_SRC_CONFIG_SCHEMAS_H_
