#include "src/config/reader.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "src/base/strings.h"

namespace rlprof::config {

std::string Describe(const YAML::Node& n) {
  if (!n.IsDefined()) return "nothing";
  if (n.IsNull()) return "null";
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a mapping";
  std::string s = n.Scalar();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return "'" + s + "'";
}

Ref Element(const Ref& list, size_t i) {
  Ref e;
  e.Set(list.node[i]);
  e.path = list.path;
  e.path.back() += "[" + std::to_string(i) + "]";
  e.line = e.node.Mark().is_null() ? list.line : e.node.Mark().line + 1;
  e.alias = list.alias;
  e.alias_line = list.alias_line;
  return e;
}

std::string AllowedList(const std::vector<std::string>& allowed) {
  return base::Join(allowed, ", ");
}

namespace {

std::optional<int64_t> ParseInt(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') {
    // YAML also allows 1_000 and 1e3-style integers in OmegaConf; accept underscores.
    std::string t;
    for (char c : s)
      if (c != '_') t += c;
    if (t == s) return std::nullopt;
    return ParseInt(t);
  }
  return v;
}

std::optional<bool> ParseBool(const std::string& s) {
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  return std::nullopt;
}

}  // namespace

void Reader::CheckKeys(const Ref& block, const std::vector<std::string>& allowed) {
  if (!block.present() || !block.node.IsMap()) return;
  for (auto it = block.node.begin(); it != block.node.end(); ++it) {
    std::string key = it->first.IsScalar() ? it->first.Scalar() : "?";
    if (key == "_target_") continue;
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    Ref r;
    r.path = block.path;
    r.path.push_back(key);
    r.line = it->first.Mark().is_null() ? block.line : it->first.Mark().line + 1;
    r.alias = block.alias;
    r.alias_line = block.alias_line;
    std::string hint = base::NearestWord(key, allowed);
    doc_.Error(r, "unknown key" + (hint.empty() ? "" : "; did you mean '" + hint + "'?") +
                      " (allowed: " + AllowedList(allowed) + ")");
  }
}

bool Reader::IsBlock(const Ref& r) {
  if (r.null() || r.node.IsMap()) return true;
  doc_.Error(r, "expected a mapping, got " + Describe(r.node));
  return false;
}

std::optional<bool> Reader::AsBool(const Ref& r) {
  if (r.null()) return std::nullopt;
  if (r.node.IsScalar())
    if (auto b = ParseBool(r.node.Scalar())) return b;
  doc_.Error(r, "expected true or false, got " + Describe(r.node));
  return std::nullopt;
}

std::optional<int64_t> Reader::AsInt(const Ref& r, int64_t min) {
  if (r.null()) return std::nullopt;
  if (r.node.IsScalar()) {
    if (auto v = ParseInt(r.node.Scalar())) {
      if (*v < min) {
        doc_.Error(r, Describe(r.node) + " is out of range; must be >= " + std::to_string(min));
        return std::nullopt;
      }
      return v;
    }
  }
  doc_.Error(r, "expected an integer, got " + Describe(r.node));
  return std::nullopt;
}

std::optional<int64_t> Reader::AsListInt(const Ref& e, int64_t min, const std::string& what) {
  // verl and MindSpeed-RL test `x in list` with Python ints: a null or a quoted number in the
  // list matches nothing there, so it is an error here rather than a silent conversion.
  if (e.node.IsNull() || (e.node.IsScalar() && e.node.Scalar().empty() && e.node.Tag() != "!")) {
    doc_.Error(e, "null in a list of " + what + "s matches no " + what +
                      " (verl compares each to the current one); remove it or write a number");
    return std::nullopt;
  }
  if (e.node.IsScalar() && e.node.Tag() == "!" && ParseInt(e.node.Scalar())) {
    doc_.Error(e, Describe(e.node) + " is a quoted string, not a number: verl compares " + what +
                      "s as numbers and would match nothing; write " + e.node.Scalar() + " without quotes");
    return std::nullopt;
  }
  return AsInt(e, min);
}

std::optional<std::string> Reader::AsEnum(const Ref& r, const std::vector<std::string>& allowed) {
  if (r.null()) return std::nullopt;
  if (!r.node.IsScalar()) {
    doc_.Error(r, "expected one of " + AllowedList(allowed) + ", got " + Describe(r.node));
    return std::nullopt;
  }
  const std::string& s = r.node.Scalar();
  if (std::find(allowed.begin(), allowed.end(), s) != allowed.end()) return s;
  std::string hint = base::NearestWord(s, allowed);
  doc_.Error(r, Describe(r.node) + " is not allowed" +
                    (hint.empty() ? "" : "; did you mean '" + hint + "'?") +
                    " (allowed: " + AllowedList(allowed) + ")");
  return std::nullopt;
}

