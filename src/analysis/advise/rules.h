// The advisor's rules (advise.h): what each rule sees of the run, and the rules themselves
// (rules_rl.cc: the RL level; rules_device.cc: the device level and regressions; rules_memory.cc:
// memory close to capacity and out-of-memory errors).
// Internal to src/analysis/advise.
#ifndef RLPROF_SRC_ANALYSIS_ADVISE_RULES_H_
#define RLPROF_SRC_ANALYSIS_ADVISE_RULES_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "src/analysis/advise/advise.h"

namespace rlprof::analysis::advise {

// A run as the rules see it: the run and its step times.
struct Context {
  const std::vector<InputResult>& inputs;
  const RunView& view;
  const std::vector<InputResult>* base_inputs = nullptr;  // the baseline run, when one is given
  const RunView* base_view = nullptr;
  std::map<int64_t, int64_t> step_ns;  // step → its time (the longest step window, else stage span)
  double mean_step_ns = 0;             // over step_ns (else over the inputs' own step windows)
  int64_t steps = 0;                   // the steps it is over
};
Context MakeContext(const std::vector<InputResult>& inputs, const RunView& view,
                    const std::vector<InputResult>* base_inputs = nullptr, const RunView* base_view = nullptr);
std::map<int64_t, int64_t> StepTimes(const RunView& v);

// A table's cell by column name, as a number (nullopt: empty, text, or no such column).
std::optional<double> Num(const Table& t, size_t row, const std::string& column);
std::string Text(const Table& t, size_t row, const std::string& column);

// "412.0 ms", "85 µs", "1.20 s".
std::string Duration(double ns);
// The finding of rule `id` with its saving per step, severity from its share of `step_ns`.
Finding MakeFinding(const char* id, double saving_ns, double step_ns);

using Rule = void (*)(const Context&, std::vector<Finding>*);

// The RL level.
void GenerationTail(const Context& c, std::vector<Finding>* out);
void StragglerRank(const Context& c, std::vector<Finding>* out);
void DpImbalance(const Context& c, std::vector<Finding>* out);
void StageGaps(const Context& c, std::vector<Finding>* out);
void WeightSync(const Context& c, std::vector<Finding>* out);
void AsyncBalance(const Context& c, std::vector<Finding>* out);
void ColocatedRollout(const Context& c, std::vector<Finding>* out);
void LogProbRecompute(const Context& c, std::vector<Finding>* out);
// The device level, and regressions against a baseline.
void CommExposed(const Context& c, std::vector<Finding>* out);
void HostSync(const Context& c, std::vector<Finding>* out);
void LaunchBound(const Context& c, std::vector<Finding>* out);
void MemcpyExposed(const Context& c, std::vector<Finding>* out);
void Memory(const Context& c, std::vector<Finding>* out);  // rules_memory.cc
void StepRegression(const Context& c, std::vector<Finding>* out);
// The rules that had no data to look at, and what to turn on (advise.cc: it reads the catalogue).
void MissingData(const Context& c, std::vector<Finding>* out);

}  // namespace rlprof::analysis::advise

#endif  // RLPROF_SRC_ANALYSIS_ADVISE_RULES_H_
