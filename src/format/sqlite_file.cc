#include "src/format/sqlite_file.h"

#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>

namespace rlprof::format {

base::StatusOr<std::unique_ptr<SqliteFile>> SqliteFile::Create(const std::string& path, const Options& options) {
  std::unique_ptr<SqliteFile> f(new SqliteFile);
  f->path_ = path;
  f->tmp_ = options.tmp_path.empty() ? path + ".tmp." + std::to_string(::getpid()) : options.tmp_path;
  std::error_code ec;
  std::filesystem::remove(f->tmp_, ec);
  // One connection used by one thread: no SQLite mutexes.
  if (sqlite3_open_v2(f->tmp_.c_str(), &f->db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                      nullptr) != SQLITE_OK) {
    const std::string msg = f->db_ != nullptr ? sqlite3_errmsg(f->db_) : "out of memory";
    sqlite3_close(f->db_);
    f->db_ = nullptr;
    std::filesystem::remove(f->tmp_, ec);
    return base::IoError(path + ": cannot create database: " + msg);
  }
  // A fresh file written in one transaction and renamed into place: no journal, no fsync and
  // no locking are needed.
  std::string pragmas;
  if (options.page_size > 0) pragmas += "PRAGMA page_size=" + std::to_string(options.page_size) + "; ";
  pragmas += "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA locking_mode=EXCLUSIVE; ";
  if (options.cache_kib > 0) pragmas += "PRAGMA cache_size=-" + std::to_string(options.cache_kib) + "; ";
  pragmas += "BEGIN";
  RLPROF_RETURN_IF_ERROR(f->Exec(pragmas.c_str(), "begin"));
  return f;
}

SqliteFile::~SqliteFile() {
  std::error_code ec;
  if (db_ != nullptr) {
    FinalizeAll();
    sqlite3_close(db_);  // not committed: the partial file goes
  }
  if (db_ != nullptr || closed_) std::filesystem::remove(tmp_, ec);  // never published
}

base::Status SqliteFile::Gone() const { return base::IoError(path_ + ": database already failed or committed"); }

void SqliteFile::FinalizeAll() {
  while (sqlite3_stmt* s = sqlite3_next_stmt(db_, nullptr)) sqlite3_finalize(s);
}

base::Status SqliteFile::Fail(std::string_view what) {
  std::string msg(what);
  if (db_ != nullptr) msg += std::string(": ") + sqlite3_errmsg(db_);
  if (db_ != nullptr) {
    FinalizeAll();
    sqlite3_close(db_);
    db_ = nullptr;
  }
  closed_ = false;
  std::error_code ec;
  std::filesystem::remove(tmp_, ec);
  return base::IoError(path_ + ": " + msg);
}

base::Status SqliteFile::Exec(const char* sql, std::string_view what) {
  if (db_ == nullptr) return Gone();
  if (sqlite3_exec(db_, sql, nullptr, nullptr, nullptr) != SQLITE_OK) return Fail(what);
  return base::Status::Ok();
}

base::StatusOr<sqlite3_stmt*> SqliteFile::Prepare(std::string_view sql, std::string_view what) {
  if (db_ == nullptr) return Gone();
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &s, nullptr) != SQLITE_OK) return Fail(what);
  return s;
}

void SqliteFile::Finalize(sqlite3_stmt* stmt) {
  if (db_ != nullptr) sqlite3_finalize(stmt);
}

base::Status SqliteFile::Step(sqlite3_stmt* stmt, std::string_view what) {
  const int rc = sqlite3_step(stmt);
  if (rc != SQLITE_DONE && rc != SQLITE_ROW) return Fail(what);
  sqlite3_reset(stmt);
  sqlite3_clear_bindings(stmt);
  return base::Status::Ok();
}

base::Status SqliteFile::Commit() {
  RLPROF_RETURN_IF_ERROR(Close());
  return Publish();
}

base::Status SqliteFile::Close() {
  if (db_ == nullptr) return Gone();
  FinalizeAll();
  if (sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK) return Fail("commit");
  const int rc = sqlite3_close(db_);
  db_ = nullptr;
  if (rc != SQLITE_OK) {
    std::error_code ec;
    std::filesystem::remove(tmp_, ec);
    return base::IoError(path_ + ": close failed");
  }
  closed_ = true;
  return base::Status::Ok();
}

base::Status SqliteFile::Publish() {
  if (!closed_) return base::IoError(path_ + ": database not closed, or already published");
  closed_ = false;
  std::error_code ec;
  std::filesystem::rename(tmp_, path_, ec);
  if (ec) {
    std::filesystem::remove(tmp_, ec);
    return base::IoError(path_ + ": cannot rename into place: " + ec.message());
  }
  return base::Status::Ok();
}

}  // namespace rlprof::format
