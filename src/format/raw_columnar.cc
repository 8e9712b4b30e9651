// The columnar events chunk: encoder and decoder (layout in docs/formats.md §2.2 and
// raw_columnar.h). Both sides run the same prediction model, ColumnarModel, event by event;
// only the model's inputs differ (the encoder knows the event, the decoder rebuilds it).
//
// Why these predictors (measured on real captures, docs/performance.md "Formats"):
// * Time: operators reach the writer in the order they *end* (a parent after its children).
//   Each track keeps a stack of the ranges that ended last; an event that encloses the top
//   k of them (its children) is coded by k, by how long before its first child it began and
//   by how long after its last child it ended — two short gaps instead of a begin far in the
//   past and a long duration. Any other event is coded by the gap since the previous range
//   of its track ended, and its duration as it is.
// * Arguments: sequence numbers and correlation ids grow by small steps per category; the
//   "none" value UINT32_MAX gets its own code so that it does not break the run of deltas.
// * Counters: a sample shares its sign, exponent and high mantissa bits with the series'
//   previous one, so the XOR of the two bit patterns is a short varint.
// * Ids, kinds and categories as they are: zstd makes them almost free.
// Every column is a separate run of bytes, so zstd sees each field's own statistics.
#include "src/format/raw_columnar.h"

#include <algorithm>
#include <cstring>

namespace rlprof::format {
namespace {

// Wrapping arithmetic: any int64 values round-trip, overflow included.
inline int64_t Add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
inline int64_t Sub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
inline uint64_t ZigZag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
inline int64_t UnZigZag(uint64_t v) {
  return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
}

inline uint8_t* PutVarint(uint8_t* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<uint8_t>(v) | 0x80;
    v >>= 7;
  }
  *p++ = static_cast<uint8_t>(v);
  return p;
}

void AppendVarint(std::string* s, uint64_t v) {
  uint8_t buf[10];
  s->append(reinterpret_cast<const char*>(buf), static_cast<size_t>(PutVarint(buf, v) - buf));
}

// A LEB128 varint of at most 64 bits from [p, end); false if it runs off the end or overflows.
inline bool GetVarint(const uint8_t*& p, const uint8_t* end, uint64_t* out) {
  if (p != end && *p < 0x80) {  // most values fit one byte
    *out = *p++;
    return true;
  }
  uint64_t v = 0;
  for (unsigned shift = 0; shift < 64; shift += 7) {
    if (p == end) return false;
    const uint8_t b = *p++;
    if (shift == 63 && b > 1) return false;
    v |= static_cast<uint64_t>(b & 0x7F) << shift;
    if (b < 0x80) {
      *out = v;
      return true;
    }
  }
  return false;
}

inline int64_t EndOf(const Event& e) {
  return e.kind == EventKind::kComplete ? Add(e.ts_ns, e.payload) : e.ts_ns;
}

// Arguments: 0 for UINT32_MAX ("none"), else 1 + zigzag of the 32-bit step from the last
// value (+1) of the same argument and category.
inline uint64_t ArgCode(uint32_t arg, uint32_t* last) {
  const uint32_t v = arg + 1;
  if (v == 0) return 0;
  const auto d = static_cast<int32_t>(v - *last);
  *last = v;
  return uint64_t{(static_cast<uint32_t>(d) << 1) ^ static_cast<uint32_t>(d >> 31)} + 1;
}

inline bool ArgValue(uint64_t code, uint32_t* last, uint32_t* arg) {
  if (code == 0) {
    *arg = UINT32_MAX;
    return true;
  }
  if (code - 1 > UINT32_MAX) return false;
  const auto z = static_cast<uint32_t>(code - 1);
  const uint32_t d = (z >> 1) ^ (0u - (z & 1));
  *last += d;
  *arg = *last - 1;
  return true;
}

// Bytes a column may take per event at most (varints of the field's widest code).
constexpr size_t kMaxColumnBytes[kEventColumns] = {1, 1, 3, 10, 10, 10, 5, 5, 5};

constexpr size_t Col(EventColumn c) { return static_cast<size_t>(c); }

}  // namespace

ColumnarModel::ColumnarModel() : slot_(size_t{1} << 16, -1) {}

void ColumnarModel::Reset() {
  for (size_t i = 0; i < used_.size(); ++i) {
    slot_[used_[i]] = -1;
    pool_[i].frames.clear();
    pool_[i].last_counter = 0;
  }
  used_.clear();
  prev_ts = 0;
  last_range_id = 0;
  last_arg = {};
}

