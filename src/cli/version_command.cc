// `rlprof version`: prints the version and the optional features compiled in.
#include <ostream>

#include "src/cli/cli.h"
#include "src/cli/command.h"

#ifndef RLPROF_VERSION
#define RLPROF_VERSION "0.0.0"
#endif

namespace rlprof::cli {

const char* VersionString() { return RLPROF_VERSION; }

Command AddVersionCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("version", "Print rlprof's version");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "Print as JSON");
  return {cmd, [json](Io& io) {
    if (*json) io.out << "{\"version\": \"" << RLPROF_VERSION << "\"}\n";
    else io.out << "rlprof " << RLPROF_VERSION << "\n";
    return kExitOk;
  }};
}

}  // namespace rlprof::cli
