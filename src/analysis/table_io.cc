// Table writers: CSV, aligned text, JSON and SQLite — all driven by Table::columns.
#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "src/analysis/tables.h"

namespace rlprof::analysis {

namespace {

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
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
  for (size_t i = 0; i < t.columns.size(); ++i) {
    if (i) out += ',';
    // Bare names, as torch_npu writes them; units are documented (docs/analysis.md).
    out += CsvField(t.columns[i].name);
  }
  out += '\n';
  for (const auto& r : t.rows) {
    for (size_t i = 0; i < r.size(); ++i) {
      if (i) out += ',';
      out += CsvField(FormatCell(r[i]));
    }
    out += '\n';
  }
  return out;
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
  const std::string tmp = path + ".tmp";
  std::error_code ec;
  std::filesystem::remove(tmp, ec);
  sqlite3* db = nullptr;
  if (sqlite3_open(tmp.c_str(), &db) != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return base::IoError(path + ": cannot create database: " + msg);
  }
  auto fail = [&](const std::string& what) {
    std::string msg = what + ": " + sqlite3_errmsg(db);
    sqlite3_close(db);
    std::filesystem::remove(tmp, ec);
    return base::IoError(path + ": " + msg);
  };
  auto exec = [&](const std::string& sql) { return sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr); };
  if (exec("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; BEGIN") != SQLITE_OK) return fail("begin");
  if (exec("CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);"
           "INSERT INTO meta VALUES('format','rlprof-analysis'),('schema_version','1')") != SQLITE_OK)
    return fail("meta");
  for (const auto& t : tables) {
    std::string create = "CREATE TABLE " + Quoted(t.name) + "(";
    std::string insert = "INSERT INTO " + Quoted(t.name) + " VALUES(";
    for (size_t i = 0; i < t.columns.size(); ++i) {
      const auto& c = t.columns[i];
      if (i) {
        create += ", ";
        insert += ",";
      }
      create += Quoted(c.name) + (c.type == ColumnType::kInt ? " INTEGER" : c.type == ColumnType::kReal ? " REAL" : " TEXT");
      insert += "?";
    }
    create += ")";
    insert += ")";
    if (exec(create) != SQLITE_OK) return fail("create " + t.name);
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, insert.c_str(), -1, &st, nullptr) != SQLITE_OK) return fail("prepare " + t.name);
    for (const auto& r : t.rows) {
      for (size_t i = 0; i < r.size(); ++i) {
        const int k = static_cast<int>(i + 1);
        const Cell& c = r[i];
        if (std::holds_alternative<int64_t>(c)) sqlite3_bind_int64(st, k, std::get<int64_t>(c));
        else if (std::holds_alternative<double>(c) && !std::isnan(std::get<double>(c)))
          sqlite3_bind_double(st, k, std::get<double>(c));
        else if (std::holds_alternative<std::string>(c))
          sqlite3_bind_text(st, k, std::get<std::string>(c).c_str(), -1, SQLITE_TRANSIENT);
        else sqlite3_bind_null(st, k);
      }
      if (sqlite3_step(st) != SQLITE_DONE) {
        sqlite3_finalize(st);
        return fail("insert " + t.name);
      }
      sqlite3_reset(st);
    }
    sqlite3_finalize(st);
  }
  if (exec("COMMIT") != SQLITE_OK) return fail("commit");
  if (sqlite3_close(db) != SQLITE_OK) return base::IoError(path + ": close failed");
  std::filesystem::rename(tmp, path, ec);
  if (ec) return base::IoError(path + ": " + ec.message());
  return base::Status::Ok();
}

}  // namespace rlprof::analysis
