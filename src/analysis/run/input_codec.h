// One input's analysis as bytes, for analysis where the captures are (rlprof.distributed, on
// Ray): a worker on the node that holds a capture analyses it with the same C++ as
// `rlprof analyse` (AnalyseInputs), encodes the InputResult — every per-input number, not the
// trace: kilobytes — and the driver decodes it and assembles the run (AssembleRun,
// src/analysis/run/run_pipeline.h). Decoding what was encoded gives back an equal InputResult, so
// the run's tables, summary.json and report are those of the local analysis.
//
//   std::string bytes = EncodeInputResult(r);                  // on the worker
//   RLPROF_ASSIGN_OR_RETURN(InputResult back, DecodeInputResult(bytes));  // on the driver
//
// The encoding is CBOR (RFC 8949) of a versioned document; ints and doubles are kept exactly,
// text as its bytes (names from traces need not be UTF-8). Bytes of another format version, or
// corrupt ones, decode to InvalidArgument — never a throw.
// Thread-safety: pure functions.
#ifndef RLPROF_SRC_ANALYSIS_RUN_INPUT_CODEC_H_
#define RLPROF_SRC_ANALYSIS_RUN_INPUT_CODEC_H_

#include <string>
#include <string_view>

#include <vector>

#include "src/analysis/run/run.h"
#include "src/analysis/run/run_pipeline.h"
#include "src/base/status.h"

namespace rlprof::analysis {

inline constexpr int kInputCodecVersion = 6;  // 2: TraceAnalysis host, role, pid; 3: tb_steps; 4: async facts, samples; 5: out_of_memory;
                                              // 6: ops_sampling

std::string EncodeInputResult(const InputResult& r);
base::StatusOr<InputResult> DecodeInputResult(std::string_view bytes);

// A diagnostics sink alone (what finding inputs on one node counted).
std::string EncodeDiagnostics(const Diagnostics& d);
base::StatusOr<Diagnostics> DecodeDiagnostics(std::string_view bytes);

// One input as the driver got it back from the node that holds it.
struct RemoteInput {
  std::string input, name;  // as found on its node; name from InputNames over every node's inputs
  std::string result;       // EncodeInputResult bytes (when `lost` is empty)
  std::string lost;         // why no result came back ("node n1 died: …"), "" when one did
};

// The driver's half: decodes every result and assembles the run (AssembleRun). `found`: each
// node's EncodeDiagnostics of its search; `missing`: paths that no node holds. What could not
// come back is counted, never fatal: `ray_node_lost` per input lost with its node (kept as an
// input with a DataLoss status), `ray_bad_result` per result that does not decode (another
// rlprof version on that node), `ray_input_missing` per path no node holds; a bad `found`
// is counted as `ray_bad_result` too; `lost_searches` ("node n2: why"): nodes that died before
// saying what they hold, one `ray_node_lost` each.
RunAnalysis AssembleRemoteRun(std::vector<std::string> paths, const AnalysisOptions& options,
                              const std::vector<std::string>& found, const std::vector<RemoteInput>& inputs,
                              const std::vector<std::string>& missing,
                              const std::vector<std::string>& lost_searches = {});

}  // namespace rlprof::analysis

#endif  // RLPROF_SRC_ANALYSIS_RUN_INPUT_CODEC_H_
