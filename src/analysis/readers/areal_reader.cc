#include "src/analysis/readers/areal_reader.h"

#include <simdjson.h>
#include <zlib.h>

#include <algorithm>
#include <climits>
#include <map>
#include <optional>
#include <utility>

#include "src/analysis/readers/decimal.h"
#include "src/analysis/readers/input_buffer.h"
#include "src/analysis/readers/json_scan.h"
#include "src/base/files.h"

namespace rlprof::analysis {
namespace {

namespace od = simdjson::ondemand;
using simdjson::error_code;

// A line longer than this is not a session record (AReaL's are well under 1 MiB even with
// hundreds of phase spans): counted as a bad line and not copied.
constexpr size_t kMaxLineBytes = size_t{64} << 20;
// Phase names, statuses and reasons longer than this are cut (name_truncated).
constexpr size_t kMaxNameBytes = 1024;
// Lines the detection looks at before it gives up.
constexpr int kDetectLines = 32;
// Times are seconds; in ns they must stay within [0, 2^62].
constexpr int64_t kMaxNs = int64_t{1} << 62;
// Seconds since the Unix epoch of 2001-09-09: earlier times are not wall clock (AReaL before
// commit 35f39bb02, Nov 2025, stamped with time.perf_counter()).
constexpr int64_t kWallClockFloorNs = int64_t{1000000000} * 1000000000;

std::string_view Trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

// "1763000000.25" seconds → 1763000000250000000 ns exactly (no double on the way: a double
// holds only 0.24 µs steps at today's epoch). [-]digits[.digits][e[±]digits]; digits past the
// ninth decimal round half away from zero. False on anything else and past ±2^62 ns.
bool SecondsTextToNanos(std::string_view text, int64_t* ns) {
  text = Trim(text);
  if (text.empty() || text.size() > 400) return false;
  size_t i = 0;
  const bool neg = text[0] == '-';
  if (neg) ++i;
  std::string digits;  // mantissa digits, the point removed
  int64_t exp10 = 9;   // the value is digits × 10^(exp10 - 9) s = digits × 10^exp10 … ns
  bool any = false;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i, any = true) digits += text[i];
  if (i < text.size() && text[i] == '.') {
    ++i;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i, any = true) {
      digits += text[i];
      --exp10;
    }
  }
  if (!any) return false;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    bool eneg = false;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) eneg = text[i++] == '-';
    if (i == text.size()) return false;
    int64_t e = 0;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
      e = e * 10 + (text[i] - '0');
      if (e > 1000) return false;
    }
    exp10 += eneg ? -e : e;
  }
  if (i != text.size()) return false;
  const size_t nz = digits.find_first_not_of('0');
  if (nz == std::string::npos) {
    *ns = 0;
    return true;
  }
  digits.erase(0, nz);
  bool round_up = false;
  if (exp10 < 0) {
    const size_t drop = static_cast<size_t>(-exp10);
    if (drop > digits.size()) {
      digits.clear();
    } else {
      round_up = digits[digits.size() - drop] >= '5';
      digits.resize(digits.size() - drop);
    }
    exp10 = 0;
  }
  if (static_cast<int64_t>(digits.size()) + exp10 > 19) return false;
  unsigned __int128 v = 0;
  for (char c : digits) v = v * 10 + static_cast<unsigned>(c - '0');
  for (int64_t k = 0; k < exp10; ++k) v *= 10;
  if (round_up) ++v;
  if (v > static_cast<unsigned __int128>(kMaxNs)) return false;
  *ns = neg ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
  return true;
}

bool IsIntegerText(std::string_view t) {
  if (!t.empty() && t[0] == '-') t.remove_prefix(1);
  return !t.empty() && t.size() <= 18 && t.find_first_not_of("0123456789") == std::string_view::npos;
}

// One line's record, as read.
struct Record {
  std::optional<std::string> session_id;  // integer text (or a string id)
  std::optional<int64_t> task_id, rank, step;
  std::optional<std::string> role, status, reason;
  int64_t submit = -1, finalized = -1;
  bool has_submit = false;
  std::vector<SampleSpan> spans;
};

