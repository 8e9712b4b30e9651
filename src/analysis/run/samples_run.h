// Each sample's life across a run (issue 33; docs/definitions.md §5.13): the records of
// rlprof.sample / rlprof's vLLM source (TraceAnalysis::samples) joined with what became of
// them (TraceAnalysis::sample_uses, from any process, by id) — the tables of
// `rlprof summary RUN --view samples`.
// Thread-safety: pure functions of the results.
#ifndef RLPROF_SRC_ANALYSIS_RUN_SAMPLES_RUN_H_
#define RLPROF_SRC_ANALYSIS_RUN_SAMPLES_RUN_H_

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "src/analysis/run/run.h"
#include "src/analysis/tables/tables.h"

namespace rlprof::analysis {

// samples: one row per sample (its records joined: JoinSamples), in submit order: input, rank, role, replica (its own, else
// the process's rank), id, group, step, submit (µs from the run's first sample), queue, prefill,
// ttft (submit → first token), decode, tpot (decode / (completion − 1)), e2e (submit → end),
// tool (Σ tool calls), reward (µs), prompt/completion/cached tokens, finish_reason, preemptions,
// tool_calls, version_first, version_last, outcome ("consumed", a drop reason, or empty),
// used_step, used_version, staleness (used_version − version_last).
Table SamplesTable(const std::vector<InputResult>& results);

// sample_tail: per step, one row for all replicas ("all") then one per replica: samples,
// generation (first submit → last end), step_time (the step's span in the processes that made
// them), the times until 50/90/95/99/100 % of the step's samples had ended (µs from the step's
// first submit), tail (p100 − p90) and its share of the step, tail_idle (replica-time with no
// sample running within the tail), queue / TTFT / TPOT percentiles, tokens, token and request
// imbalance (max / mean over replicas; a replica row: its own / mean), preemptions, and two
// what-ifs, estimates from the same records: stop at p95 (over-sample, drop the slowest 5 %):
// p95_saves = p100 − p95, p95_oversample = the extra samples to generate; partial rollout cut at
// p90: partial_saves = p100 − p90, partial_carried samples and their remaining tokens
// (partial_carried_tokens, by their decode rate) carried into the next step.
Table SampleTailTable(const std::vector<InputResult>& results);

// sample_outcomes: outcome ("consumed", a drop reason, "unused": no use recorded) → samples,
// share (%); then staleness (used_version − version_last, consumed samples with both known) →
// samples, share: rows of kind "staleness".
Table SampleOutcomesTable(const std::vector<InputResult>& results);

// One sample as the run tells it: the records of one id, from any process, joined — an engine's
// record per request (the turns of a multi-turn trajectory, a generation resumed after an abort)
// and the loop's own (tool calls, reward, weight versions, group). Earliest submit / queued /
// scheduled / first token, latest last token / end, the first turn's prompt tokens, completion
// and cached tokens and preemptions summed, the last finish reason, every span. `input` is the
// process of its engine record (one with tokens or a first token), else of its first record; the
// sample's step and replica are that record's. In order of first appearance.
struct JoinedSample {
  const InputResult* input = nullptr;
  SampleRecord s;
  int64_t records = 1;     // how many records were joined
  int64_t finish_end = -1;  // the end of the record its finish reason is from
};
std::vector<JoinedSample> JoinSamples(const std::vector<InputResult>& results);

// A sample's start: its submit, else the earliest time it has (-1: none). Its end: `end`, else its
// last token, else its start. What every table, the report and the OTLP export place it by.
int64_t SampleStart(const SampleRecord& s);
int64_t SampleEnd(const SampleRecord& s);

// What became of each sample id: its last rlprof.sample_use in any process (pointers into
// `results`).
std::unordered_map<std::string, const SampleUse*> LastUses(const std::vector<InputResult>& results);

// Whether some analysed input holds sample records (then runs get the tables).
bool AnySamples(const std::vector<InputResult>& results);

}  // namespace rlprof::analysis

#endif  // RLPROF_SRC_ANALYSIS_RUN_SAMPLES_RUN_H_
