#include "src/format/sqlite_file.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "src/format/test_util.h"

namespace rlprof::format {
namespace {

namespace fs = std::filesystem;

int64_t CountRows(const std::string& path) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, "SELECT COUNT(*), SUM(x) FROM t", -1, &st, nullptr), SQLITE_OK);
  int64_t n = -1;
  if (sqlite3_step(st) == SQLITE_ROW) n = sqlite3_column_int64(st, 0) * 1000 + sqlite3_column_int64(st, 1);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return n;
}

TEST(SqliteFileTest, WritesInOneTransactionAndRenamesIntoPlace) {
  const std::string path = TestDir() + "/a.db";
  {
    auto f = SqliteFile::Create(path, {.page_size = 65536, .cache_kib = 1024});
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    ASSERT_TRUE((*f)->Exec("CREATE TABLE t(x INTEGER)", "create t").ok());
    auto ins = (*f)->Prepare("INSERT INTO t VALUES(?)", "prepare t");
    ASSERT_TRUE(ins.ok());
    for (int i = 1; i <= 3; ++i) {
      sqlite3_bind_int64(*ins, 1, i);
      ASSERT_TRUE((*f)->Step(*ins, "insert t").ok());
    }
    EXPECT_FALSE(fs::exists(path));  // nothing at the target before the commit
    EXPECT_TRUE(fs::exists(path + ".tmp." + std::to_string(::getpid())));
    ASSERT_TRUE((*f)->Commit().ok());  // finalizes the statement it still owns
    EXPECT_FALSE((*f)->Exec("SELECT 1", "again").ok());
  }
  EXPECT_EQ(CountRows(path), 3 * 1000 + 6);
  EXPECT_FALSE(fs::exists(path + ".tmp." + std::to_string(::getpid())));
}

TEST(SqliteFileTest, AFailureNamesThePathAndTheStepAndRemovesTheFile) {
  const std::string path = TestDir() + "/b.db";
  auto f = SqliteFile::Create(path, {.tmp_path = path + ".tmp"});
  ASSERT_TRUE(f.ok());
  base::Status st = (*f)->Exec("CREATE TABLE (", "create broken");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), base::StatusCode::kIoError);
  EXPECT_NE(st.message().find(path + ": create broken: "), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("syntax error"), std::string::npos) << st.message();
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  EXPECT_NE((*f)->Commit().message().find("already failed or committed"), std::string::npos);
  EXPECT_FALSE(fs::exists(path));
}

TEST(SqliteFileTest, DestroyedBeforePublishLeavesThePathAsItWas) {
  const std::string path = TestDir() + "/c.db";
  {
    auto old = SqliteFile::Create(path);
    ASSERT_TRUE(old.ok());
    ASSERT_TRUE((*old)->Exec("CREATE TABLE t(x INTEGER); INSERT INTO t VALUES(7)", "old").ok());
    ASSERT_TRUE((*old)->Commit().ok());
  }
  for (bool closed : {false, true}) {
    auto f = SqliteFile::Create(path, {.tmp_path = path + ".tmp"});
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE((*f)->Exec("CREATE TABLE t(x INTEGER)", "create").ok());
    if (closed) {
      ASSERT_TRUE((*f)->Close().ok());
      EXPECT_TRUE(fs::exists(path + ".tmp"));
    }
    f->reset();
    EXPECT_FALSE(fs::exists(path + ".tmp"));
    EXPECT_EQ(CountRows(path), 1 * 1000 + 7) << "closed " << closed;
  }
}

TEST(SqliteFileTest, AnUncreatableFileIsAnIoErrorNamingThePath) {
  const std::string path = TestDir() + "/no/such/dir/d.db";
  auto f = SqliteFile::Create(path);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), base::StatusCode::kIoError);
  EXPECT_NE(f.status().message().find(path + ": cannot create database: "), std::string::npos)
      << f.status().message();
}

}  // namespace
}  // namespace rlprof::format