struct LineReader {
  od::parser parser;
  std::string buf;  // the line, copied with simdjson's padding
  uint64_t bad_values = 0;
  uint64_t cut_names = 0;

  enum class Kind { kSession, kOtherObject, kBad };

  std::string Name(std::string_view s) {
    if (s.size() > kMaxNameBytes) {
      ++cut_names;
      s = s.substr(0, kMaxNameBytes);
    }
    return std::string(s);
  }

  // A number (seconds) → ns; null → unknown (-1, no count); anything else counted.
  error_code Time(od::value v, int64_t* ns) {
    od::json_type ty;
    if (auto err = v.type().get(ty)) return err;
    if (ty == od::json_type::null) return simdjson::SUCCESS;
    if (ty != od::json_type::number) {
      ++bad_values;
      return simdjson::SUCCESS;
    }
    int64_t x = 0;
    if (!SecondsTextToNanos(v.raw_json_token(), &x) || x < 0 || x > kMaxNs) {
      ++bad_values;
      return simdjson::SUCCESS;
    }
    *ns = x;
    return simdjson::SUCCESS;
  }

  error_code Int(od::value v, std::optional<int64_t>* out) {
    od::json_type ty;
    if (auto err = v.type().get(ty)) return err;
    if (ty == od::json_type::null) return simdjson::SUCCESS;
    int64_t x = 0;
    std::string_view t = ty == od::json_type::number ? Trim(v.raw_json_token()) : std::string_view{};
    if (ty != od::json_type::number || !IsIntegerText(t) || !ParseInteger(t, &x)) {
      ++bad_values;
      return simdjson::SUCCESS;
    }
    *out = x;
    return simdjson::SUCCESS;
  }

  error_code Text(od::value v, std::optional<std::string>* out) {
    od::json_type ty;
    if (auto err = v.type().get(ty)) return err;
    if (ty == od::json_type::null) return simdjson::SUCCESS;
    if (ty != od::json_type::string) {
      ++bad_values;
      return simdjson::SUCCESS;
    }
    std::string_view s;
    if (auto err = v.get_string().get(s)) return err;
    *out = Name(s);
    return simdjson::SUCCESS;
  }

  // "phases": {"generate": [{"start_ts": …, "end_ts": …}, …], …}
  error_code Phases(od::value v, Record* r) {
    od::json_type ty;
    if (auto err = v.type().get(ty)) return err;
    if (ty == od::json_type::null) return simdjson::SUCCESS;
    if (ty != od::json_type::object) {
      ++bad_values;
      return simdjson::SUCCESS;
    }
    od::object phases;
    if (auto err = v.get_object().get(phases)) return err;
    for (auto pf : phases) {
      od::field f;
      if (auto err = std::move(pf).get(f)) return err;
      std::string_view key;
      if (auto err = f.unescaped_key().get(key)) return err;
      const std::string name = Name(key);
      od::value list = f.value();
      if (auto err = list.type().get(ty)) return err;
      if (ty != od::json_type::array) {
        ++bad_values;
        continue;
      }
      od::array arr;
      if (auto err = list.get_array().get(arr)) return err;
      for (auto ev : arr) {
        od::value e;
        if (auto err = std::move(ev).get(e)) return err;
        if (auto err = e.type().get(ty)) return err;
        if (ty != od::json_type::object) {
          ++bad_values;
          continue;
        }
        od::object span;
        if (auto err = e.get_object().get(span)) return err;
        SampleSpan sp;
        for (auto sf : span) {
          od::field g;
          if (auto err = std::move(sf).get(g)) return err;
          std::string_view k;
          if (auto err = g.unescaped_key().get(k)) return err;
          if (k == "start_ts") {
            if (auto err = Time(g.value(), &sp.start)) return err;
          } else if (k == "end_ts") {
            if (auto err = Time(g.value(), &sp.end)) return err;
          }
        }
        if (sp.start < 0) {  // a span without its start: nothing to place
          ++bad_values;
          continue;
        }
        if (sp.end >= 0 && sp.end < sp.start) {
          ++bad_values;
          sp.end = -1;
        }
        // AReaL's "toolcall" is rlprof's "tool" phase (samples: tool, tool_calls).
        if (name == "toolcall") {
          sp.phase = "tool";
          sp.label = name;
        } else {
          sp.phase = name;
        }
        r->spans.push_back(std::move(sp));
      }
    }
    return simdjson::SUCCESS;
  }

