// `rlprof trigger (--steps N | --decode-steps N) [--run ID] [--host H] [--pid P] [--ranks 0,2-5]
//                 [--role R] [--expires S] [--wait S] [--expect K] [--dir DIR] [--json]`
// On-demand capture in a running job (docs/runtime.md "On-demand capture"): writes a request
// into this user's private trigger directory (src/runtime/trigger.h); every rlprof session of
// the user that the request selects opens a window of N steps (or N decode steps) at its next
// step. --wait S waits up to S seconds for sessions to acknowledge (--expect K: until K did)
// and lists them. Expired requests and their acknowledgements are removed. Exit codes: 1 usage,
// 2 fewer acknowledgements than --expect, 4 the directory cannot be used or written.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <ostream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "src/cli/cli.h"
#include "src/cli/command.h"
#include "src/runtime/trigger.h"

namespace rlprof::cli {
namespace {

namespace fs = std::filesystem;

struct TriggerArgs {
  int64_t steps = 0, decode_steps = 0;
  std::string run, host, role, ranks, dir;
  int64_t pid = 0;
  double expires_s = 600, wait_s = 0;
  int64_t expect = 0;
  bool json = false;
};

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// "0,2-5" → {0, 2, 3, 4, 5}; InvalidArgument naming the bad part.
base::StatusOr<std::vector<int64_t>> ParseRanks(const std::string& s) {
  std::vector<int64_t> out;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, ',')) {
    if (part.empty()) continue;
    try {
      size_t used = 0;
      const size_t dash = part.find('-', 1);
      const int64_t a = std::stoll(part.substr(0, dash), &used);
      if (used != (dash == std::string::npos ? part.size() : dash) || a < 0) throw std::invalid_argument(part);
      int64_t b = a;
      if (dash != std::string::npos) {
        b = std::stoll(part.substr(dash + 1), &used);
        if (used != part.size() - dash - 1 || b < a || b - a > 1'000'000) throw std::invalid_argument(part);
      }
      for (int64_t r = a; r <= b; ++r) out.push_back(r);
    } catch (const std::exception&) {
      return base::InvalidArgument("--ranks: '" + part + "' is not a rank or a range A-B");
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// Removes requests that expired (and their acknowledgements); best effort.
void RemoveExpired(const std::string& dir, double now) {
  std::error_code ec;
  std::vector<std::string> gone;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string n = e.path().filename().string();
    if (!n.ends_with(".trigger") || e.is_symlink(ec) || !e.is_regular_file(ec)) continue;
    std::ifstream f(e.path());
    std::stringstream s;
    s << f.rdbuf();
    auto r = runtime::ParseTriggerRequest(s.str());
    if (r.ok() && r->expires_s < now) gone.push_back(r->id);
  }
  for (const auto& id : gone) {
    fs::remove(dir + "/" + id + ".trigger", ec);
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      const std::string n = e.path().filename().string();
      if (n.starts_with(id + ".") && n.ends_with(".ack")) fs::remove(e.path(), ec);
    }
  }
}

// The acknowledgements of request `id`: one line each ("host rank R pid P").
std::vector<std::string> Acks(const std::string& dir, const std::string& id) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string n = e.path().filename().string();
    if (!n.starts_with(id + ".") || !n.ends_with(".ack")) continue;
    std::ifstream f(e.path());
    std::string line;
    std::getline(f, line);
    out.push_back(line.empty() ? n : line);
  }
  std::sort(out.begin(), out.end());
  return out;
}

base::Status Run(const TriggerArgs& a, Io& io) {
  if ((a.steps > 0) == (a.decode_steps > 0)) return base::UsageError("give one of --steps N or --decode-steps N");
  runtime::TriggerRequest r;
  r.run = a.run;
  r.host = a.host;
  r.pid = a.pid;
  r.role = a.role;
  r.steps = a.steps;
  r.decode_steps = a.decode_steps;
  auto ranks = ParseRanks(a.ranks);
  if (!ranks.ok()) return base::UsageError(ranks.status().message());
  r.ranks = *ranks;
  r.created_s = Now();
  r.expires_s = r.created_s + a.expires_s;
  const std::string dir = a.dir.empty() ? runtime::TriggerDir() : a.dir;
  auto path = runtime::WriteTriggerRequest(&r, dir);
  if (!path.ok()) return base::IoError(path.status().message());
  RemoveExpired(dir, r.created_s);
  std::vector<std::string> acks;
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(a.wait_s);
  while (a.wait_s > 0) {
    acks = Acks(dir, r.id);
    if ((a.expect > 0 && static_cast<int64_t>(acks.size()) >= a.expect) || std::chrono::steady_clock::now() >= until)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (a.json) {
    io.out << nlohmann::json{{"id", r.id}, {"request", *path}, {"expires", r.expires_s}, {"acknowledged", acks}}.dump(2)
           << "\n";
  } else {
    io.out << "trigger " << r.id << ": " << (r.steps > 0 ? std::to_string(r.steps) + " step(s)"
                                                         : std::to_string(r.decode_steps) + " decode step(s)")
           << " from the next step of every selected rlprof session of this user; request " << *path
           << " (expires in " << a.expires_s << " s)\n";
    if (a.wait_s > 0) {
      io.out << "acknowledged by " << acks.size() << " process(es)" << (acks.empty() ? "" : ":") << "\n";
      for (const auto& l : acks) io.out << "  " << l << "\n";
    }
  }
  if (a.expect > 0 && static_cast<int64_t>(acks.size()) < a.expect)
    return base::FailedPrecondition(std::to_string(acks.size()) + " of " + std::to_string(a.expect) +
                                    " expected process(es) acknowledged");
  return base::Status::Ok();
}

}  // namespace

Command AddTriggerCommand(CLI::App& app) {
  auto args = std::make_shared<TriggerArgs>();
  auto* cmd = app.add_subcommand("trigger", "Open a capture window of N steps in a running job (on demand)");
  cmd->add_option("--steps", args->steps, "Capture the next N steps")->check(CLI::Range(1, 1000000));
  cmd->add_option("--decode-steps", args->decode_steps, "Capture N decode iterations of the next step")
      ->check(CLI::Range(1, 1000000));
  cmd->add_option("--run", args->run, "Only sessions of this run id");
  cmd->add_option("--host", args->host, "Only processes on this host");
  cmd->add_option("--pid", args->pid, "Only this process")->check(CLI::PositiveNumber);
  cmd->add_option("--ranks", args->ranks, "Only these ranks: 0,2-5");
  cmd->add_option("--role", args->role, "Only processes hosting this role");
  cmd->add_option("--expires", args->expires_s, "Seconds the request stays valid (default 600)")
      ->check(CLI::Range(1.0, 7 * 86400.0));
  cmd->add_option("--wait", args->wait_s, "Wait up to S seconds for sessions to acknowledge")
      ->check(CLI::Range(0.0, 86400.0));
  cmd->add_option("--expect", args->expect, "With --wait: stop at K acknowledgements; fewer is exit 2")
      ->check(CLI::Range(int64_t{1}, int64_t{1000000}));
  cmd->add_option("--dir", args->dir, "Request directory (default: $RLPROF_TRIGGER_DIR, $XDG_RUNTIME_DIR/rlprof, /tmp/rlprof-$UID "
                  "unless another user made it: then $HOME/.cache/rlprof/trigger)");
  cmd->add_flag("--json", args->json, "Print the request id, file and acknowledgements as JSON");
  return {cmd, [args](Io& io) { return Run(*args, io); }};
}

}  // namespace rlprof::cli
