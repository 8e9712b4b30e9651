#include "src/analysis/readers/decimal.h"

#include <cmath>
#include <cstdlib>
#include <string>

namespace rlprof::analysis {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n' ||
                        s.front() == '\r'))
    s.remove_prefix(1);
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Up to 18 plain digits (cannot overflow): the common case, without any other check.
inline bool FastDigits(std::string_view s, uint64_t* v) {
  if (s.empty() || s.size() > 18) return false;
  uint64_t x = 0;
  for (char c : s) {
    unsigned d = static_cast<unsigned char>(c) - static_cast<unsigned>('0');
    if (d > 9) return false;
    x = x * 10 + d;
  }
  *v = x;
  return true;
}

}  // namespace

bool ParseDouble(std::string_view text, double* value) {
  text = Trim(text);
  if (text.empty() || text.size() > 64) return false;
  char buf[65];
  text.copy(buf, text.size());
  buf[text.size()] = '\0';
  // strtod accepts "nan"/"inf"/hex: only plain decimal syntax is allowed here.
  for (char c : text) {
    if (!(IsDigit(c) || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E')) return false;
  }
  char* end = nullptr;
  double v = std::strtod(buf, &end);
  if (end != buf + text.size() || !std::isfinite(v)) return false;
  *value = v;
  return true;
}

bool ParseMicrosToNanos(std::string_view text, int64_t* ns) {
  {
    // Fast path: digits[.d{1,3}], the form writers use.
    size_t dot = text.find('.');
    uint64_t whole, frac = 0;
    std::string_view ip = dot == std::string_view::npos ? text : text.substr(0, dot);
    std::string_view fp = dot == std::string_view::npos ? std::string_view() : text.substr(dot + 1);
    if (ip.size() <= 15 && fp.size() <= 3 && FastDigits(ip, &whole) &&
        (dot == std::string_view::npos || FastDigits(fp, &frac))) {
      for (size_t k = fp.size(); k < 3; ++k) frac *= 10;
      *ns = static_cast<int64_t>(whole * 1000 + frac);
      return true;
    }
  }
  text = Trim(text);
  size_t i = 0;
  bool neg = false;
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) neg = text[i++] == '-';
  uint64_t whole = 0;
  size_t int_digits = 0;
  while (i < text.size() && IsDigit(text[i])) {
    if (whole > (UINT64_MAX - 9) / 10) return false;
    whole = whole * 10 + static_cast<uint64_t>(text[i] - '0');
    ++i;
    ++int_digits;
  }
  uint64_t frac = 0;  // three decimals
  size_t frac_digits = 0;
  bool round_up = false;
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && IsDigit(text[i])) {
      if (frac_digits < 3) {
        frac = frac * 10 + static_cast<uint64_t>(text[i] - '0');
      } else if (frac_digits == 3) {
        round_up = text[i] >= '5';
      }
      ++frac_digits;
      ++i;
    }
  }
  if (int_digits == 0 && frac_digits == 0) return false;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    double d;
    if (!ParseDouble(text, &d)) return false;
    double v = d * 1000.0;
    if (!(std::fabs(v) < 9.2e18)) return false;
    *ns = std::llround(v);
    return true;
  }
  if (i != text.size()) return false;
  for (size_t k = frac_digits; k < 3; ++k) frac *= 10;
  if (whole > static_cast<uint64_t>(INT64_MAX) / 1000) return false;
  uint64_t v = whole * 1000 + frac + (round_up ? 1 : 0);
  if (v > static_cast<uint64_t>(INT64_MAX)) return false;
  *ns = neg ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
  return true;
}

bool ParseInteger(std::string_view text, int64_t* value) {
  uint64_t fast;
  if (FastDigits(text, &fast)) {
    *value = static_cast<int64_t>(fast);
    return true;
  }
  text = Trim(text);
  size_t i = 0;
  bool neg = false;
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) neg = text[i++] == '-';
  uint64_t v = 0;
  size_t digits = 0;
  while (i < text.size() && IsDigit(text[i])) {
    if (v > (UINT64_MAX - 9) / 10) return false;
    v = v * 10 + static_cast<uint64_t>(text[i] - '0');
    ++i;
    ++digits;
  }
  if (digits == 0) return false;
  if (i < text.size()) {
    if (text[i] == '.') {
      ++i;
      while (i < text.size() && IsDigit(text[i])) ++i;
    }
    if (i < text.size()) {
      double d;  // 1e3 and the like
      if (!ParseDouble(text, &d) || std::fabs(d) >= 9.2e18) return false;
      *value = static_cast<int64_t>(d);
      return true;
    }
  }
  if (neg) {
    if (v > static_cast<uint64_t>(INT64_MAX) + 1) return false;
    *value = static_cast<int64_t>(0 - v);
  } else {
    if (v > static_cast<uint64_t>(INT64_MAX)) return false;
    *value = static_cast<int64_t>(v);
  }
  return true;
}

std::string_view CompactJson(std::string_view json, char* scratch) {
  size_t o = 0;
  bool in_str = false;
  for (size_t i = 0; i < json.size(); ++i) {
    char c = json[i];
    if (in_str) {
      scratch[o++] = c;
      if (c == '\\' && i + 1 < json.size()) {
        scratch[o++] = json[++i];
      } else if (c == '"') {
        in_str = false;
      }
      continue;
    }
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    if (c == '"') in_str = true;
    scratch[o++] = c;
  }
  return {scratch, o};
}

}  // namespace rlprof::analysis