  error_code Fields(od::object obj, Record* r) {
    for (auto fr : obj) {
      od::field f;
      if (auto err = std::move(fr).get(f)) return err;
      std::string_view key;
      if (auto err = f.unescaped_key().get(key)) return err;
      od::value v = f.value();
      error_code err = simdjson::SUCCESS;
      if (key == "session_id") {
        od::json_type ty;
        if ((err = v.type().get(ty))) return err;
        if (ty == od::json_type::number) {
          std::string_view t = Trim(v.raw_json_token());
          if (IsIntegerText(t)) r->session_id = std::string(t);
          else ++bad_values;
        } else if (ty == od::json_type::string) {
          std::string_view s;
          if ((err = v.get_string().get(s))) return err;
          r->session_id = Name(s);
        } else {
          ++bad_values;
        }
      } else if (key == "submit_ts") {
        od::json_type ty;
        if ((err = v.type().get(ty))) return err;
        r->has_submit = ty == od::json_type::number;
        err = Time(v, &r->submit);
      } else if (key == "finalized_ts") {
        err = Time(v, &r->finalized);
      } else if (key == "task_id") {
        err = Int(v, &r->task_id);
      } else if (key == "rank") {
        err = Int(v, &r->rank);
      } else if (key == "step" || key == "global_step") {
        err = Int(v, &r->step);
      } else if (key == "role") {
        err = Text(v, &r->role);
      } else if (key == "status") {
        err = Text(v, &r->status);
      } else if (key == "reason") {
        err = Text(v, &r->reason);
      } else if (key == "phases") {
        err = Phases(v, r);
      }
      // total_s, generate_s, reward_s, toolcall_s are derived from the times; counters and
      // unknown keys are ignored.
      if (err) return err;
    }
    return simdjson::SUCCESS;
  }

  // Parses one line (trimmed, not empty).
  Kind Parse(std::string_view line, Record* r) {
    // (simdjson 3.0's On-Demand has no at_end(): a line must also end its object.)
    if (line.size() > kMaxLineBytes || line[0] != '{' || line.back() != '}') return Kind::kBad;
    buf.assign(line);
    buf.reserve(line.size() + simdjson::SIMDJSON_PADDING);
    const uint64_t bad_before = bad_values;
    od::document doc;
    od::object obj;
    if (parser.iterate(buf.data(), line.size(), buf.capacity()).get(doc) ||
        doc.get_object().get(obj) || Fields(obj, r)) {
      bad_values = bad_before;  // the whole line is counted instead
      return Kind::kBad;
    }
    if (!r->session_id || !r->has_submit) return Kind::kOtherObject;
    return Kind::kSession;
  }
};

// Calls fn(line, has_newline) for every line of `text`; stops when fn returns false.
template <typename Fn>
void ForEachLine(std::string_view text, Fn fn) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    const bool complete = nl != std::string_view::npos;
    if (!complete) nl = text.size();
    if (!fn(text.substr(pos, nl - pos), complete)) return;
    pos = nl + 1;
  }
}

// The head of a gzip stream (up to `limit` bytes inflated; what inflated before damage).
std::string GunzipHead(std::string_view bytes, size_t limit) {
  std::string out(limit, '\0');
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 32) != Z_OK) return {};
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  zs.avail_in = static_cast<uInt>(std::min<size_t>(bytes.size(), 1u << 30));
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(limit);
  inflate(&zs, Z_SYNC_FLUSH);
  out.resize(limit - zs.avail_out);
  inflateEnd(&zs);
  return out;
}

