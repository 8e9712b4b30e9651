// How subcommands plug into the CLI: one file per subcommand defines `AddXCommand`, which
// registers its options on a CLI11 sub-app and returns the function that runs it.
#ifndef RLPROF_SRC_CLI_COMMAND_H_
#define RLPROF_SRC_CLI_COMMAND_H_

#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "src/base/status.h"

namespace rlprof::cli {

struct Io {
  std::ostream& out;
  std::ostream& err;
};

// Runs the parsed subcommand; returns the process exit code.
using CommandFn = std::function<int(Io&)>;

struct Command {
  CLI::App* app;  // the registered sub-app
  CommandFn run;
};

// Maps a Status to the CLI's exit code (bad input 2, analysis 3, output 4).
int ExitCodeFor(const base::Status& s);

// The end of a subcommand written as `base::Status Run(…)`: a failure prints
// "rlprof <command>: <line>" on io.err for each line of the message; returns ExitCodeFor(s).
int ReportStatus(const base::Status& s, const char* command, Io& io);

Command AddVersionCommand(CLI::App& app);
// The version `rlprof version` and `rlprof --version` print.
const char* VersionString();
Command AddDoctorCommand(CLI::App& app);
Command AddPlanCommand(CLI::App& app);
Command AddExportCommand(CLI::App& app);
Command AddAnalyseCommand(CLI::App& app);
Command AddSummaryCommand(CLI::App& app);
Command AddCompareCommand(CLI::App& app);
Command AddReportCommand(CLI::App& app);
Command AddClusterCommand(CLI::App& app);
Command AddServeCommand(CLI::App& app);
Command AddTriggerCommand(CLI::App& app);
Command AddRunCommand(CLI::App& app);

// `rlprof run ...` (run_command.cc): the words after `run`; execs the command.
int RunRunCommand(const std::vector<std::string>& args, Io& io);

}  // namespace rlprof::cli

#endif  // RLPROF_SRC_CLI_COMMAND_H_
