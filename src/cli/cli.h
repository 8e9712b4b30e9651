// The `rlprof` command line: RunCli parses argv and runs one subcommand.
// Exit codes: 0 ok, 1 usage, 2 bad input, 3 analysis error, 4 output error, 5 unavailable (doctor),
// 127 the command of `rlprof run` could not be started.
#ifndef RLPROF_SRC_CLI_CLI_H_
#define RLPROF_SRC_CLI_CLI_H_

#include <iosfwd>

namespace rlprof::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitUsage = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitAnalysisError = 3;
inline constexpr int kExitOutputError = 4;
inline constexpr int kExitUnavailable = 5;  // doctor: device capture would be off
inline constexpr int kExitCannotExecute = 127;  // run: the command could not be started

int RunCli(int argc, char** argv);
// Same, with explicit streams (tests).
int RunCli(int argc, char** argv, std::ostream& out, std::ostream& err);

}  // namespace rlprof::cli

#endif  // RLPROF_SRC_CLI_CLI_H_