std::optional<bool> Reader::Bool(const Ref& block, const std::string& key) {
  return AsBool(doc_.Child(block, key));
}

std::optional<int64_t> Reader::Int(const Ref& block, const std::string& key, int64_t min) {
  return AsInt(doc_.Child(block, key), min);
}

std::optional<double> Reader::Number(const Ref& block, const std::string& key, double min) {
  Ref r = doc_.Child(block, key);
  if (r.null()) return std::nullopt;
  if (r.node.IsScalar()) {
    char* end = nullptr;
    double v = std::strtod(r.node.Scalar().c_str(), &end);
    if (end && *end == '\0' && !r.node.Scalar().empty() && std::isfinite(v)) {
      if (v < min) {
        doc_.Error(r, Describe(r.node) + " is out of range; must be >= " + std::to_string(min));
        return std::nullopt;
      }
      return v;
    }
  }
  doc_.Error(r, "expected a number, got " + Describe(r.node));
  return std::nullopt;
}

std::optional<std::string> Reader::String(const Ref& block, const std::string& key) {
  Ref r = doc_.Child(block, key);
  if (r.null()) return std::nullopt;
  if (r.node.IsScalar()) {
    // "\0" in a double-quoted YAML string: no path, name or command can hold it (the OS
    // would cut it there and write somewhere else).
    if (r.node.Scalar().find('\0') != std::string::npos) {
      doc_.Error(r, "contains a NUL byte (\\0): a path or name cannot hold one");
      return std::nullopt;
    }
    return r.node.Scalar();
  }
  doc_.Error(r, "expected a string, got " + Describe(r.node));
  return std::nullopt;
}

std::optional<std::string> Reader::Enum(const Ref& block, const std::string& key,
                                        const std::vector<std::string>& allowed) {
  return AsEnum(doc_.Child(block, key), allowed);
}

std::optional<std::vector<int64_t>> Reader::IntList(const Ref& block, const std::string& key,
                                                    int64_t min) {
  Ref r = doc_.Child(block, key);
  if (r.null()) return std::nullopt;
  if (!r.node.IsSequence()) {
    std::string extra;
    if (r.node.IsScalar() && r.node.Scalar().find(',') != std::string::npos)
      extra = " (write a YAML list such as [" + r.node.Scalar() + "], not a string)";
    doc_.Error(r, "expected a list of integers, got " + Describe(r.node) + extra);
    return std::nullopt;
  }
  std::vector<int64_t> out;
  bool ok = true;
  for (size_t i = 0; i < r.node.size(); ++i) {
    Ref e = Element(r, i);
    auto v = AsListInt(e, min, "rank");
    if (!v) {
      ok = false;
      continue;
    }
    out.push_back(*v);
  }
  if (!ok) return std::nullopt;
  return out;
}

std::optional<std::vector<std::string>> Reader::EnumList(const Ref& block, const std::string& key,
                                                         const std::vector<std::string>& allowed) {
  Ref r = doc_.Child(block, key);
  if (r.null()) return std::nullopt;
  if (!r.node.IsSequence()) {
    doc_.Error(r, "expected a list of " + AllowedList(allowed) + ", got " + Describe(r.node));
    return std::nullopt;
  }
  std::vector<std::string> out;
  bool ok = true;
  for (size_t i = 0; i < r.node.size(); ++i) {
    Ref e = Element(r, i);
    if (e.node.IsNull()) continue;
    auto v = AsEnum(e, allowed);
    if (!v) {
      ok = false;
      continue;
    }
    out.push_back(*v);
  }
  if (!ok) return std::nullopt;
  return out;
}

std::optional<uint64_t> Reader::Bytes(const Ref& block, const std::string& key) {
  Ref r = doc_.Child(block, key);
  if (r.null()) return std::nullopt;
  if (r.node.IsScalar()) {
    std::string s = r.node.Scalar();
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    std::string unit(base::Trim(end ? end : ""));
    double mult = -1;
    if (unit.empty() || unit == "B") mult = 1;
    else if (unit == "KB" || unit == "kB") mult = 1e3;
    else if (unit == "MB") mult = 1e6;
    else if (unit == "GB") mult = 1e9;
    else if (unit == "TB") mult = 1e12;
    else if (unit == "KiB") mult = 1024.0;
    else if (unit == "MiB") mult = 1024.0 * 1024;
    else if (unit == "GiB") mult = 1024.0 * 1024 * 1024;
    else if (unit == "TiB") mult = 1024.0 * 1024 * 1024 * 1024;
    if (end != s.c_str() && mult > 0 && v >= 0 && std::isfinite(v))
      return static_cast<uint64_t>(v * mult);
  }
  doc_.Error(r, "expected a size in bytes (e.g. 1073741824, 512MiB, 2GB), got " + Describe(r.node));
  return std::nullopt;
}

}  // namespace rlprof::config