ColumnarModel::TrackState& ColumnarModel::Track(uint16_t track) {
  int32_t s = slot_[track];
  if (s >= 0) return pool_[static_cast<size_t>(s)];
  s = static_cast<int32_t>(used_.size());
  slot_[track] = s;
  used_.push_back(track);
  if (pool_.size() <= used_.size() - 1) pool_.emplace_back();
  return pool_[static_cast<size_t>(s)];
}

void ColumnarModel::Push(TrackState& s, Frame f) {
  if (s.frames.size() >= kColumnarStackDepth) {
    s.frames.erase(s.frames.begin(), s.frames.begin() + kColumnarStackDepth / 2);
  }
  s.frames.push_back(f);
}

const std::string& ColumnarEncoder::Encode(std::span<const Event> events) {
  const size_t n = events.size();
  model_.Reset();
  uint8_t* p[kEventColumns];
  for (size_t c = 0; c < kEventColumns; ++c) {
    if (cols_[c].size() < n * kMaxColumnBytes[c]) cols_[c].resize(n * kMaxColumnBytes[c]);
    p[c] = cols_[c].data();
  }
  for (const Event& e : events) {
    const auto cat = static_cast<uint8_t>(e.category);
    *p[Col(EventColumn::kKind)]++ = static_cast<uint8_t>(e.kind);
    *p[Col(EventColumn::kCategory)]++ = cat;
    p[Col(EventColumn::kTrack)] = PutVarint(p[Col(EventColumn::kTrack)], e.track);
    p[Col(EventColumn::kName)] = PutVarint(p[Col(EventColumn::kName)], e.name);
    p[Col(EventColumn::kArg0)] =
        PutVarint(p[Col(EventColumn::kArg0)], ArgCode(e.arg0, &model_.last_arg[0][cat]));
    p[Col(EventColumn::kArg1)] =
        PutVarint(p[Col(EventColumn::kArg1)], ArgCode(e.arg1, &model_.last_arg[1][cat]));

    ColumnarModel::TrackState& s = model_.Track(e.track);
    auto& f = s.frames;
    const int64_t end = EndOf(e);
    // The ranges this event encloses: its children, which ended before it.
    size_t k = 0;
    while (k < f.size() && f[f.size() - 1 - k].begin >= e.ts_ns && f[f.size() - 1 - k].end <= end) ++k;
    uint64_t time;
    int64_t last_end = 0;
    if (k > 0) {
      time = ZigZag(Sub(f[f.size() - k].begin, e.ts_ns));
      last_end = f.back().end;
    } else {
      time = ZigZag(Sub(e.ts_ns, f.empty() ? model_.prev_ts : f.back().end));
    }
    uint64_t payload;
    switch (e.kind) {
      case EventKind::kComplete:
        payload = ZigZag(k > 0 ? Sub(end, last_end) : e.payload);
        break;
      case EventKind::kCounter:
        payload = static_cast<uint64_t>(e.payload) ^ s.last_counter;
        s.last_counter = static_cast<uint64_t>(e.payload);
        break;
      case EventKind::kBegin:
      case EventKind::kEnd:
        payload = ZigZag(Sub(e.payload, model_.last_range_id));
        model_.last_range_id = e.payload;
        break;
      default: payload = ZigZag(e.payload); break;
    }
    p[Col(EventColumn::kPop)] = PutVarint(p[Col(EventColumn::kPop)], k);
    p[Col(EventColumn::kTime)] = PutVarint(p[Col(EventColumn::kTime)], time);
    p[Col(EventColumn::kPayload)] = PutVarint(p[Col(EventColumn::kPayload)], payload);
    f.resize(f.size() - k);
    ColumnarModel::Push(s, {e.ts_ns, end});
    model_.prev_ts = e.ts_ns;
  }
  out_.clear();
  AppendVarint(&out_, n);
  size_t total = 0;
  for (size_t c = 0; c < kEventColumns; ++c) {
    const auto len = static_cast<size_t>(p[c] - cols_[c].data());
    AppendVarint(&out_, len);
    total += len;
  }
  out_.reserve(out_.size() + total);
  for (size_t c = 0; c < kEventColumns; ++c) {
    out_.append(reinterpret_cast<const char*>(cols_[c].data()), static_cast<size_t>(p[c] - cols_[c].data()));
    ends_[c] = out_.size();
  }
  return out_;
}

