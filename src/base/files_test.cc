#include "src/base/files.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <vector>

namespace rlprof::base {
namespace {

namespace fs = std::filesystem;

class FilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("rlprof_files_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(FilesTest, WriteThenReadRoundTrips) {
  ASSERT_TRUE(MakeDirs((dir_ / "a/b").string()).ok());
  std::string path = (dir_ / "a/b/f.txt").string();
  ASSERT_TRUE(WriteFileAtomic(path, std::string("hello\0world", 11)).ok());
  auto data = ReadFile(path);
  ASSERT_TRUE(data.ok());
  EXPECT_EQ(*data, std::string("hello\0world", 11));
}

TEST_F(FilesTest, MissingFileIsNotFound) {
  auto data = ReadFile((dir_ / "nope").string());
  EXPECT_EQ(data.status().code(), StatusCode::kNotFound);
}

TEST_F(FilesTest, WriteIntoUnwritablePlaceFails) {
  auto s = WriteFileAtomic("/proc/rlprof_cannot_write_here", "x");
  EXPECT_EQ(s.code(), StatusCode::kIoError);
}

TEST(ResidentSetTest, GrowsWhenTouchedMemoryGrows) {
  const int64_t before = ResidentSetBytes();
  ASSERT_GT(before, 0);
  std::vector<char> block(64 << 20);
  for (size_t i = 0; i < block.size(); i += 4096) block[i] = 1;  // fault every page in
  EXPECT_GE(ResidentSetBytes(), before + (48 << 20));
  EXPECT_EQ(block[4096], 1);
}

}  // namespace
}  // namespace rlprof::base
