// torch-tb-profiler's step-cost breakdown (TensorBoard's PyTorch profiler plugin, "Overview" →
// "Step Time Breakdown"): per ProfilerStep#N, the step's time split into Kernel, Memcpy, Memset,
// Communication, Runtime, DataLoader, CPU Exec and Other by a priority rule, computed from the
// trace model the way the plugin computes it (docs/analysis.md "--view tb",
// docs/definitions.md §5.6). All times in ns.
//
//   std::vector<TbStepRow> rows = TbStepTime(trace);            // torch-tb-profiler 0.4.3 (PyPI)
//   TbStepTime(trace, TbRules::kKinetoMain);                     // the plugin's last source
//
// Thread-safety: pure function.
#ifndef RLPROF_SRC_ANALYSIS_PASSES_TB_STEPS_H_
#define RLPROF_SRC_ANALYSIS_PASSES_TB_STEPS_H_

#include <cstdint>
#include <vector>

#include "src/analysis/model/trace.h"

namespace rlprof::analysis {

// Which events the plugin reads. The two differ only in categories:
//  - kRelease043: torch-tb-profiler 0.4.3, the last release on PyPI. Runtime calls are events of
//    category "Runtime" (Kineto before PyTorch 2.0); Kineto's later "cuda_runtime" is not read
//    (runtime time then counts as the CPU operator around it), and of the "user_annotation" /
//    "gpu_user_annotation" ranges only ProfilerStep#N and nccl:* / gloo:* collectives are read
//    (a record_function DataLoader range of PyTorch 2.x is not DataLoader time).
//  - kKinetoMain: the plugin's source as last in pytorch/kineto (tb_plugin, removed in 2025;
//    never released): also cuda_runtime, xpu_runtime, mtia_runtime, glow_runtime and
//    privateuse1_runtime are runtime calls, and every user annotation is an operator.
enum class TbRules { kRelease043, kKinetoMain };

struct TbStepRow {
  int64_t step = 0;  // N of ProfilerStep#N; 0 for the whole trace when there is no step
  int64_t kernel = 0, memcpy = 0, memset = 0, communication = 0, runtime = 0, dataloader = 0,
          cpu_exec = 0, other = 0;
  int64_t total = 0;  // the step's duration (after the plugin's device-side extension)
};

std::vector<TbStepRow> TbStepTime(const Trace& t, TbRules rules = TbRules::kRelease043);

}  // namespace rlprof::analysis

#endif  // RLPROF_SRC_ANALYSIS_PASSES_TB_STEPS_H_
