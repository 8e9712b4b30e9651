#include "src/cli/cli.h"

#include <iostream>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "src/cli/command.h"

namespace rlprof::cli {

int ExitCodeFor(const base::Status& s) {
  using base::StatusCode;
  switch (s.code()) {
    case StatusCode::kOk: return kExitOk;
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound:
    case StatusCode::kDataLoss:
    case StatusCode::kFailedPrecondition: return kExitBadInput;
    case StatusCode::kIoError: return kExitOutputError;
    case StatusCode::kUsage: return kExitUsage;
    case StatusCode::kUnavailable: return kExitUnavailable;
    case StatusCode::kCannotExecute: return kExitCannotExecute;
    default: return kExitAnalysisError;
  }
}

int ReportStatus(const base::Status& s, const char* command, Io& io) {
  if (s.ok() || s.message().empty()) return ExitCodeFor(s);
  // One prefixed line per line of the message (e.g. "no trace found" and why).
  const std::string& m = s.message();
  for (size_t at = 0; at <= m.size();) {
    size_t nl = m.find('\n', at);
    if (nl == std::string::npos) nl = m.size();
    io.err << "rlprof " << command << ": " << m.substr(at, nl - at) << "\n";
    at = nl + 1;
  }
  return ExitCodeFor(s);
}

int RunCli(int argc, char** argv) { return RunCli(argc, argv, std::cout, std::cerr); }

int RunCli(int argc, char** argv, std::ostream& out, std::ostream& err) {
  CLI::App app{"rlprof: profiling for distributed RL post-training", "rlprof"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Show help for every subcommand");
  bool version_flag = false;  // handled before parsing (below); listed in --help
  app.add_flag("-V,--version", version_flag, "Print rlprof's version (as `rlprof version`)");

  std::map<CLI::App*, CommandFn> commands;
  auto add = [&](Command c) { commands[c.app] = std::move(c.run); };
  add(AddVersionCommand(app));
  add(AddDoctorCommand(app));
  add(AddPlanCommand(app));
  add(AddExportCommand(app));
  add(AddAnalyseCommand(app));
  add(AddSummaryCommand(app));
  add(AddCompareCommand(app));
  add(AddAdviseCommand(app));
  add(AddReportCommand(app));
  add(AddClusterCommand(app));
  add(AddServeCommand(app));
  add(AddRunCommand(app));
  add(AddTriggerCommand(app));

  if (argc == 2 && (std::string(argv[1]) == "--version" || std::string(argv[1]) == "-V")) {
    out << "rlprof " << VersionString() << "\n";  // as `rlprof version`
    return kExitOk;
  }
  if (argc >= 2 && std::string(argv[1]) == "run") {
    Io io{out, err};
    return ReportStatus(RunRunCommand(std::vector<std::string>(argv + 2, argv + argc), io), "run", io);
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    out << app.help();
    return kExitOk;
  } catch (const CLI::CallForAllHelp& e) {
    out << app.help("", CLI::AppFormatMode::All);
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    // Help for a subcommand is raised as CallForHelp too, handled above; here are real errors.
    if (e.get_exit_code() == 0) {
      out << e.what() << "\n";
      return kExitOk;
    }
    err << "rlprof: " << e.what() << "\n";
    err << "Run 'rlprof --help' for usage.\n";
    return kExitUsage;
  }
  Io io{out, err};
  for (auto* sub : app.get_subcommands()) {
    auto it = commands.find(sub);
    if (it != commands.end()) return ReportStatus(it->second(io), sub->get_name().c_str(), io);
  }
  err << "rlprof: no subcommand\n";
  return kExitUsage;
}

}  // namespace rlprof::cli