namespace {

struct Span {
  const uint8_t* p;
  const uint8_t* end;
};

// Exactly `n` varints, each at most `max`, filling the column to its end.
template <typename Store>
bool ReadColumn(Span col, size_t n, uint64_t max, Store store) {
  for (size_t i = 0; i < n; ++i) {
    uint64_t v;
    if (!GetVarint(col.p, col.end, &v) || v > max) return false;
    store(i, v);
  }
  return col.p == col.end;
}

}  // namespace

bool ColumnarDecoder::Decode(std::string_view payload, std::vector<Event>* out) {
  const auto* p = reinterpret_cast<const uint8_t*>(payload.data());
  const uint8_t* const end = p + payload.size();
  uint64_t n;
  if (!GetVarint(p, end, &n) || n > kColumnarMaxEvents) return false;
  Span col[kEventColumns];
  uint64_t len[kEventColumns];
  for (size_t c = 0; c < kEventColumns; ++c) {
    // Every event takes at least one byte of every column: a count the columns cannot hold is
    // refused before anything is allocated.
    if (!GetVarint(p, end, &len[c]) || len[c] < n) return false;
  }
  for (size_t c = 0; c < kEventColumns; ++c) {
    if (len[c] > static_cast<uint64_t>(end - p)) return false;
    col[c] = {p, p + len[c]};
    p += len[c];
  }
  if (p != end || len[Col(EventColumn::kKind)] != n || len[Col(EventColumn::kCategory)] != n) return false;

  const size_t first = out->size();
  out->resize(first + n);
  Event* ev = out->data() + first;
  model_.Reset();
  auto fail = [&] {
    out->resize(first);
    return false;
  };
  for (size_t i = 0; i < n; ++i) {
    ev[i].kind = static_cast<EventKind>(col[Col(EventColumn::kKind)].p[i]);
    ev[i].category = static_cast<Category>(col[Col(EventColumn::kCategory)].p[i]);
  }
  bool ok = ReadColumn(col[Col(EventColumn::kTrack)], n, UINT16_MAX,
                       [&](size_t i, uint64_t v) { ev[i].track = static_cast<uint16_t>(v); }) &&
            ReadColumn(col[Col(EventColumn::kName)], n, UINT32_MAX,
                       [&](size_t i, uint64_t v) { ev[i].name = static_cast<uint32_t>(v); });
  if (!ok) return fail();
  for (int a = 0; a < 2; ++a) {
    Span c = col[Col(a == 0 ? EventColumn::kArg0 : EventColumn::kArg1)];
    for (size_t i = 0; i < n; ++i) {
      uint64_t code;
      uint32_t* arg = a == 0 ? &ev[i].arg0 : &ev[i].arg1;
      if (!GetVarint(c.p, c.end, &code) ||
          !ArgValue(code, &model_.last_arg[a][static_cast<uint8_t>(ev[i].category)], arg)) {
        return fail();
      }
    }
    if (c.p != c.end) return fail();
  }

  Span pop = col[Col(EventColumn::kPop)], time = col[Col(EventColumn::kTime)],
       pay = col[Col(EventColumn::kPayload)];
  for (size_t i = 0; i < n; ++i) {
    Event& e = ev[i];
    uint64_t k, t, code;
    if (!GetVarint(pop.p, pop.end, &k) || !GetVarint(time.p, time.end, &t) ||
        !GetVarint(pay.p, pay.end, &code)) {
      return fail();
    }
    ColumnarModel::TrackState& s = model_.Track(e.track);
    auto& f = s.frames;
    if (k > f.size()) return fail();
    int64_t last_end = 0;
    if (k > 0) {
      e.ts_ns = Sub(f[f.size() - k].begin, UnZigZag(t));
      last_end = f.back().end;
    } else {
      e.ts_ns = Add(f.empty() ? model_.prev_ts : f.back().end, UnZigZag(t));
    }
    switch (e.kind) {
      case EventKind::kComplete:
        e.payload = k > 0 ? Sub(Add(last_end, UnZigZag(code)), e.ts_ns) : UnZigZag(code);
        break;
      case EventKind::kCounter:
        s.last_counter ^= code;
        e.payload = static_cast<int64_t>(s.last_counter);
        break;
      case EventKind::kBegin:
      case EventKind::kEnd:
        e.payload = Add(model_.last_range_id, UnZigZag(code));
        model_.last_range_id = e.payload;
        break;
      default: e.payload = UnZigZag(code); break;
    }
    f.resize(f.size() - k);
    ColumnarModel::Push(s, {e.ts_ns, EndOf(e)});
    model_.prev_ts = e.ts_ns;
  }
  if (pop.p != pop.end || time.p != time.end || pay.p != pay.end) return fail();
  return true;
}

}  // namespace rlprof::format
