#include "src/base/files.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "src/base/unprivileged_test_util.h"

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

// Replacing a file (exchanged with the new one, or renamed over it) leaves the new content and
// no temporary file.
TEST_F(FilesTest, ReplacingAFileLeavesTheNewContentAndNoTemporaryFile) {
  const std::string path = (dir_ / "m.json").string();
  ASSERT_TRUE(MakeDirs(dir_.string()).ok());
  ASSERT_TRUE(WriteNewFile(path, "{\"complete\": false}" + std::string(4096, ' ')).ok());
  ASSERT_TRUE(WriteFileAtomic(path, "{\"complete\": true}").ok());
  EXPECT_EQ(*ReadFile(path), "{\"complete\": true}");
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir_)) {
    ++files;
    EXPECT_EQ(e.path().filename(), "m.json");
  }
  EXPECT_EQ(files, 1);
}

TEST_F(FilesTest, MissingFileIsNotFound) {
  auto data = ReadFile((dir_ / "nope").string());
  EXPECT_EQ(data.status().code(), StatusCode::kNotFound);
}

TEST_F(FilesTest, WriteIntoUnwritablePlaceFails) {
  auto s = WriteFileAtomic("/proc/rlprof_cannot_write_here", "x");
  EXPECT_EQ(s.code(), StatusCode::kIoError);
}

TEST_F(FilesTest, OverwriteInPlaceRewritesAnExistingFileAndNeverCreatesOne) {
  ASSERT_TRUE(MakeDirs(dir_.string()).ok());
  const std::string path = (dir_ / "m.json").string();
  ASSERT_TRUE(WriteFileAtomic(path, std::string(100, ' ')).ok());
  ASSERT_TRUE(OverwriteFileInPlace(path, "{\"a\": 1}").ok());
  EXPECT_EQ(*ReadFile(path), "{\"a\": 1}");  // truncated to the new text
  EXPECT_EQ(OverwriteFileInPlace((dir_ / "absent").string(), "x").code(), StatusCode::kIoError);
  EXPECT_FALSE(PathExists((dir_ / "absent").string()));
}

// As a user who may not enter a directory (not root: CI runs as root, so the child drops to
// nobody), every helper reports the EACCES as a Status: none throws std::filesystem_error.
TEST_F(FilesTest, HelpersUnderADirectoryTheUserCannotEnterFailWithoutThrowing) {
  const std::string locked = testing_util::MakeForbiddenDir((dir_ / "locked").string());
  testing_util::ChildResult r = testing_util::RunUnprivileged([&] {
    if (MakeDirs(locked + "/sub/deeper").ok()) return 1;
    if (PathExists(locked + "/sub")) return 2;
    auto read = ReadFile(locked + "/file");
    if (read.ok() || read.status().code() != StatusCode::kIoError) return 3;  // EACCES, not "no such file"
    if (WriteFileAtomic(locked + "/file", "x").ok()) return 4;
    if (OverwriteFileInPlace(locked + "/file", "x").ok()) return 5;
    if (AbsolutePath(locked + "/a/../b") != locked + "/b") return 6;
    return 0;
  });
  testing_util::AllowAgain(locked);
  EXPECT_EQ(r.exit_code(), 0) << r.err;
}

// A directory that became read-only (or a full disk) stops WriteFileAtomic, which needs a new
// file; an existing file can still be rewritten in place.
TEST_F(FilesTest, OverwriteInPlaceWorksWhereNoNewFileCanBeCreated) {
  ASSERT_TRUE(MakeDirs((dir_ / "ro").string()).ok());
  testing_util::GiveToUnprivileged((dir_ / "ro").string());
  const std::string ro = (dir_ / "ro").string();
  testing_util::ChildResult r = testing_util::RunUnprivileged([&] {
    if (!WriteFileAtomic(ro + "/m.json", std::string(64, ' ')).ok()) return 1;
    if (chmod(ro.c_str(), 0555) != 0) return 2;
    if (WriteFileAtomic(ro + "/m.json", "new").ok()) return 3;  // cannot create the temporary
    if (!OverwriteFileInPlace(ro + "/m.json", "new").ok()) return 4;
    auto text = ReadFile(ro + "/m.json");
    if (!text.ok() || *text != "new") return 5;
    chmod(ro.c_str(), 0755);
    return 0;
  });
  EXPECT_EQ(r.exit_code(), 0) << r.err;
}

// What the process may use: the host's memory, or its cgroup's limit when lower (v2: its own
// group named in /proc/self/cgroup; v1: the memory controller's), read from a stand-in root.
TEST(MemoryLimitTest, TheHostsMemoryOrALowerCgroupLimit) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("rlprof_memlimit_" + std::to_string(::getpid()));
  fs::remove_all(root);
  auto put = [&](const std::string& rel, const std::string& text) {
    fs::create_directories((root / rel).parent_path());
    ASSERT_TRUE(WriteFileAtomic((root / rel).string(), text).ok());
  };
  put("proc/meminfo", "MemTotal:       16384 kB\nMemFree:         1024 kB\n");
  put("proc/self/cgroup", "0::/job\n");
  EXPECT_EQ(MemoryLimitBytes(root.string()), 16384 * 1024);        // no limit file
  put("sys/fs/cgroup/job/memory.max", "max\n");
  EXPECT_EQ(MemoryLimitBytes(root.string()), 16384 * 1024);        // "max": none
  put("sys/fs/cgroup/job/memory.max", "8388608\n");
  EXPECT_EQ(MemoryLimitBytes(root.string()), 8388608);             // the group's, lower
  put("proc/self/cgroup", "4:memory:/v1job\n0::/\n");
  put("sys/fs/cgroup/memory/v1job/memory.limit_in_bytes", "9223372036854771712\n");
  EXPECT_EQ(MemoryLimitBytes(root.string()), 16384 * 1024);        // v1 "unlimited"
  put("sys/fs/cgroup/memory/v1job/memory.limit_in_bytes", "4194304\n");
  EXPECT_EQ(MemoryLimitBytes(root.string()), 4194304);
  EXPECT_EQ(MemoryLimitBytes((root / "nothing").string()), -1);
  fs::remove_all(root);
  EXPECT_GT(MemoryLimitBytes(), 0);  // this machine's
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
