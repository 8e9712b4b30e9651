// Test helper: runs `rlprof ARGS...` in-process and captures its output (tests only).
#ifndef RLPROF_SRC_CLI_CLI_TEST_UTIL_H_
#define RLPROF_SRC_CLI_CLI_TEST_UTIL_H_

#include <sstream>
#include <string>
#include <vector>

#include "src/cli/cli.h"

namespace rlprof::cli {

// Returns the exit code; stdout and stderr land in *out and *err.
inline int RunArgs(std::vector<std::string> args, std::string* out, std::string* err) {
  args.insert(args.begin(), "rlprof");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  std::ostringstream o, e;
  int rc = RunCli(static_cast<int>(argv.size()), argv.data(), o, e);
  *out = o.str();
  *err = e.str();
  return rc;
}

}  // namespace rlprof::cli

#endif  // RLPROF_SRC_CLI_CLI_TEST_UTIL_H_
