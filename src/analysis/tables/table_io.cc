// Table writers: CSV, aligned text, JSON and SQLite — all driven by Table::columns.
#include <fmt/compile.h>
#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string_view>
#include <unordered_map>

#include "src/analysis/tables/tables.h"
#include "src/format/sqlite_file.h"

namespace rlprof::analysis {

namespace {

// Appends `s` as one CSV field (quoted only when it holds a separator, a quote or a newline).
// One vectorized pass to decide, then whole runs between quotes appended at once: kernel names
// are long and most hold commas (`find_first_of` cost a memchr per byte).
void AppendCsvField(std::string* out, std::string_view s) {
  bool special = false;  // no early exit: the compiler vectorizes the scan
  for (char c : s) special |= (c == ',') | (c == '"') | (c == '\n') | (c == '\r');
  if (!special) {
    out->append(s);
    return;
  }
  out->push_back('"');
  for (size_t at = 0;;) {
    const size_t q = s.find('"', at);
    if (q == std::string_view::npos) {
      out->append(s.substr(at));
      break;
    }
    out->append(s.substr(at, q + 1 - at));  // through the quote, then the quote again
    out->push_back('"');
    at = q + 1;
  }
  out->push_back('"');
}

// Appends FormatCell(c) as a CSV field without building a string per cell (numbers never need
// quoting: fmt writes digits, '.', 'e', '+', '-', "inf"). The format is compiled (no format
// string parsed per cell): the same text as fmt::format("{}", v).
void AppendCsvCell(std::string* out, const Cell& c) {
  if (const auto* i = std::get_if<int64_t>(&c)) {
    const fmt::format_int f(*i);
    out->append(f.data(), f.size());
  } else if (const auto* d = std::get_if<double>(&c)) {
    const double v = *d;
    if (v == std::trunc(v) && std::fabs(v) < 9007199254740992.0 && !(v == 0 && std::signbit(v))) {
      // A whole number below 2^53 (µs of whole-µs timestamps, most of a Kineto trace's): fmt's
      // shortest form is its digits, written without the shortest-digits search.
      const fmt::format_int f(static_cast<int64_t>(v));
      out->append(f.data(), f.size());
      return;
    }
    char buf[64];  // a double's shortest form is at most 24 characters ("-2.2250738585072014e-308")
    if (!std::isnan(v)) out->append(buf, fmt::format_to(buf, FMT_COMPILE("{}"), v));
  } else if (const auto* s = std::get_if<std::string>(&c)) {
    AppendCsvField(out, *s);
  }
}

std::string Quoted(const std::string& ident) {
  std::string out = "\"";
  for (char c : ident) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string FormatCell(const Cell& c) {
  if (std::holds_alternative<int64_t>(c)) return std::to_string(std::get<int64_t>(c));
  if (std::holds_alternative<double>(c)) {
    double d = std::get<double>(c);
    if (std::isnan(d)) return "";
    return fmt::format("{}", d);
  }
  if (std::holds_alternative<std::string>(c)) return std::get<std::string>(c);
  return "";
}

std::string ToCsv(const Table& t) {
  std::string out;
  ToCsv(t, &out);
  return out;
}

void ToCsv(const Table& t, std::string* buf) {
  std::string& out = *buf;
  out.clear();
  // One allocation: text cells at their length (+ quotes), numbers at up to 24 characters.
  size_t size = 64;
  for (const auto& r : t.rows) {
    size += r.size() + 1;
    for (const auto& c : r) {
      const auto* s = std::get_if<std::string>(&c);
      size += s ? s->size() + 2 : 24;
    }
  }
  out.reserve(size);
  for (size_t i = 0; i < t.columns.size(); ++i) {
    if (i) out += ',';
    // Bare names, as torch_npu writes them; units are documented (docs/analysis.md).
    AppendCsvField(&out, t.columns[i].name);
  }
  out += '\n';
  for (const auto& r : t.rows) {
    for (size_t i = 0; i < r.size(); ++i) {
      if (i) out += ',';
      AppendCsvCell(&out, r[i]);
    }
    out += '\n';
  }
}

std::string CommonUnit(const Table& t) {
  std::string unit;
  for (const auto& c : t.columns) {
    if (c.unit.empty()) continue;
    if (!unit.empty() && unit != c.unit) return "";
    unit = c.unit;
  }
  return unit;
}

std::string ToText(const Table& t) {
  const size_t n = t.columns.size();
  const bool common = !CommonUnit(t).empty();
  std::vector<std::string> head(n);
  std::vector<size_t> width(n);
  for (size_t i = 0; i < n; ++i) {
    head[i] = t.columns[i].name;
    if (!common && !t.columns[i].unit.empty() && head[i].find(t.columns[i].unit) == std::string::npos)
      head[i] += " (" + t.columns[i].unit + ")";
    width[i] = head[i].size();
  }
  std::vector<std::vector<std::string>> cells;
  for (const auto& r : t.rows) {
    std::vector<std::string> row(n);
    for (size_t i = 0; i < n && i < r.size(); ++i) {
      if (std::holds_alternative<double>(r[i])) {
        const double d = std::get<double>(r[i]);
        row[i] = std::isnan(d) ? "-" : fmt::format("{:.3f}", d);
      } else {
        row[i] = FormatCell(r[i]);
        // Terminal only: long kernel names are cut (CSV / JSON / db keep them whole).
        constexpr size_t kMaxText = 60;
        if (row[i].size() > kMaxText) row[i] = row[i].substr(0, kMaxText - 3) + "...";
      }
      width[i] = std::max(width[i], row[i].size());
    }
    cells.push_back(std::move(row));
  }
  auto line = [&](const std::vector<std::string>& v) {
    std::string out;
    for (size_t i = 0; i < n; ++i) {
      if (i) out += "  ";
      const bool right = t.columns[i].type != ColumnType::kText;
      const size_t pad = width[i] - v[i].size();
      if (right) out += std::string(pad, ' ') + v[i];
      else out += v[i] + (i + 1 < n ? std::string(pad, ' ') : "");
    }
    return out + "\n";
  };
  std::string out = line(head);
  for (const auto& r : cells) out += line(r);
  return out;
}

nlohmann::json ToJson(const Table& t) {
  nlohmann::json cols = nlohmann::json::array();
  for (const auto& c : t.columns) {
    const char* type = c.type == ColumnType::kInt ? "int" : c.type == ColumnType::kReal ? "real" : "text";
    cols.push_back({{"name", c.name}, {"type", type}, {"unit", c.unit}});
  }
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : t.rows) {
    nlohmann::json row = nlohmann::json::array();
    for (const auto& c : r) {
      if (std::holds_alternative<int64_t>(c)) row.push_back(std::get<int64_t>(c));
      else if (std::holds_alternative<double>(c) && !std::isnan(std::get<double>(c)))
        row.push_back(std::get<double>(c));
      else if (std::holds_alternative<std::string>(c)) row.push_back(std::get<std::string>(c));
      else row.push_back(nullptr);
    }
    rows.push_back(std::move(row));
  }
  return {{"columns", cols}, {"rows", rows}};
}

base::Status WriteSqlite(const std::vector<Table>& tables, const std::string& path) {
  std::vector<SqliteTable> whole;
  whole.reserve(tables.size());
  for (const auto& t : tables) whole.push_back({{{"", &t}}, false});
  return WriteSqliteParts(whole, path);
}

base::Status WriteSqliteParts(const std::vector<SqliteTable>& tables, const std::string& path) {
  RLPROF_ASSIGN_OR_RETURN(std::unique_ptr<SqliteWriter> w, SqliteWriter::Open(path));
  for (const auto& t : tables) RLPROF_RETURN_IF_ERROR(w->Add(t));
  return w->Commit();
}

// A created table: its column count and its prepared INSERTs of kBatch rows and of one row.
struct SqliteWriter::TableInserts {
  std::string name;
  size_t ncols = 0;
  bool with_input = false;
  std::vector<bool> interned;  // per column of the table (input first): stored as a string id
  sqlite3_stmt* batch = nullptr;
  sqlite3_stmt* single = nullptr;
};

// Each interned text once: id by text (looked up by view), and the prepared INSERT of new ones.
struct SqliteWriter::Strings {
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };
  std::unordered_map<std::string, int64_t, Hash, std::equal_to<>> ids;
  sqlite3_stmt* insert = nullptr;
};

namespace {
// INSERT … VALUES(row),(row),…: up to kBatch rows per step (fewer VDBE program runs and resets
// per row).
constexpr size_t kBatch = 32;
}  // namespace

SqliteWriter::SqliteWriter() = default;

// The id of `text` in `strings`, inserting it on first use (ids 1, 2, … in order of first use).
base::StatusOr<int64_t> SqliteWriter::StringId(std::string_view text) {
  if (auto it = strings_->ids.find(text); it != strings_->ids.end()) return it->second;
  const int64_t id = static_cast<int64_t>(strings_->ids.size()) + 1;
  sqlite3_stmt* st = strings_->insert;
  sqlite3_bind_int64(st, 1, id);
  sqlite3_bind_text(st, 2, text.data(), static_cast<int>(text.size()), SQLITE_STATIC);
  RLPROF_RETURN_IF_ERROR(file_->Step(st, "insert strings"));
  strings_->ids.emplace(std::string(text), id);
  return id;
}

base::StatusOr<std::unique_ptr<SqliteWriter>> SqliteWriter::Open(const std::string& path) {
  std::unique_ptr<SqliteWriter> w(new SqliteWriter);
  // A page cache of up to 256 MiB keeps the pages in memory until the commit writes each once
  // (with SQLite's default 2 MiB the cache spills and pages are written more than once). 64 KiB
  // pages (SQLite's largest): a quarter less CPU writing the run's tables than 4 KiB ones (fewer
  // b-tree pages, cells split over fewer overflow pages, 16x fewer page writes at the commit).
  RLPROF_ASSIGN_OR_RETURN(w->file_, format::SqliteFile::Create(
                                        path, {.tmp_path = path + ".tmp", .page_size = 65536, .cache_kib = 262144}));
  RLPROF_RETURN_IF_ERROR(w->file_->Exec("CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);"
                                        "INSERT INTO meta VALUES('format','rlprof-analysis'),('schema_version','1')",
                                        "meta"));
  return w;
}

SqliteWriter::~SqliteWriter() = default;

base::Status SqliteWriter::Add(const SqliteTable& st_parts) {
  if (file_->db() == nullptr) return Gone();
  if (st_parts.parts.empty()) return base::Status::Ok();
  RLPROF_ASSIGN_OR_RETURN(size_t id, Create(*st_parts.parts.front().second, st_parts.with_input));
  for (const auto& [input, t] : st_parts.parts) RLPROF_RETURN_IF_ERROR(Append(id, input, *t));
  return base::Status::Ok();
}

base::Status SqliteWriter::Gone() const {
  return base::IoError(file_->path() + ": database already failed or committed");
}

base::StatusOr<size_t> SqliteWriter::Create(const Table& like, bool with_input) {
  if (file_->db() == nullptr) return Gone();
  auto t = std::make_unique<TableInserts>();
  t->name = like.name;
  t->with_input = with_input;
  const int shift = with_input ? 1 : 0;  // the `input` column, first
  t->ncols = like.columns.size() + shift;
  bool any = false;
  for (const auto& c : like.columns) any |= c.repeats && c.type == ColumnType::kText;
  t->interned.assign(t->ncols, false);
  if (any) {
    if (with_input) t->interned[0] = true;
    for (size_t i = 0; i < like.columns.size(); ++i)
      t->interned[i + shift] = like.columns[i].repeats && like.columns[i].type == ColumnType::kText;
  }
  auto type = [](ColumnType c) { return c == ColumnType::kInt ? " INTEGER" : c == ColumnType::kReal ? " REAL" : " TEXT"; };
  std::vector<std::string> names;  // the table's columns, input first
  if (shift) names.push_back("input");
  for (const auto& c : like.columns) names.push_back(c.name);
  // The rows' table: `like.name`, or `<name>_rows` (ids for the interned columns) under a view.
  t->name = any ? like.name + "_rows" : like.name;
  std::string create = "CREATE TABLE " + Quoted(t->name) + "(";
  for (size_t i = 0; i < names.size(); ++i) {
    const char* ty = t->interned[i] ? " INTEGER" : i < static_cast<size_t>(shift) ? " TEXT" : type(like.columns[i - shift].type);
    create += (i ? ", " : "") + Quoted(names[i]) + ty;
  }
  create += ")";
  if (any) {
    if (!strings_) {
      RLPROF_RETURN_IF_ERROR(file_->Exec("CREATE TABLE strings(id INTEGER PRIMARY KEY, text TEXT)", "create strings"));
      strings_ = std::make_unique<Strings>();
      RLPROF_ASSIGN_OR_RETURN(strings_->insert, file_->Prepare("INSERT INTO strings VALUES(?,?)", "prepare strings"));
    }
    // SELECT * of the view: `like`'s columns, names and declared types (an interned column's is
    // strings.text's, TEXT), the rows in insertion order (the rows' table is scanned by rowid).
    std::string cols, joins;
    for (size_t i = 0; i < names.size(); ++i) {
      cols += i ? ", " : "";
      if (!t->interned[i]) {
        cols += "r." + Quoted(names[i]);
        continue;
      }
      const std::string s = "s" + std::to_string(i);
      cols += s + ".text AS " + Quoted(names[i]);
      joins += " LEFT JOIN strings AS " + s + " ON " + s + ".id = r." + Quoted(names[i]);
    }
    create += "; CREATE VIEW " + Quoted(like.name) + " AS SELECT " + cols + " FROM " + Quoted(t->name) + " AS r" +
              joins + " ORDER BY r.rowid";
  }
  RLPROF_RETURN_IF_ERROR(file_->Exec(create.c_str(), "create " + like.name));
  auto insert = [&](size_t rows) {
    std::string one = "(";
    for (size_t i = 0; i < t->ncols; ++i) one += i ? ",?" : "?";
    one += ")";
    std::string sql = "INSERT INTO " + Quoted(t->name) + " VALUES";
    for (size_t r = 0; r < rows; ++r) sql += (r ? "," : "") + one;
    return sql;
  };
  RLPROF_ASSIGN_OR_RETURN(t->batch, file_->Prepare(insert(kBatch), "prepare " + like.name));
  RLPROF_ASSIGN_OR_RETURN(t->single, file_->Prepare(insert(1), "prepare " + like.name));
  tables_.push_back(std::move(t));  // its statements belong to file_
  return tables_.size() - 1;
}

base::Status SqliteWriter::Append(size_t id, const std::string& input, const Table& rows) {
  if (file_->db() == nullptr) return Gone();
  if (id >= tables_.size()) return base::IoError(file_->path() + ": no such table");
  const TableInserts& t = *tables_[id];
  const int shift = t.with_input ? 1 : 0;
  int64_t input_id = 0;
  if (shift && t.interned[0]) {
    RLPROF_ASSIGN_OR_RETURN(input_id, StringId(input.c_str()));
  }
  const size_t total = rows.rows.size();
  size_t done = 0, in_stmt = 0;
  sqlite3_stmt* st = total >= kBatch ? t.batch : t.single;
  for (const auto& r : rows.rows) {
    const int base = static_cast<int>(in_stmt * t.ncols);
    if (shift && t.interned[0]) sqlite3_bind_int64(st, base + 1, input_id);
    else if (shift) sqlite3_bind_text(st, base + 1, input.c_str(), -1, SQLITE_STATIC);
    for (size_t i = 0; i + shift < t.ncols; ++i) {
      const int k = base + static_cast<int>(i) + 1 + shift;
      if (i >= r.size()) {
        sqlite3_bind_null(st, k);
        continue;
      }
      const Cell& c = r[i];
      // The rows outlive the statement's step: SQLite need not copy the text.
      if (const auto* v = std::get_if<int64_t>(&c)) sqlite3_bind_int64(st, k, *v);
      else if (const auto* d = std::get_if<double>(&c); d && !std::isnan(*d)) sqlite3_bind_double(st, k, *d);
      else if (const auto* s = std::get_if<std::string>(&c)) {
        if (t.interned[i + shift]) {
          // As bind_text with -1 would store it: up to a NUL.
          RLPROF_ASSIGN_OR_RETURN(int64_t sid, StringId(std::string_view(s->c_str())));
          sqlite3_bind_int64(st, k, sid);
        } else {
          sqlite3_bind_text(st, k, s->c_str(), -1, SQLITE_STATIC);
        }
      } else {
        sqlite3_bind_null(st, k);
      }
    }
    ++done;
    if (++in_stmt < (st == t.batch ? kBatch : 1)) continue;
    RLPROF_RETURN_IF_ERROR(file_->Step(st, "insert " + t.name));
    in_stmt = 0;
    st = total - done >= kBatch ? t.batch : t.single;
  }
  return base::Status::Ok();
}

base::Status SqliteWriter::Commit() { return file_->Commit(); }
base::Status SqliteWriter::Close() { return file_->Close(); }
base::Status SqliteWriter::Publish() { return file_->Publish(); }

}  // namespace rlprof::analysis
