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

// Runs the parsed subcommand. RunCli turns what it returns into the exit code once
// (ExitCodeFor) and prints a failure's message as "rlprof <command>: <line>" for each of its
// lines; a failure whose reasons the command already printed has an empty message.
using CommandFn = std::function<base::Status(Io&)>;

struct Command {
  CLI::App* app;  // the registered sub-app
  CommandFn run;
};

// Maps a Status to the CLI's exit code (usage 1, bad input 2, analysis 3, output 4,
// unavailable 5, cannot execute 127).
int ExitCodeFor(const base::Status& s);

// Prints a failure as "rlprof <command>: <line>" on io.err, one per line of its message
// (nothing for an empty message); returns ExitCodeFor(s).
int ReportStatus(const base::Status& s, const char* command, Io& io);

// A failure whose reasons are already printed: exit code only.
inline base::Status Silent(base::StatusCode code) { return base::Status(code, ""); }

Command AddVersionCommand(CLI::App& app);
// The version `rlprof version` and `rlprof --version` print.
const char* VersionString();
Command AddDoctorCommand(CLI::App& app);
Command AddPlanCommand(CLI::App& app);
Command AddExportCommand(CLI::App& app);
Command AddAnalyseCommand(CLI::App& app);
Command AddSummaryCommand(CLI::App& app);
Command AddCompareCommand(CLI::App& app);
Command AddAdviseCommand(CLI::App& app);
Command AddReportCommand(CLI::App& app);
Command AddClusterCommand(CLI::App& app);
Command AddServeCommand(CLI::App& app);
Command AddTriggerCommand(CLI::App& app);
Command AddRunCommand(CLI::App& app);

// `rlprof run ...` (run_command.cc): the words after `run`; execs the command (returns only
// when it cannot).
base::Status RunRunCommand(const std::vector<std::string>& args, Io& io);

}  // namespace rlprof::cli

#endif  // RLPROF_SRC_CLI_COMMAND_H_
