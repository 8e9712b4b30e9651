// One golden-file check for every test binary (header-only, test code only): with
// RLPROF_UPDATE_GOLDEN set (to anything) the file is rewritten from `actual`; otherwise the file
// must hold exactly `actual`, and a mismatch names the file and its first differing line.
//
//   EXPECT_GOLDEN(path, text);      // or ASSERT_TRUE(base::MatchesGolden(path, text))
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>

#include "src/base/files.h"

namespace rlprof::base {

inline bool UpdatingGoldens() { return std::getenv("RLPROF_UPDATE_GOLDEN") != nullptr; }

inline ::testing::AssertionResult MatchesGolden(const std::string& path, const std::string& actual) {
  if (UpdatingGoldens()) {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
    base::Status s = base::WriteFileAtomic(path, actual);
    if (!s.ok()) return ::testing::AssertionFailure() << "cannot rewrite " << path << ": " << s.message();
    return ::testing::AssertionSuccess();
  }
  auto expected = base::ReadFile(path);
  if (!expected.ok())
    return ::testing::AssertionFailure() << path << " is missing; run with RLPROF_UPDATE_GOLDEN=1 to create it";
  if (*expected == actual) return ::testing::AssertionSuccess();
  std::istringstream got(actual), want(*expected);
  std::string g, w;
  int line = 0;
  while (true) {
    ++line;
    const bool more_g = static_cast<bool>(std::getline(got, g));
    const bool more_w = static_cast<bool>(std::getline(want, w));
    if (g != w || more_g != more_w) break;
    if (!more_g) break;
  }
  return ::testing::AssertionFailure()
         << "golden mismatch: " << path << " at line " << line << "\n  got:      " << g
         << "\n  expected: " << w << "\nIf the change is intended, regenerate with RLPROF_UPDATE_GOLDEN=1.";
}

}  // namespace rlprof::base

#define EXPECT_GOLDEN(path, actual) EXPECT_TRUE(::rlprof::base::MatchesGolden((path), (actual)))
