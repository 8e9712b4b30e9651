// The writer's manifest.json of a capture: written when it opens (complete: false), rewritten
// as it grows, and finally at its close (format::ManifestToJson, the one contract).
#include <string>

#include "src/base/files.h"
#include "src/base/version.h"
#include "src/runtime/writer.h"
#include "src/runtime/writer_capture.h"

namespace rlprof::runtime {

format::Manifest Writer::BaseManifest(const Capture& c) const {
  format::Manifest m;
  m.rlprof_version = base::Version();
  m.run_id = opt_.run_id;
  m.scope = c.info.scope;
  m.mode = c.info.mode;
  m.stage = c.info.stage;
  m.trigger = c.info.trigger;
  m.role = c.info.role;
  m.steps = {c.info.first_step};
  const Identity& id = opt_.identity;
  m.rank = id.rank;
  m.local_rank = id.local_rank;
  m.world_size = id.world_size;
  m.host = id.host;
  m.pid = id.pid;
  m.roles = id.roles;
  m.replica = id.replica;
  m.identity_source = id.source;
  m.clock_source = ClockSourceName(c.conv.source);
  m.tsc_hz = c.conv.tick_hz();
  m.offset_measured = offset_measured_.load(std::memory_order_acquire);
  m.offset_to_rank0_ns = offset_to_rank0_ns_.load(std::memory_order_relaxed);
  m.monotonic_anchor_ns = c.anchor.monotonic_ns;
  m.realtime_anchor_ns = c.anchor.realtime_ns;
  m.window_open_ns = c.open_ns;
  m.contents = opt_.contents;
  m.ops_sampling = opt_.ops_sampling;
  m.files = {{"events.rlp", 0}};
  m.complete = false;
  return m;
}

void Writer::WriteManifest(Capture& c) {
  // Padded with whitespace (still valid JSON) so that the final manifest can overwrite it in
  // place when the disk is full by then (WriteFinalManifest). While the window is open it
  // says complete: false, no close, and the events of the complete chunks written so far.
  format::Manifest m = BaseManifest(c);
  if (c.raw) {
    m.event_count = static_cast<int64_t>(c.raw->events_written());
    m.files = {{"events.rlp", static_cast<int64_t>(c.raw->bytes_written())}};
  }
  c.manifest_events = static_cast<uint64_t>(m.event_count);
  c.manifest_written_ns = MonotonicNowNs();
  std::string text = format::ManifestToJson(m, config_text_);
  text.append(kManifestReserveBytes, ' ');
  text += '\n';
  // The first one goes into the directory made a moment ago: created directly (no temporary
  // file and rename); later ones replace it atomically (readers may be looking).
  const std::string path = c.dir + "/manifest.json";
  if (base::Status s = c.manifest_bytes == 0 ? base::WriteNewFile(path, text)
                                              : base::WriteFileAtomic(path, text);
      !s.ok())
    CaptureError(c, s.message());
  else
    c.manifest_bytes = text.size();
}

bool Writer::WriteFinalManifest(Capture& c, const format::Manifest& m) {
  const std::string path = c.dir + "/manifest.json";
  std::string text = format::ManifestToJson(m, config_text_);
  // No open-time manifest (a window that closed before its first flush): the directory's
  // first and only manifest, made directly; otherwise it replaces the open-time one atomically.
  base::Status s = c.manifest_bytes == 0 ? base::WriteNewFile(path, text)
                                          : base::WriteFileAtomic(path, text);
  if (s.ok()) return true;
  // No new file could be made (ENOSPC, EDQUOT, a directory that became read-only): rewrite the
  // open-time manifest's blocks instead, which needs no new space when the text fits in them.
  // Without its config (the open-time manifest has it) if that is what it takes to fit.
  if (c.manifest_bytes != 0) {
    if (text.size() > c.manifest_bytes) {
      text = format::ManifestToJson(m);  // m has no config_json: the plan is left out
    }
    if (text.size() <= c.manifest_bytes && base::OverwriteFileInPlace(path, text).ok()) return true;
  }
  ReportFault(s.message());
  return false;
}

}  // namespace rlprof::runtime