bool IsGzip(std::string_view b) {
  return b.size() >= 2 && static_cast<unsigned char>(b[0]) == 0x1f && static_cast<unsigned char>(b[1]) == 0x8b;
}

std::string IdOf(const Record& r, const std::string& sid) {
  return r.rank ? "r" + std::to_string(*r.rank) + "/s" + sid : "s" + sid;
}

}  // namespace

bool LooksLikeArealSessions(std::string_view head) {
  if (head.size() > kArealHeadBytes) head = head.substr(0, kArealHeadBytes);
  const size_t first = head.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos || head[first] != '{') return false;
  LineReader lr;
  int seen = 0;
  bool claim = false;
  ForEachLine(head, [&](std::string_view raw, bool complete) {
    std::string_view line = Trim(raw);
    if (line.empty()) return true;
    if (++seen > kDetectLines || !complete) return false;  // a line cut by the head: undecided
    if (line[0] != '{') return false;  // not JSON Lines of objects (a pretty-printed JSON document)
    Record r;
    switch (lr.Parse(line, &r)) {
      case LineReader::Kind::kSession:
        claim = r.status.has_value();
        return false;
      case LineReader::Kind::kOtherObject:
        return false;  // other JSON Lines (AReaL's perf traces), or a one-line JSON trace
      case LineReader::Kind::kBad:
        return true;  // a damaged line: look further
    }
    return true;
  });
  return claim;
}

bool IsArealSessionsFile(const std::string& path) {
  if (!base::CheckRegularFile(path).ok()) return false;
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  std::string head(kArealHeadBytes, '\0');
  int n = gzread(f, head.data(), static_cast<unsigned>(head.size()));
  gzclose(f);
  if (n <= 0) return false;
  head.resize(static_cast<size_t>(n));
  return LooksLikeArealSessions(head);
}

bool IsArealSessionsBytes(std::string_view bytes) {
  if (IsGzip(bytes)) return LooksLikeArealSessions(GunzipHead(bytes, kArealHeadBytes));
  return LooksLikeArealSessions(bytes);
}

