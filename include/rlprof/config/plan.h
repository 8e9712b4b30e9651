// The capture Plan: what rlprof will capture, resolved from a verl, MindSpeed-RL or native
// YAML config (see docs/config.md). The runtime consumes it; `rlprof plan` prints it.
//
//   auto plan = rlprof::config::LoadPlan("ppo_trainer.yaml", {"global_profiler.steps=[2]"}, opts);
//   if (!plan.ok()) { fputs(plan.status().message().c_str(), stderr); return 2; }
//   auto proc = rlprof::config::ResolveForProcess(*plan, {"actor", "rollout", "ref"}, rank);
//   if (proc.enabled && plan->steps.Contains(step)) { ... open a window ... }
//
// Thread-safety: a Plan is an immutable value after loading; share it freely.
#ifndef RLPROF_INCLUDE_RLPROF_CONFIG_PLAN_H_
#define RLPROF_INCLUDE_RLPROF_CONFIG_PLAN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rlprof/format/export_format.h"

namespace rlprof::config {

// Which dialect the config was written in (printed by `rlprof plan`).
enum class Dialect { kVerlGen1, kVerlGen2, kVerlGen3, kMindSpeedRl, kNative };
// The backend a config asks for; rlprof maps each onto its own sources (docs/config.md).
enum class Tool { kNone, kRlprof, kNsys, kNpu, kTorch, kTorchMemory, kPrecisionDebugger };
enum class CaptureMode { kEndToEnd, kDiscrete };
// The counter a schedule advances on.
enum class SubStepKind { kStep, kDecode, kMicroBatch, kMiniBatch };
// What a config's `export:` list asks for: format::ExportFormat (one enum, format's public header).
using format::ExportFormat;
// How a process hosting several roles (verl's fused actor_rollout_ref) combines their blocks.
enum class CombinePolicy { kUnion, kPriority };
enum class BufferPolicy { kDrop, kFlush };

const char* DialectName(Dialect d);
const char* ToolName(Tool t);
const char* CaptureModeName(CaptureMode m);
const char* SubStepKindName(SubStepKind k);
const char* CombinePolicyName(CombinePolicy p);

// torch.profiler.schedule semantics (skip_first, wait, warmup, active, repeat; repeat 0 =
// until the stage or step window ends), counted in `unit`s. Disabled when active == 0.
struct Schedule {
  int64_t skip_first = 0;
  int64_t wait = 0;
  int64_t warmup = 0;
  int64_t active = 0;
  int64_t repeat = 0;
  SubStepKind unit = SubStepKind::kMiniBatch;
  // The stage it samples (canonical name, see src/config/stages.h); "" = every stage of its
  // role that runs `unit` sub-steps (and the step window in end-to-end mode).
  std::string stage;
  bool enabled() const { return active > 0; }
};

// What a capture records. Markers (host ranges, marks, counters) are always on.
struct Contents {
  bool cpu = true;       // host-side activity (ranges on every thread)
  bool device = false;   // GPU/NPU activity (CUPTI / device source)
  bool ops = false;      // framework operators (torch RecordFunction)
  bool shapes = false;   // operator input shapes
  bool memory = false;   // allocator / RSS counters
  bool stack = false;    // operator call stacks
  bool module = false;   // framework module hierarchy
  // Names of the enabled flags in a fixed order, e.g. {"cpu", "ops"}.
  std::vector<std::string> Names() const;
  // Framework operators are recorded (ops, or shapes / stack, which imply them).
  bool RecordsOperators() const { return ops || shapes || stack; }
};

// The selected RL steps (1-based).
struct StepSelection {
  enum class Kind { kNone, kList, kRange, kAll };
  Kind kind = Kind::kNone;
  std::vector<int64_t> list;  // sorted, unique (kList)
  int64_t start = 0;          // [start, end) (kRange)
  int64_t end = 0;
  bool Contains(int64_t step) const;
  // The selected steps up to total_steps (kAll needs total_steps > 0).
  std::vector<int64_t> Expand(int64_t total_steps) const;
  std::string ToString() const;  // "[1, 2, 5]", "[3, 7)", "all", "none"
};

// Limits on one capture; 0 = unlimited. When reached, the window closes early and the
// manifest says why.
struct Budget {
  uint64_t max_bytes = 0;
  uint64_t max_events = 0;
};

// The resolved settings of one role block.
struct RolePlan {
  std::string role;        // actor | rollout | ref | critic | reward | integrated | <native name>
  std::string block_path;  // e.g. "actor_rollout_ref.actor.profiler"
  bool enabled = false;
  bool all_ranks = false;
  std::vector<int64_t> ranks;  // global ranks; used when !all_ranks
  // Agent-Loop rollout: ranks are global GPU ranks mapped to replicas of replica_size.
  bool ranks_are_replica_owners = false;
  CaptureMode mode = CaptureMode::kEndToEnd;
  std::vector<std::string> stages;  // allow-list of stage names; empty = every stage
  Contents contents;
  std::string level = "level0";  // level_none | level0 | level1 | level2
  std::vector<Schedule> schedules;     // enabled schedules, in config order
  std::optional<int64_t> token_start;  // rollout decode window [token_start, token_end)
  std::optional<int64_t> token_end;
  // The share of framework operator calls recorded (contents ops; `ops_sampling`), (0, 1]: each
  // call is drawn independently (torch's sampled RecordFunction callbacks), so the operator
  // statistics are estimates (counts and times × 1 / ops_sampling; docs/config.md).
  double ops_sampling = 1.0;
  bool RankSelected(int64_t rank) const;
  // Alias-aware: `actor_generate` in the allow-list selects `rollout_generate`.
  bool StageSelected(std::string_view stage) const;
};

struct Plan {
  std::string config_path;
  Dialect dialect = Dialect::kNative;
  Tool tool = Tool::kNone;
  StepSelection steps;
  bool continuous_steps = false;
  // verl >= 0.9: its reward loop's worker processes (`reward.num_workers`), 0 when the config
  // has no reward loop (then a reward block means a reward-model worker).
  int64_t reward_loop_workers = 0;
  // verl >= 0.9's served reward model (`reward.reward_model.enable`): vLLM/SGLang servers
  // behind its RewardModelManager, one per replica of `reward_model_replica_size` GPUs
  // (rollout tp x dp x pp) in a pool of `reward_model_pool` GPUs (its own pool with
  // enable_resource_pool, else the trainer's: trainer.n_gpus_per_node x nnodes; 0 = unknown,
  // then the world size). Recorded with tool rlprof under the reward block (role reward).
  bool reward_model_served = false;
  int64_t reward_model_replica_size = 0;
  int64_t reward_model_pool = 0;
  // The reward model's replica count for a world of `world_size` GPUs (0: none or unknown).
  int64_t RewardModelReplicas(int64_t world_size) const {
    if (!reward_model_served || reward_model_replica_size <= 0) return 0;
    const int64_t pool = reward_model_pool > 0 ? reward_model_pool : world_size;
    return pool > 0 ? pool / reward_model_replica_size : 0;
  }
  std::string save_path = "outputs/profile";
  std::vector<ExportFormat> exports = {ExportFormat::kChromeJson};
  CombinePolicy combine = CombinePolicy::kUnion;
  Budget budget;
  uint64_t buffer_events_per_thread = 1 << 16;  // ring size of each thread's buffer
  BufferPolicy buffer_policy = BufferPolicy::kFlush;
  double flush_interval_s = 1.0;                // crash safety: flush at least this often
  double backstop_s = 600.0;                    // close a scheduled window after this long
  double memory_interval_s = 0.1;  // contents memory: RSS sampled this often in a window (0: boundaries only)
  double sample_rate = 1.0;  // share of sample ids whose records are kept (rlprof_sample_record), 0..1
  std::vector<RolePlan> roles;
  std::vector<std::string> warnings;            // semantics made explicit (printed by plan)
  // Facts stated, not problems: profiling off, blocks ignored as upstream ignores them, stage
  // aliases translated.
  std::vector<std::string> notes;
  std::string resolved_yaml;                    // normalised config, for the manifest

