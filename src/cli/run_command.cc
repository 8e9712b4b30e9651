// `rlprof run [--config FILE] [KEY=VALUE ...] -- COMMAND [ARGS ...]`: runs COMMAND with
// rlprof's variables set and the Python bootstrap directory (python/rlprof/_bootstrap, which
// holds sitecustomize.py) first on PYTHONPATH, so every Python process the command starts
// imports the bootstrap, which patches verl and vLLM as they are imported (no source edits).
// The same as python/rlprof/launch.py, for the C++ command. See docs/integrations.md.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "src/cli/cli.h"
#include "src/cli/command.h"

namespace rlprof::cli {
namespace {

namespace fs = std::filesystem;

bool HasBootstrap(const fs::path& dir) {
  std::error_code ec;
  return !dir.empty() && fs::is_regular_file(dir / "sitecustomize.py", ec);
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

// The bootstrap directory: RLPROF_BOOTSTRAP_DIR; beside this executable (the build tree's
// bin/../python/rlprof/_bootstrap, or a pip install's rlprof/_bin/../_bootstrap); else where
// the Python on PATH (RLPROF_PYTHON, python3) imports the rlprof package from.
std::string FindBootstrap() {
  if (const char* e = std::getenv("RLPROF_BOOTSTRAP_DIR"); e && HasBootstrap(e)) return e;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path bin = exe.parent_path();
    for (const fs::path& c : {bin.parent_path() / "python" / "rlprof" / "_bootstrap",
                              bin.parent_path() / "_bootstrap"}) {
      if (HasBootstrap(c)) return fs::weakly_canonical(c, ec).string();
    }
  }
  const char* py = std::getenv("RLPROF_PYTHON");
  std::string python = py && *py ? py : "python3", quoted = "'";
  for (char c : python) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);  // any path
  quoted += "'";
  std::string cmd = quoted +
      " -c 'import os, rlprof._bootstrap as b; print(os.path.dirname(b.__file__))' "
      "2>/dev/null";
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    while (std::fgets(buf, sizeof buf, p)) out += buf;
    pclose(p);
  }
  out = Trim(out);
  return HasBootstrap(out) ? out : std::string();
}

std::string NewRunId() {
  char t[32];
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  std::strftime(t, sizeof t, "%Y%m%d-%H%M%S", &tm);
  std::random_device rd;
  char hex[8];
  std::snprintf(hex, sizeof hex, "%06x", static_cast<unsigned>(rd()) & 0xffffffu);
  return std::string(t) + "-" + hex;
}

struct RunArgs {
  std::string config;
  std::vector<std::string> overrides;
  std::vector<std::string> command;
};

}  // namespace

base::Status RunRunCommand(const std::vector<std::string>& args, Io& io) {
  RunArgs a;
  size_t i = 0;
  bool dashdash = false;
  for (; i < args.size(); ++i) {
    const std::string& w = args[i];
    if (w == "--") { dashdash = true; ++i; break; }
    if (w == "-h" || w == "--help") {
      io.out << "Usage: rlprof run [--config FILE] [KEY=VALUE ...] -- COMMAND [ARGS ...]\n"
                "Runs COMMAND with rlprof's variables set (RLPROF_ENABLE, RLPROF_CONFIG,\n"
                "RLPROF_OVERRIDES, RLPROF_RUN_ID, RLPROF_BOOTSTRAP_DIR) and rlprof's Python\n"
                "bootstrap first on PYTHONPATH: verl's DistProfiler (global_profiler.tool:\n"
                "rlprof) and vLLM's model runner record without source edits in every\n"
                "Python process the command starts. See docs/integrations.md.\n";
      return base::Status::Ok();
    }
    if (w == "--config" || w == "-c") {
      if (i + 1 >= args.size()) return base::UsageError("--config needs a file");
      a.config = args[++i];
    } else if (w.rfind("--config=", 0) == 0) {
      a.config = w.substr(9);
    } else if (w.find('=') != std::string::npos && w[0] != '-') {
      a.overrides.push_back(w);
    } else {
      return base::UsageError("unexpected argument '" + w + "' (overrides are KEY=VALUE; the command follows --)");
    }
  }
  if (!dashdash || i >= args.size()) {
    io.err << "rlprof run: no command: put it after --\n"
              "Usage: rlprof run [--config FILE] [KEY=VALUE ...] -- COMMAND [ARGS ...]\n";
    return Silent(base::StatusCode::kUsage);
  }
  a.command.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
  std::error_code ec;
  if (!a.config.empty()) {
    if (!fs::is_regular_file(a.config, ec)) return base::NotFound("config file not found: " + a.config);
    a.config = fs::absolute(a.config, ec).string();
  }
  std::string boot = FindBootstrap();
  if (boot.empty())
    return base::NotFound("cannot find rlprof's Python bootstrap (rlprof/_bootstrap): install "
                          "the Python package (pip install ./python), or set RLPROF_BOOTSTRAP_DIR");
  setenv("RLPROF_ENABLE", "1", 1);
  setenv("RLPROF_BOOTSTRAP_DIR", boot.c_str(), 1);
  if (!a.config.empty()) setenv("RLPROF_CONFIG", a.config.c_str(), 1);
  if (!a.overrides.empty()) {
    std::string joined;
    for (const auto& o : a.overrides) joined += (joined.empty() ? "" : "\n") + o;
    setenv("RLPROF_OVERRIDES", joined.c_str(), 1);
  }
  if (const char* r = std::getenv("RLPROF_RUN_ID"); !r || !*r) {
    setenv("RLPROF_RUN_ID", NewRunId().c_str(), 1);
  }
  // NVTX's tool library beside the package (docs/integrations.md); an injection the user chose
  // (nsys's, another tool's) is kept.
  if (const char* n = std::getenv("NVTX_INJECTION64_PATH"); !n || !*n) {
    const std::string nvtx = (fs::path(boot).parent_path() / "librlprof_nvtx.so").string();
    if (fs::is_regular_file(nvtx, ec)) setenv("NVTX_INJECTION64_PATH", nvtx.c_str(), 1);
  }
  std::string pp = boot;
  if (const char* old = std::getenv("PYTHONPATH"); old && *old) {
    std::string rest = old;
    size_t start = 0;
    while (start <= rest.size()) {
      size_t end = rest.find(':', start);
      if (end == std::string::npos) end = rest.size();
      std::string part = rest.substr(start, end - start);
      if (!part.empty() && part != boot) pp += ":" + part;
      start = end + 1;
    }
  }
  setenv("PYTHONPATH", pp.c_str(), 1);
  io.out.flush();
  io.err.flush();
  std::vector<char*> argv;
  for (auto& w : a.command) argv.push_back(w.data());
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  return base::Status(base::StatusCode::kCannotExecute,
                      "cannot run '" + a.command[0] + "': " + std::strerror(errno));
}

Command AddRunCommand(CLI::App& app) {
  // Registered for `rlprof --help`; RunCli hands `rlprof run ...` to RunRunCommand before
  // CLI11 parses (the command after -- is not rlprof's to parse).
  auto* cmd = app.add_subcommand(
      "run", "Run a command with rlprof's bootstrap in every Python process: "
             "rlprof run [--config FILE] [KEY=VALUE ...] -- COMMAND ...");
  cmd->allow_extras();
  return {cmd, [](Io&) { return base::UsageError("no command: put it after --"); }};
}

}  // namespace rlprof::cli
