// `rlprof export INPUT [--format json|pftrace|db] -o FILE [--json]`
// Converts a capture directory, a bare events.rlp, a tree of capture directories (a run,
// a step), or traces rlprof reads (Kineto / torch JSON, Ascend trace_view.json, a folder of
// them) into a file other tools open: Chrome trace JSON (.json / .json.gz, Perfetto UI and
// chrome://tracing), Perfetto protobuf (.pftrace) or SQLite (.db). The format defaults from
// the output's extension. Exit codes: 2 unreadable input, 4 unwritable output.
#include <filesystem>
#include <memory>
#include <ostream>

#include "src/analysis/classify.h"
#include "src/analysis/readers/readers.h"
#include "src/analysis/to_capture.h"
#include "src/base/strings.h"
#include "src/cli/cli.h"
#include "src/cli/command.h"
#include "src/format/capture.h"
#include "src/format/export.h"
#include "src/format/json_escape.h"

namespace rlprof::cli {
namespace {

namespace fs = std::filesystem;

struct ExportArgs {
  std::string input;
  std::string output;
  std::string format;
  bool json = false;
};

// Traces that are not rlprof captures (Kineto / torch JSON, Ascend trace_view.json), read by
// the analysis readers and converted; a folder of them converts every trace below it.
base::StatusOr<std::vector<format::Capture>> LoadTraces(const std::string& path,
                                                        std::vector<std::string>* diag) {
  RLPROF_ASSIGN_OR_RETURN(std::vector<std::string> inputs, analysis::FindTraceInputs({path}));
  std::vector<format::Capture> out;
  const analysis::Classifier cls = analysis::Classifier::Default();
  for (const auto& in : inputs) {
    auto t = analysis::ReadTrace(in);
    if (!t.ok()) {
      if (inputs.size() == 1) return t.status();
      diag->push_back(in + ": " + t.status().message());
      continue;
    }
    out.push_back(analysis::CaptureFromTrace(*t, cls));
  }
  if (out.empty()) return base::InvalidArgument(path + ": no readable trace or capture");
  return out;
}

bool IsRawEvents(const std::string& path) {
  return fs::path(path).extension() == ".rlp";
}

// A capture directory or events file loads as one capture; another directory as a tree of
// captures, or — when it holds none — of traces; any other file as a trace.
base::StatusOr<std::vector<format::Capture>> LoadInput(const std::string& path,
                                                       std::vector<std::string>* diag) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return base::NotFound(path + ": no such file or directory");
  if (!fs::is_directory(path, ec) && !IsRawEvents(path)) return LoadTraces(path, diag);
  bool single = !fs::is_directory(path, ec) || fs::exists(fs::path(path) / "manifest.json", ec) ||
                fs::exists(fs::path(path) / "events.rlp", ec);
  std::vector<format::Capture> out;
  if (single) {
    RLPROF_ASSIGN_OR_RETURN(format::Capture c, format::LoadCapture(path));
    out.push_back(std::move(c));
  } else {
    auto set = format::LoadCaptureTree(path);
    if (!set.ok() || set->captures.empty()) return LoadTraces(path, diag);
    out = std::move(set->captures);
    *diag = std::move(set->diagnostics);
  }
  for (const auto& c : out) diag->insert(diag->end(), c.diagnostics.begin(), c.diagnostics.end());
  return out;
}

int Run(const ExportArgs& a, Io& io) {
  auto fail = [&](const base::Status& s) {
    io.err << "rlprof export: " << s.message() << "\n";
    return ExitCodeFor(s);
  };
  auto fmt = a.format.empty() ? format::ExportFormatFromPath(a.output)
                              : format::ParseExportFormat(a.format);
  if (!fmt.ok()) {
    io.err << "rlprof export: " << fmt.status().message() << "\n";
    return kExitUsage;
  }
  std::vector<std::string> diagnostics;
  auto captures = LoadInput(a.input, &diagnostics);
  if (!captures.ok()) return fail(captures.status());
  uint64_t source_events = 0;
  for (const auto& c : *captures) source_events += c.raw.events.size();
  auto stats = format::ExportCaptures(*captures, *fmt, a.output);
  if (!stats.ok()) return fail(stats.status());
  diagnostics.insert(diagnostics.end(), stats->diagnostics.begin(), stats->diagnostics.end());

  if (a.json) {
    std::string j = "{\"output\": ";
    format::AppendJsonString(&j, a.output);
    j += ", \"format\": \"";
    j += format::ExportFormatName(*fmt);
    j += "\", \"captures\": " + std::to_string(captures->size()) +
         ", \"source_events\": " + std::to_string(source_events) +
         ", \"events\": " + std::to_string(stats->events) +
         ", \"bytes\": " + std::to_string(stats->bytes) + ", \"diagnostics\": [";
    for (size_t i = 0; i < diagnostics.size(); ++i) {
      if (i > 0) j += ", ";
      format::AppendJsonString(&j, diagnostics[i]);
    }
    io.out << j << "]}\n";
  } else {
    io.out << "wrote " << a.output << " (" << format::ExportFormatName(*fmt) << "): "
           << stats->events << " events from " << captures->size()
           << (captures->size() == 1 ? " capture, " : " captures, ")
           << base::FormatBytes(stats->bytes) << "\n";
    for (const auto& d : diagnostics) io.out << "  diagnostic: " << d << "\n";
  }
  return kExitOk;
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
  cmd->add_option("-f,--format", args->format, "json | pftrace | db (default: from the extension)")
      ->check(CLI::IsMember({"json", "pftrace", "db"}));
  cmd->add_flag("--json", args->json, "Print the result as JSON");
  return {cmd, [args](Io& io) { return Run(*args, io); }};
}

}  // namespace rlprof::cli
