// `rlprof export INPUT [--format json|pftrace|db|otlp] -o FILE [--json]`
// Converts a capture directory, a bare events.rlp, a tree of capture directories (a run,
// a step), or traces rlprof reads (Kineto / torch JSON, Ascend trace_view.json, a folder of
// them) into a file other tools open: Chrome trace JSON (.json / .json.gz, Perfetto UI and
// chrome://tracing), Perfetto protobuf (.pftrace) or SQLite (.db). The format defaults from
// the output's extension. Exit codes: 2 unreadable input, 4 unwritable output.
// A run exported as one file is its merged run timeline: every rank on rank 0's clock, grouped
// by role; --detail-ranks / --detail-steps / --stages-only keep operators and device work only
// where asked (format::LevelOfDetail), so hundreds of ranks stay small (docs/scale.md).
// --format otlp (or an output named *.otlp.json): the analysed run's steps, stages and samples as
// OpenTelemetry spans in OTLP/JSON (report/otlp_export.h; docs/samples.md).
#include <algorithm>
#include <filesystem>
#include <memory>
#include <ostream>

#include "src/analysis/passes/classify.h"
#include "src/analysis/readers/readers.h"
#include "src/analysis/run/to_capture.h"
#include "src/base/strings.h"
#include "src/cli/analysis_setup.h"
#include "src/cli/cli.h"
#include "src/cli/command.h"
#include "src/format/capture.h"
#include "src/format/export.h"
#include "src/format/json_escape.h"
#include "src/base/files.h"
#include "src/report/otlp_export.h"

