// A run as OpenTelemetry spans in OTLP/JSON (issue 33; docs/samples.md, "OpenTelemetry"): the
// file an OTLP/HTTP receiver accepts (ExportTraceServiceRequest, JSON encoding: hex trace and
// span ids, int64 as strings), for Grafana Tempo / Jaeger.
//
//   auto run = analysis::AnalyseRun({dir}, cfg);
//   OtlpStats st;
//   std::string body = OtlpJson(*run, "20261129-run", &st);   // POST to /v1/traces, or a file
//
// One trace per RL step: a root span `rl.step` over every process's window of that step; under
// it each process's stages (`rl.stage`), and each sample (`rl.sample`, under the stage of its
// process that holds its submit, else the step) with its phases as children (queue, prefill,
// decode, tool, reward). A resource per process (service.name "rlprof", its role and rank), one
// for the run (the step spans). Attributes: OpenTelemetry's GenAI names where one fits
// (gen_ai.usage.input_tokens / output_tokens / cache_read.input_tokens,
// gen_ai.response.finish_reasons, gen_ai.response.id) and rlprof's own `rl.*` namespace for the
// rest (no official `rl.*` convention exists; docs/samples.md lists them). Times are Unix ns: the
// captures' realtime anchor (a trace without one keeps its own clock, counted in
// `unanchored_spans`).
// Thread-safety: a pure function of the run.
#ifndef RLPROF_SRC_REPORT_OTLP_EXPORT_H_
#define RLPROF_SRC_REPORT_OTLP_EXPORT_H_

#include <cstdint>
#include <string>

#include "src/analysis/run/run_pipeline.h"

namespace rlprof::report {

struct OtlpStats {
  int64_t traces = 0, spans = 0, samples = 0, stages = 0;
  int64_t unanchored_spans = 0;  // spans of inputs without a wall-clock anchor
};

// `run_name` seeds the trace ids (the same run and step give the same trace id).
std::string OtlpJson(const analysis::RunAnalysis& run, const std::string& run_name, OtlpStats* stats);

}  // namespace rlprof::report

#endif  // RLPROF_SRC_REPORT_OTLP_EXPORT_H_
