// torch_npu's text outputs (an ASCEND_PROFILER_OUTPUT folder without a database or
// trace_view.json) → the Trace model (internal to the readers).
//
// What is read (docs/formats.md, "Ascend text folders"):
//   - kernel_details.csv: one device kernel a row: "Start Time(us)" (exact decimal µs, torch_npu
//     quotes it with a trailing tab), "Duration(us)", "Stream ID", "Name", "Accelerator Core"
//     (older: "Task Type") as the category, "Input Shapes", "Step Id" (the step of the launch),
//     "Device_id" where present;
//   - communication.json: {"step<N>"|"step": {"collective"|"p2p": {"<op>@<group>": {
//     "Communication Time Info": {"Start Timestamp(us)", "Elapse Time(ms)", …},
//     "Communication Bandwidth Info": {<transport>: {"Transit Size(MB)", …}}}}}}: one HCCL
//     operator a key, on a lane per group, numbers read from their text (no double rounding).
// Steps: a "Step Id" / "step<N>" names the step of each piece of work; the step's window spans
// its work (step_trace_time.csv holds durations only, no times: it is not read). Without step
// ids the whole trace is one step spanning the device work, as msprof's step_trace_time.
//
//   AscendTextFiles f;
//   f.kernel_details = <text of kernel_details.csv>;   // absent files stay nullopt
//   RLPROF_RETURN_IF_ERROR(ReadAscendText(f, "run/ASCEND_PROFILER_OUTPUT", opts, &trace));
//
// Reading is lenient: unreadable rows and operators are skipped and counted
// (ascend_text_bad_row), a communication.json cut short keeps the operators before the cut
// (ascend_text_corrupt), a missing file or column is named (ascend_text_missing_file,
// ascend_text_missing_column). Only a folder with neither file is an error Status. The trace is
// finalized.
//
// Thread-safety: reentrant.
#ifndef RLPROF_SRC_ANALYSIS_READERS_ASCEND_TEXT_READER_H_
#define RLPROF_SRC_ANALYSIS_READERS_ASCEND_TEXT_READER_H_

#include <optional>
#include <string>
#include <string_view>

#include "src/analysis/readers/readers.h"
#include "src/analysis/model/trace.h"
#include "src/base/status.h"

namespace rlprof::analysis {

inline constexpr char kKernelDetailsCsv[] = "kernel_details.csv";
inline constexpr char kCommunicationJson[] = "communication.json";

struct AscendTextFiles {
  std::optional<std::string> kernel_details;  // kernel_details.csv's text
  std::optional<std::string> communication;   // communication.json's text
};

// True when `out_dir` (an ASCEND_PROFILER_OUTPUT folder) holds kernel_details.csv or
// communication.json.
bool HasAscendTextOutputs(const std::string& out_dir);

// Loads the files of `out_dir` (those that exist; unreadable ones are named in `trace`).
AscendTextFiles LoadAscendTextFiles(const std::string& out_dir, Trace* trace);

// Fills `trace` (empty; `source` is set to `name`) from the files' texts.
base::Status ReadAscendText(const AscendTextFiles& files, const std::string& name, const ReadOptions& opts,
                            Trace* trace);

// The fuzz form: `bytes` holds kernel_details.csv, then a line "\x1e" (record separator), then
// communication.json; without the separator it is kernel_details.csv alone.
base::Status ReadAscendTextBytes(std::string_view bytes, const std::string& name, const ReadOptions& opts,
                                 Trace* trace);

}  // namespace rlprof::analysis

#endif  // RLPROF_SRC_ANALYSIS_READERS_ASCEND_TEXT_READER_H_
