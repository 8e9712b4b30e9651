// The one way rlprof writes a SQLite database (the `.db` export of captures, the analysis's
// `analysis.db`): a fresh temporary file beside the target, one connection used by one thread,
// one transaction, no journal and no fsync (a crash leaves only the temporary file), renamed
// into place at the end. Destroyed before it is published (or after a failure), the
// temporary file is removed and `path` is left as it was.
//
//   RLPROF_ASSIGN_OR_RETURN(auto f, SqliteFile::Create("out.db"));
//   RLPROF_RETURN_IF_ERROR(f->Exec("CREATE TABLE t(x INTEGER)", "create t"));
//   RLPROF_ASSIGN_OR_RETURN(sqlite3_stmt* ins, f->Prepare("INSERT INTO t VALUES(?)", "prepare t"));
//   sqlite3_bind_int64(ins, 1, 42);
//   RLPROF_RETURN_IF_ERROR(f->Step(ins, "insert t"));
//   RLPROF_RETURN_IF_ERROR(f->Commit());
//
// Every failure is an IoError "PATH: WHAT: SQLITE'S MESSAGE", after which the file is closed
// and removed (later calls fail with "already failed or committed").
// Thread-safety: one thread per SqliteFile.
#ifndef RLPROF_SRC_FORMAT_SQLITE_FILE_H_
#define RLPROF_SRC_FORMAT_SQLITE_FILE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "src/base/status.h"

struct sqlite3;
struct sqlite3_stmt;

namespace rlprof::format {

class SqliteFile {
 public:
  struct Options {
    std::string tmp_path;      // default: PATH.tmp.<pid>
    int page_size = 0;         // bytes; 0: SQLite's default
    int64_t cache_kib = 0;     // page cache; 0: SQLite's default (2 MiB)
  };
  // Opens the temporary file and begins the transaction.
  static base::StatusOr<std::unique_ptr<SqliteFile>> Create(const std::string& path, const Options& options);
  static base::StatusOr<std::unique_ptr<SqliteFile>> Create(const std::string& path) { return Create(path, {}); }
  ~SqliteFile();
  SqliteFile(const SqliteFile&) = delete;
  SqliteFile& operator=(const SqliteFile&) = delete;

  sqlite3* db() const { return db_; }  // for sqlite3_bind_*; null once failed or closed
  const std::string& path() const { return path_; }

  base::Status Exec(const char* sql, std::string_view what);
  // A statement owned by the file (finalized by Finalize, Close, a failure or the destructor).
  base::StatusOr<sqlite3_stmt*> Prepare(std::string_view sql, std::string_view what);
  void Finalize(sqlite3_stmt* stmt);
  // Steps an INSERT (or any statement without rows), then resets it and clears its bindings.
  base::Status Step(sqlite3_stmt* stmt, std::string_view what);
  // Closes and removes the file; returns the IoError naming `what` and SQLite's last message.
  base::Status Fail(std::string_view what);

  base::Status Commit();  // Close, then Publish
  // Commit in two steps, for a writer that learns late whether the file is wanted: Close
  // commits and closes the temporary file; Publish renames it into place.
  base::Status Close();
  base::Status Publish();

 private:
  SqliteFile() = default;
  void FinalizeAll();
  base::Status Gone() const;
  sqlite3* db_ = nullptr;
  bool closed_ = false;  // Close done, Publish not yet
  std::string path_, tmp_;
};

}  // namespace rlprof::format

#endif  // RLPROF_SRC_FORMAT_SQLITE_FILE_H_
