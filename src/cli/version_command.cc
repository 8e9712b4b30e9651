// `rlprof version`: prints the version and the optional features compiled in.
#include <ostream>

#include "src/base/version.h"
#include "src/cli/cli.h"
#include "src/cli/command.h"


namespace rlprof::cli {

const char* VersionString() { return base::Version(); }

Command AddVersionCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("version", "Print rlprof's version");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "Print as JSON");
  return {cmd, [json](Io& io) {
    if (*json) io.out << "{\"version\": \"" << base::Version() << "\"}\n";
    else io.out << "rlprof " << base::Version() << "\n";
    return base::Status::Ok();
  }};
}

}  // namespace rlprof::cli