  const RolePlan* FindRole(const std::string& role) const;
  bool profiling_enabled() const;
};

// One schedule of a process, with where it came from.
struct StageSchedule {
  std::string role;   // the role block it comes from ("*" for MindSpeed-RL's integrated block)
  std::string block;  // that block's path, for messages
  Schedule schedule;  // schedule.stage: the stage it samples, "" = its role's stages
  bool token_window = false;  // from profile_token_start / profile_token_end
};

// The effective settings of one process (its roles and global rank) after the combine policy.
struct ProcessPlan {
  bool enabled = false;
  std::vector<std::string> roles;  // the roles whose blocks selected this process
  CaptureMode mode = CaptureMode::kEndToEnd;
  std::vector<std::string> stages;  // empty = every stage
  Contents contents;
  std::string level = "level0";
  double ops_sampling = 1.0;  // the selected roles' largest (RolePlan::ops_sampling)
  // Every schedule of every selected role, in role order then config order: any number per
  // process, each applying to its own stages (docs/capture-windows.md, "Schedules").
  std::vector<StageSchedule> schedules;
  std::vector<std::string> warnings;  // blocks the policy ignored or merged
  bool StageSelected(std::string_view stage) const;
  // The schedule a discrete window of (role, stage) follows; nullptr = the whole stage call.
  // 1. a schedule naming the stage (aliases included); 2. a role-wide schedule of the stage's
  // owning role (or of `role`, the role the code annotated) whose unit the stage runs, token
  // windows first. Stages that never run a schedule's unit are not sampled by it.
  const StageSchedule* ScheduleFor(std::string_view role, std::string_view stage) const;
  // The schedule of an end-to-end step window: the first role-wide schedule, else the first
  // token window; nullptr = whole steps. Stage-specific schedules never apply to it.
  const StageSchedule* StepSchedule() const;
};

ProcessPlan ResolveForProcess(const Plan& plan, const std::vector<std::string>& roles,
                              int64_t rank);

}  // namespace rlprof::config

#endif  // RLPROF_INCLUDE_RLPROF_CONFIG_PLAN_H_
