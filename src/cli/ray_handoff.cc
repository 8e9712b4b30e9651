// `rlprof analyse --ray`: exec the Python side (see the header).
#include "src/cli/ray_handoff.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <ostream>

#include "src/cli/cli.h"

namespace rlprof::cli {
namespace {

namespace fs = std::filesystem;

// The folder holding the rlprof package that belongs to this executable, "" if none.
std::string PackageRoot() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  const fs::path bin = exe.parent_path();
  for (const fs::path& root : {bin.parent_path() / "python",               // build tree
                               bin.parent_path().parent_path()}) {         // rlprof/_bin/rlprof
    if (fs::is_regular_file(root / "rlprof" / "distributed.py", ec)) return root.string();
  }
  return "";
}

}  // namespace

std::vector<std::string> PythonAnalyseCommand(const std::vector<std::string>& args) {
  const char* py = std::getenv("RLPROF_PYTHON");
  std::vector<std::string> cmd{py && *py ? py : "python3", "-m", "rlprof", "analyse"};
  cmd.insert(cmd.end(), args.begin(), args.end());
  return cmd;
}

base::Status ExecPythonAnalyse(const std::vector<std::string>& args, Io& io) {
  if (const std::string root = PackageRoot(); !root.empty()) {
    const char* old = std::getenv("PYTHONPATH");
    setenv("PYTHONPATH", (old && *old ? root + ":" + old : root).c_str(), 1);
  }
  const std::vector<std::string> cmd = PythonAnalyseCommand(args);
  std::vector<char*> argv;
  for (const auto& a : cmd) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  io.out.flush();
  io.err.flush();
  execvp(argv[0], argv.data());
  return base::UsageError("--ray runs " + cmd[0] + " -m rlprof, which could not be started (" +
                          std::strerror(errno) + "); set RLPROF_PYTHON to a Python with ray and rlprof");
}

}  // namespace rlprof::cli
