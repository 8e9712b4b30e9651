// `rlprof analyse --ray [ADDRESS]` hands over to Python: Ray's client is a Python library, so
// the C++ command execs `PYTHON -m rlprof analyse --ray ADDRESS …` (python/rlprof/distributed.py),
// which asks the cluster and runs rlprof's C++ analysis (the `_analysis` extension) on the
// nodes and on the driver. PYTHON is RLPROF_PYTHON, else python3; the rlprof package beside
// this executable (build tree: bin/../python; pip install: rlprof/_bin/..) goes first on
// PYTHONPATH so that Python runs the same rlprof. docs/scale.md.
//
//   return ExecPythonAnalyse({"runs/r1", "--ray", "auto", "-o", "out"}, io);  // returns only on failure
#ifndef RLPROF_SRC_CLI_RAY_HANDOFF_H_
#define RLPROF_SRC_CLI_RAY_HANDOFF_H_

#include <string>
#include <vector>

#include "src/cli/command.h"

namespace rlprof::cli {

// The Python command line for `args` (after "analyse"): {PYTHON, "-m", "rlprof", "analyse", args…}.
std::vector<std::string> PythonAnalyseCommand(const std::vector<std::string>& args);

// Replaces this process with PythonAnalyseCommand(args). Returns (exit 1, with a message naming
// the interpreter and RLPROF_PYTHON) only when it cannot be started.
base::Status ExecPythonAnalyse(const std::vector<std::string>& args, Io& io);

}  // namespace rlprof::cli

#endif  // RLPROF_SRC_CLI_RAY_HANDOFF_H_