namespace rlprof::cli {
namespace {

namespace fs = std::filesystem;

struct ExportArgs {
  std::string input;
  std::string output;
  std::string format;
  bool json = false;
  format::LevelOfDetail lod;
};

bool IsRawEvents(const std::string& path) {
  return fs::path(path).extension() == ".rlp";
}

// One input FindTraceInputs found: a capture directory or events file loads as a capture;
// another file (Kineto / torch JSON, Ascend trace_view.json) is read by the analysis readers
// and converted (its reader's diagnostics travel in the capture's).
base::StatusOr<format::Capture> LoadOne(const std::string& in, const analysis::Classifier& cls) {
  std::error_code ec;
  const bool capture_dir = fs::is_directory(in, ec) && (fs::exists(fs::path(in) / "manifest.json", ec) ||
                                                        fs::exists(fs::path(in) / "events.rlp", ec));
  if (capture_dir || IsRawEvents(in)) return format::LoadCapture(in);
  // Everything else, Ascend profiler databases and torch_npu output folders included.
  RLPROF_ASSIGN_OR_RETURN(analysis::Trace t, analysis::ReadTrace(in));
  return analysis::CaptureFromTrace(t, cls);
}

// A capture directory, an events file, a trace file, or a folder of any of them (found the
// way every command finds its inputs). Everything passed over or repaired is counted in `diag`.
base::StatusOr<std::vector<format::Capture>> LoadInput(const std::string& path,
                                                       analysis::Diagnostics* diag) {
  RLPROF_ASSIGN_OR_RETURN(std::vector<std::string> inputs, analysis::FindTraceInputs({path}, diag));
  if (inputs.empty()) {
    std::string why = diag->details.empty() ? "" : " (" + diag->details.front() + ")";
    return base::InvalidArgument(path + ": no trace or capture found" + why);
  }
  const analysis::Classifier cls = analysis::Classifier::Default();
  std::vector<format::Capture> out;
  for (const auto& in : inputs) {
    auto c = LoadOne(in, cls);
    if (!c.ok()) {
      if (inputs.size() == 1) return c.status();
      diag->Note("unreadable_inputs", c.status().message());
      continue;
    }
    out.push_back(std::move(*c));
  }
  if (out.empty()) return base::InvalidArgument(path + ": no readable trace or capture");
  std::stable_sort(out.begin(), out.end(), [](const format::Capture& a, const format::Capture& b) {
    return a.manifest.rank < b.manifest.rank;
  });
  for (const auto& c : out) {
    diag->Merge(c.diagnostics);
    // What the capture itself lost (a full disk, a SIGKILL): said here as summary says it.
    format::AddCaptureLossDiagnostics(c, diag);
  }
  return out;
}

bool IsOtlp(const ExportArgs& a) {
  return a.format == "otlp" || (a.format.empty() && a.output.ends_with(".otlp.json"));
}

// --format otlp: the analysed run as OpenTelemetry spans (report/otlp_export.h): steps, stages
// and each sample's life, in OTLP/JSON.
base::Status RunOtlp(const ExportArgs& a, Io& io) {
  analysis::RunConfig cfg;
  auto run = analysis::AnalyseRun({a.input}, cfg);
  RLPROF_RETURN_IF_ERROR(run.status());
  for (const auto& r : run->inputs)
    if (!r.status.ok()) io.err << "rlprof export: " << r.input << ": " << r.status.message() << "\n";
  if (run->analysed() == 0) return base::InvalidArgument(a.input + ": no readable trace or capture");
  std::string name = fs::path(a.input).lexically_normal().filename().string();
  if (name.empty() || name == ".") name = fs::path(a.input).lexically_normal().parent_path().filename().string();
  report::OtlpStats st;
  const std::string body = report::OtlpJson(*run, name, &st);
  RLPROF_RETURN_IF_ERROR(base::WriteFileAtomic(a.output, body));
  const analysis::Diagnostics diagnostics = run->AllDiagnostics();
  if (a.json) {
    nlohmann::json j{{"output", format::SanitizeUtf8(a.output)}, {"format", "otlp"}, {"traces", st.traces},
                     {"spans", st.spans},   {"samples", st.samples},  {"stages", st.stages},
                     {"unanchored_spans", st.unanchored_spans}, {"bytes", body.size()},
                     {"diagnostics", DiagnosticsJson(diagnostics)}};
    io.out << j.dump() << "\n";
  } else {
    io.out << "wrote " << a.output << " (otlp): " << st.spans << " spans in " << st.traces << " traces ("
           << st.samples << " samples, " << st.stages << " stages), " << base::FormatBytes(body.size()) << "\n";
    if (st.unanchored_spans > 0)
      io.out << st.unanchored_spans << " spans of traces without a wall-clock anchor keep their own clock\n";
    PrintDiagnostics(io, diagnostics);
  }
  return base::Status::Ok();
}

base::Status Run(const ExportArgs& a, Io& io) {
  if (IsOtlp(a)) return RunOtlp(a, io);
  auto fmt = a.format.empty() ? format::ExportFormatFromPath(a.output)
                              : format::ParseExportFormat(a.format);
  if (!fmt.ok()) return base::UsageError(fmt.status().message());
  analysis::Diagnostics diagnostics;  // one sink: finding, reading and writing
  auto captures = LoadInput(a.input, &diagnostics);
  if (!captures.ok()) {
    for (const auto& d : diagnostics.details) io.err << "rlprof export: " << d << "\n";
    return captures.status();
  }
  uint64_t source_events = 0;
  for (const auto& c : *captures) source_events += c.raw.events.size();
  const uint64_t left_out = format::ApplyLevelOfDetail(a.lod, &*captures);
  auto stats = format::ExportCaptures(*captures, *fmt, a.output);
  RLPROF_RETURN_IF_ERROR(stats.status());
  diagnostics.Merge(stats->diagnostics);

  if (a.json) {
    nlohmann::json j{{"output", format::SanitizeUtf8(a.output)},
                     {"format", format::ExportFormatName(*fmt)},
                     {"captures", captures->size()},
                     {"source_events", source_events},
                     {"events", stats->events},
                     {"bytes", stats->bytes},
                     {"left_out_by_detail", left_out},
                     {"diagnostics", DiagnosticsJson(diagnostics)}};
    if (!diagnostics.details.empty()) j["diagnostic_details"] = DiagnosticDetailsJson(diagnostics);
    io.out << j.dump() << "\n";
  } else {
    io.out << "wrote " << a.output << " (" << format::ExportFormatName(*fmt) << "): "
           << stats->events << " events from " << captures->size()
           << (captures->size() == 1 ? " capture, " : " captures, ")
           << base::FormatBytes(stats->bytes) << "\n";
    if (a.lod.active())
      io.out << "level of detail: stages of every rank; " << left_out
             << " operator/device/other events left out outside the detailed ranks and steps\n";
    PrintDiagnostics(io, diagnostics);
  }
  return base::Status::Ok();
}

}  // namespace

Command AddExportCommand(CLI::App& app) {
  auto args = std::make_shared<ExportArgs>();
  auto* cmd = app.add_subcommand(
      "export", "Convert captures or traces (Kineto/torch JSON, Ascend) to JSON, pftrace or db");
  cmd->add_option("input", args->input,
                  "Capture directory, events.rlp, a directory of captures, or trace file(s)")
      ->required();
  cmd->add_option("-o,--output", args->output,
                  "Output file: .json, .json.gz, .pftrace or .db (sets the default format)")
      ->required();
  cmd->add_option("-f,--format", args->format,
                  "json | pftrace | db | otlp (default: from the extension; .otlp.json: otlp)")
      ->check(CLI::IsMember({"json", "pftrace", "db", "otlp"}));
  cmd->add_option("--detail-ranks", args->lod.ranks,
                  "Keep operators and device work only for these ranks (others: stages only)")
      ->delimiter(',');
  cmd->add_option("--detail-steps", args->lod.steps,
                  "Keep operators and device work only in these steps (others: stages only)")
      ->delimiter(',');
  cmd->add_flag("--stages-only", args->lod.stages_only,
                "Steps and stages of every rank, no operators or device work");
  cmd->add_flag("--json", args->json, "Print the result as JSON");
  return {cmd, [args](Io& io) { return Run(*args, io); }};
}

}  // namespace rlprof::cli