base::Status ReadArealSessions(std::string_view text, const std::string& name, Trace* t) {
  t->source = name;
  t->format = "areal";
  LineReader lr;
  uint64_t bad_lines = 0, not_sessions = 0;
  std::map<std::pair<int64_t, std::string>, int> seen;  // (rank, session_id) → times seen
  std::map<int64_t, std::pair<int64_t, int64_t>> step_span;  // step → (first submit, last end)
  std::optional<int64_t> rank;
  std::optional<std::string> role;
  bool mixed_rank = false, mixed_role = false;
  int64_t earliest = INT64_MAX;
  ForEachLine(text, [&](std::string_view raw, bool complete) {
    std::string_view line = Trim(raw);
    if (line.empty()) return true;
    Record r;
    const LineReader::Kind kind = lr.Parse(line, &r);
    if (kind == LineReader::Kind::kBad) {
      if (!complete) {
        t->diagnostics.Add("truncated_input");  // the writer stopped mid-line
      } else {
        ++bad_lines;
      }
      return true;
    }
    if (kind == LineReader::Kind::kOtherObject) {
      ++not_sessions;
      return true;
    }
    SampleRecord s;
    const int n = ++seen[{r.rank.value_or(-1), *r.session_id}];
    s.id = IdOf(r, *r.session_id);
    if (n > 1) {
      t->diagnostics.Add("areal_duplicate_session");
      s.id += "#" + std::to_string(n);
    }
    if (r.task_id) s.group = r.rank ? "r" + std::to_string(*r.rank) + "/t" + std::to_string(*r.task_id)
                                    : "t" + std::to_string(*r.task_id);
    s.submit = r.submit;
    s.end = r.finalized;
    if (s.end >= 0 && s.submit >= 0 && s.end < s.submit) {  // finalized before submitted
      ++lr.bad_values;
      s.end = -1;
    }
    s.replica = r.rank.value_or(-1);
    s.step = r.step.value_or(-1);
    for (const SampleSpan& sp : r.spans)
      if (sp.phase == "generate" && sp.end > s.last_token) s.last_token = sp.end;
    s.spans = std::move(r.spans);
    for (int64_t v : {s.submit, s.end}) if (v >= 0) earliest = std::min(earliest, v);
    for (const SampleSpan& sp : s.spans) earliest = std::min(earliest, sp.start);
    if (r.rank) {
      if (rank && *rank != *r.rank) mixed_rank = true;
      rank = r.rank;
    }
    if (r.role) {
      if (role && *role != *r.role) mixed_role = true;
      role = r.role;
    }
    // What became of it: AReaL's terminal status (pending: flushed unfinished, none).
    const std::string status = r.status.value_or("pending");
    if (status != "pending") {
      SampleUse u;
      u.id = s.id;
      if (status == "accepted") {
        u.outcome = "consumed";
      } else if (!r.reason || r.reason->empty() || *r.reason == status) {
        u.outcome = status;
      } else {
        u.outcome = status + ":" + *r.reason;
      }
      u.at = s.end;
      u.step = s.step;
      t->sample_uses.push_back(std::move(u));
    }
    if (s.step >= 0) {
      const int64_t a = s.submit >= 0 ? s.submit : s.end;
      const int64_t b = s.end >= 0 ? s.end : std::max(s.submit, s.last_token);
      if (a >= 0) {
        auto [it, fresh] = step_span.try_emplace(s.step, a, std::max(a, b));
        if (!fresh) {
          it->second.first = std::min(it->second.first, a);
          it->second.second = std::max(it->second.second, std::max(a, b));
        }
      }
    }
    t->samples.push_back(std::move(s));
    return true;
  });
  if (bad_lines) t->diagnostics.Add("areal_bad_line", bad_lines);
  if (not_sessions) t->diagnostics.Add("areal_not_session", not_sessions);
  if (lr.bad_values) t->diagnostics.Add("areal_bad_value", lr.bad_values);
  if (lr.cut_names) t->diagnostics.Add("name_truncated", lr.cut_names);
  if (t->samples.empty())
    return base::InvalidArgument(name + ": no AReaL session record (a JSON line with session_id and submit_ts)");
  if (rank && !mixed_rank) t->rank = *rank;
  if (role && !mixed_role) t->role = *role;
  // time.time() seconds: wall clock as it stands; perf_counter() seconds: unknown.
  if (earliest != INT64_MAX && earliest >= kWallClockFloorNs) t->wall_offset_ns = 0;
  if (!step_span.empty()) {
    const uint32_t track = t->ThreadTrack(t->rank >= 0 ? t->rank : 0, 0);
    for (const auto& [step, span] : step_span)
      t->steps.push_back(Marker{step, span.first, span.second, track, "", "step"});
  }
  t->Finalize();
  return base::Status::Ok();
}

namespace {

base::StatusOr<Trace> ReadInput(InputBuffer& in, const std::string& name) {
  Trace t;
  t.diagnostics.Merge(in.diagnostics);
  if (in.diagnostics.Get("truncated_gzip")) t.diagnostics.Add("truncated_input");
  if (in.size() == 0) return base::InvalidArgument(name + ": empty file");
  if (size_t bad = SanitizeUtf8(in.data(), in.size())) t.diagnostics.Add("invalid_utf8_bytes", bad);
  RLPROF_RETURN_IF_ERROR(ReadArealSessions(in.view(), name, &t));
  // A cut gzip and the line it cut are one problem.
  if (t.diagnostics.Get("truncated_input") > 1) t.diagnostics.counts["truncated_input"] = 1;
  return t;
}

}  // namespace

base::StatusOr<Trace> ReadArealFile(const std::string& path) {
  RLPROF_ASSIGN_OR_RETURN(InputBuffer in, ReadInputFile(path));
  return ReadInput(in, path);
}

base::StatusOr<Trace> ReadArealBytes(std::string_view bytes, const std::string& name) {
  InputBuffer in = InputFromBytes(bytes);
  return ReadInput(in, name);
}

}  // namespace rlprof::analysis
