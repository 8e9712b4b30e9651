// Helpers shared by the format tests: a fresh temporary directory per test.
#ifndef RLPROF_SRC_FORMAT_TEST_UTIL_H_
#define RLPROF_SRC_FORMAT_TEST_UTIL_H_

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace rlprof::format {

inline std::filesystem::path TestRoot() {
  return std::filesystem::temp_directory_path() / ("rlprof_" + std::to_string(::getpid()));
}

// Removes the test binary's temporary tree when the process exits.
struct TestRootCleanup {
  ~TestRootCleanup() {
    std::error_code ec;
    std::filesystem::remove_all(TestRoot(), ec);
  }
};
inline TestRootCleanup test_root_cleanup;

// <tmp>/rlprof_<pid>/<suite>.<test>, emptied.
inline std::string TestDir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::filesystem::path p =
      TestRoot() / (std::string(info->test_suite_name()) + "." + info->name());
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p.string();
}

}  // namespace rlprof::format

#endif  // RLPROF_SRC_FORMAT_TEST_UTIL_H_
