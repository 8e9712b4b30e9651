// Helpers for the capture runtime's tests: plans built in code, fresh temporary save paths,
// manifest reading.
#ifndef RLPROF_SRC_RUNTIME_RUNTIME_TEST_UTIL_H_
#define RLPROF_SRC_RUNTIME_RUNTIME_TEST_UTIL_H_

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "rlprof/config/plan.h"
#include "src/base/files.h"

namespace rlprof::runtime::testing_util {

// A fresh, empty directory under the test temp dir.
inline std::string FreshDir(const std::string& tag) {
  static std::atomic<int> n{0};
  std::string d = ::testing::TempDir() + "rlprof-rt-" + std::to_string(getpid()) + "-" + tag + "-" +
                  std::to_string(n++);
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

// End-to-end capture of `steps` for role "actor" on every rank.
inline config::Plan MakePlan(const std::string& save_path, std::vector<int64_t> steps,
                             config::CaptureMode mode = config::CaptureMode::kEndToEnd) {
  config::Plan p;
  p.tool = config::Tool::kRlprof;
  p.steps.kind = config::StepSelection::Kind::kList;
  p.steps.list = std::move(steps);
  p.save_path = save_path;
  config::RolePlan r;
  r.role = "actor";
  r.block_path = "rlprof.roles.actor";
  r.enabled = true;
  r.all_ranks = true;
  r.mode = mode;
  p.roles.push_back(r);
  return p;
}

inline nlohmann::json ReadManifest(const std::string& dir) {
  auto text = base::ReadFile(dir + "/manifest.json");
  if (!text.ok()) {
    ADD_FAILURE() << text.status().message();
    return {};
  }
  return nlohmann::json::parse(*text);
}

// Every directory holding a manifest.json under `root`, sorted.
inline std::vector<std::string> FindCaptures(const std::string& root) {
  std::vector<std::string> out;
  if (!std::filesystem::exists(root)) return out;
  for (auto& e : std::filesystem::recursive_directory_iterator(root))
    if (e.is_regular_file() && e.path().filename() == "manifest.json")
      out.push_back(e.path().parent_path().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace rlprof::runtime::testing_util

#endif  // RLPROF_SRC_RUNTIME_RUNTIME_TEST_UTIL_H_
