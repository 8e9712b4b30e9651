/* rlprof's C API: a stable ABI over the capture runtime for C programs and foreign-function
 * bindings. Every function is safe to call before init and after shutdown (a no-op that
 * returns RLPROF_ERROR_STATE where it returns an int). No function lets a C++ exception
 * escape. Profiling faults never surface as errors: an unusable or full save path, or a writer
 * thread that cannot start, prints one warning and rlprof_enabled() returns 0 from then on
 * (docs/reliability.md).
 *
 *   #include "rlprof/rlprof.h"
 *   const char* ovr[] = {"rlprof.steps=[2]"};
 *   if (rlprof_init_from_config("profile.yaml", ovr, 1, NULL) != RLPROF_OK)
 *     fprintf(stderr, "%s\n", rlprof_last_error());
 *   for (int64_t step = 1; step <= 3; ++step) {
 *     rlprof_step_begin(step);
 *     rlprof_stage_begin("actor", "actor_update");
 *     rlprof_range_id r = rlprof_range_start("forward");   (static string: kept by pointer)
 *     ...
 *     rlprof_range_end(r);                                  (may be on another thread)
 *     rlprof_counter("loss", 0.25);
 *     rlprof_stage_end();
 *     rlprof_step_end();
 *   }
 *   rlprof_shutdown();
 *
 * Names are kept by pointer: pass string literals, or strings that live until shutdown, or
 * the pointer returned by rlprof_intern_name() for names built at run time.
 * Thread-safety: markers (range, mark, counter, thread name) from any thread; the rest is
 * serialised internally. The library keeps one process-global session.
 */
#ifndef RLPROF_INCLUDE_RLPROF_RLPROF_H_
#define RLPROF_INCLUDE_RLPROF_RLPROF_H_

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
  RLPROF_OK = 0,
  RLPROF_ERROR_INVALID_ARGUMENT = 1, /* a null or out-of-range argument */
  RLPROF_ERROR_CONFIG = 2,           /* the config could not be loaded (see rlprof_last_error) */
  RLPROF_ERROR_STATE = 3,            /* not initialised, or initialised twice */
  RLPROF_ERROR_INTERNAL = 4
};

/* Sub-step kinds for rlprof_sub_step (the units schedules count). */
enum {
  RLPROF_SUB_STEP_DECODE = 1,      /* one decode iteration of a rollout engine */
  RLPROF_SUB_STEP_MICRO_BATCH = 2,
  RLPROF_SUB_STEP_MINI_BATCH = 3,
  RLPROF_SUB_STEP_STEP = 4         /* an RL step (the unit of step schedules) */
};

/* An async range handle; 0 = not recorded (no window open). */
typedef uint64_t rlprof_range_id;

/* Options of rlprof_init_from_config. Initialise with rlprof_options_init; fields may be
 * added at the end in later versions (struct_size tells the library which ones you set). */
typedef struct rlprof_options {
  uint32_t struct_size;
  int64_t rank;       /* -1: from the launcher's environment (torchrun, Open MPI, PMI, Slurm) */
  int64_t local_rank; /* -1: from the environment */
  int64_t world_size; /* -1: from the environment */
  const char* roles;  /* comma list, e.g. "actor,rollout,ref"; NULL: RLPROF_ROLES */
  const char* run_id; /* NULL: RLPROF_RUN_ID, else time + random */
  int install_signal_handlers; /* flush on SIGTERM/SIGINT and chain (default 1) */
  int quiet;                   /* no "rlprof: capture …" lines (default 0) */
  /* Since 0.2 (struct_size says whether they are set): */
  int64_t replica;  /* -1: RLPROF_REPLICA, else none */
  int allow_tsc;    /* 0: CLOCK_MONOTONIC ticks (also RLPROF_CLOCK=monotonic); default 1 */
  /* 1: this session shuts itself down when another one is opened in the process (a tool that
   * profiles a program on its behalf, as the NVTX injection library, yields to the program's
   * own session). Default 0: a second session opened while one records records nothing. */
  int yield_to_next;
} rlprof_options;

void rlprof_options_init(rlprof_options* options);

/* Loads a config (verl, MindSpeed-RL or rlprof dialect) with n KEY=VALUE overrides and
 * starts the process-global session. options may be NULL. */
int rlprof_init_from_config(const char* path, const char* const* overrides, size_t n_overrides,
                            const rlprof_options* options);
/* Closes any open window (reason shutdown), writes everything, stops the writer thread. */
int rlprof_shutdown(void);
/* 1 when this process may capture (selected by the config, save path usable), else 0. */
int rlprof_enabled(void);
/* 1 while a capture window is open. */
int rlprof_recording(void);
/* The last error message of this thread ("" if none). */
const char* rlprof_last_error(void);
/* Waits until every closed window is on disk (at most timeout_s seconds). */
int rlprof_flush(double timeout_s);
/* Copies <save_path>/<run_id> into buf (NUL-terminated, truncated to size). */
int rlprof_run_dir(char* buf, size_t size);

/* The library's version (the project version, e.g. for a manifest or a log line). */
const char* rlprof_version(void);

/* ---- Sessions as handles: several may exist in a process (one records at a time); the
 * rlprof_init_* / rlprof_step_* functions above and below drive the default one. Every
 * function takes a NULL handle as "not initialised" (RLPROF_ERROR_STATE).
 *
 *   rlprof_session* s = NULL;
 *   if (rlprof_session_open_text("rlprof: {steps: [2]}", "<inline>", NULL, 0, NULL, &s) != RLPROF_OK)
 *     fprintf(stderr, "%s\n", rlprof_last_error());
 *   rlprof_session_step_begin(s, 2); ... rlprof_session_step_end(s);
 *   rlprof_session_close(s);        (shuts down, then frees; NULL is fine)
 */
typedef struct rlprof_session rlprof_session;

/* A session from a config file (any dialect) with n KEY=VALUE overrides. RLPROF_ERROR_CONFIG
 * when the config cannot be loaded; output problems never fail (the session is disabled). */
int rlprof_session_open(const char* path, const char* const* overrides, size_t n_overrides,
                        const rlprof_options* options, rlprof_session** out);
/* The same from config text (YAML or JSON); `origin` names it in errors (NULL: "<text>"). */
int rlprof_session_open_text(const char* text, const char* origin, const char* const* overrides,
                             size_t n_overrides, const rlprof_options* options,
                             rlprof_session** out);
/* Closes any open window, writes everything, stops the writer thread (idempotent). */
int rlprof_session_shutdown(rlprof_session* s);
/* rlprof_session_shutdown, then frees the handle. */
void rlprof_session_close(rlprof_session* s);
/* The default session (rlprof_init_from_config), NULL when none. */
rlprof_session* rlprof_default_session(void);
/* The number of sessions opened in this process and not shut down yet. */
int rlprof_session_count(void);
/* 1 when this session may capture (selected by the config, save path usable, not shut
 * down), else 0. */
int rlprof_session_enabled(const rlprof_session* s);
int rlprof_session_step_begin(rlprof_session* s, int64_t step);
int rlprof_session_step_end(rlprof_session* s);
int rlprof_session_stage_begin(rlprof_session* s, const char* role, const char* stage);
int rlprof_session_stage_end(rlprof_session* s);
int rlprof_session_sub_step(rlprof_session* s, int kind);
/* Manual capture, whatever the config selects: opens a window now (scope "manual" when NULL).
 * RLPROF_ERROR_STATE when a window is open or the session is disabled. */
int rlprof_session_capture_start(rlprof_session* s, const char* scope);
int rlprof_session_capture_stop(rlprof_session* s);
/* Waits until every closed window, and what the open one holds so far, is on disk. */
int rlprof_session_flush(rlprof_session* s, double timeout_s);
/* This process's measured clock offset to rank 0 (ns), written into later manifests. */
int rlprof_session_set_clock_offset(rlprof_session* s, int64_t offset_ns);

/* Who this process is, and what the config asks of it. Strings are owned by the session
 * and live until rlprof_session_close. Set struct_size (or zero the struct and set it). */
typedef struct rlprof_session_info {
  uint32_t struct_size;
  int64_t rank;
  int64_t local_rank;
  int64_t world_size;
  int64_t pid;
  int64_t replica;          /* -1: none */
  const char* host;
  const char* roles;        /* comma list, "" for none */
  const char* rank_source;  /* explicit | torchrun | openmpi | pmi | slurm | default */
  const char* run_id;
  const char* run_dir;      /* <save_path>/<run_id>, absolute */
  int selected;             /* the config selects this process (before output checks) */
  const char* mode;         /* e2e | discrete */
  const char* stages;       /* comma list of the stages the config names for this process */
  uint32_t contents;        /* RLPROF_CONTENTS_* bits */
  const char* level;        /* the device level: level0 | level1 | level2 */
} rlprof_session_info;
int rlprof_session_get_info(const rlprof_session* s, rlprof_session_info* out);
/* The absolute directories of the captures finalised so far: their number, and the i-th one
 * copied into buf (NUL-terminated, truncated to size; RLPROF_ERROR_INVALID_ARGUMENT past the
 * end). */
size_t rlprof_session_capture_count(const rlprof_session* s);
int rlprof_session_capture_dir(const rlprof_session* s, size_t i, char* buf, size_t size);

/* The stage vocabulary: rlprof's name of a stage (actor_generate -> rollout_generate), and the
 * role owning a known stage ("" for other names); copied into buf like rlprof_run_dir. */
int rlprof_canonical_stage(const char* stage, char* buf, size_t size);
int rlprof_stage_role(const char* stage, char* buf, size_t size);

/* RL structure: steps (1-based), stages, sub-steps. */
int rlprof_step_begin(int64_t step);
int rlprof_step_end(void);
int rlprof_stage_begin(const char* role, const char* stage);
/* rlprof_stage_begin with `counts_kind` (an RLPROF_SUB_STEP_* value; 0 = none), kept for
 * compatibility: a stage follows the schedule the config gives it whatever the value. */
int rlprof_stage_begin_ex(const char* role, const char* stage, int counts_kind);
int rlprof_stage_end(void);
int rlprof_sub_step(int kind);

/* Markers. */
rlprof_range_id rlprof_range_start(const char* name);
void rlprof_range_end(rlprof_range_id id);
void rlprof_mark(const char* name);
void rlprof_counter(const char* track, double value);
void rlprof_set_thread_name(const char* name);
/* A copy of name that lives until the process exits (one per distinct content). */
const char* rlprof_intern_name(const char* name);
/* A complete range [t0, t1] (rlprof_ticks) named `name` (kept by pointer) on the calling
 * thread, recorded if `window` is still the open one: what rlprof.hpp's RLPROF_RANGE and the
 * Python rlprof.annotate call at the end of a range whose start they timed themselves. */
void rlprof_emit_complete(uint32_t window, const char* name, uint64_t t0, uint64_t t1);

/* ---- Sources: code outside the library (the torch operator hook of the Python package, a
 * vendor's activity API) that records into rlprof's captures. docs/runtime.md, "Sources".
 *
 *   static void my_start(void* user, uint32_t window) { enable_my_callbacks(); }
 *   static void my_stop(void* user, uint32_t window)  { disable_my_callbacks(); }
 *   rlprof_source src;
 *   rlprof_source_init(&src);
 *   src.name = "my_ops"; src.contents = RLPROF_CONTENTS_OPS;
 *   src.start = my_start; src.stop = my_stop;
 *   rlprof_register_source(&src);           (before or after init; from the next window on)
 *   ... in a callback, on any thread:
 *   uint32_t w = rlprof_window();
 *   if (w != 0) {
 *     rlprof_event e = {0};
 *     e.ts = (int64_t)rlprof_ticks(); e.payload = duration_in_ticks;
 *     e.name = rlprof_intern("aten::mm", 8); e.kind = RLPROF_EVENT_COMPLETE; e.category = 4;
 *     rlprof_emit(w, &e);                   (the calling thread's buffer; no lock, no allocation)
 *   }
 *
 * Lifecycle: start(window) when a capture window opens, boundary(window) at each step / stage
 * boundary inside it, flush(window) just before it stops recording (events emitted during
 * flush still land), stop(window) once it has stopped; all four on the thread that drives the
 * session (the training thread) with the session's lock held: keep them short, and never call
 * back into the session (rlprof_step_begin, …) from them. tick(window) and drain(sink, final)
 * run on rlprof's writer thread; counters(window, add, ctx) when a capture is finalised (its
 * key/value pairs go into manifest.json's sources.<name>). Every callback may be NULL. A
 * source runs in a process whose config asks for any of its `contents` bits (0 = always).
 * destroy(user) is called once nothing uses the source any more (after unregistering). */
enum {
  RLPROF_CONTENTS_CPU = 1,
  RLPROF_CONTENTS_DEVICE = 2,
  RLPROF_CONTENTS_OPS = 4,
  RLPROF_CONTENTS_SHAPES = 8,
  RLPROF_CONTENTS_MEMORY = 16,
  RLPROF_CONTENTS_STACK = 32,
  RLPROF_CONTENTS_MODULE = 64
};

/* Event kinds (the record layout of include/rlprof/format/event.h). */
enum {
  RLPROF_EVENT_COMPLETE = 1, /* ts = begin, payload = duration */
  RLPROF_EVENT_BEGIN = 2,
  RLPROF_EVENT_END = 3,
  RLPROF_EVENT_INSTANT = 4,
  RLPROF_EVENT_COUNTER = 5   /* payload = IEEE-754 double bit pattern */
};

/* One 32-byte event record, the same layout as rlprof::format::Event. category: the Category
 * numbers of event.h (4 operator, 5 communication, 6 kernel, 7 memcpy, 8 memset, 9 sync,
 * 10 memory, 11 runtime API, …). Times are ticks (rlprof_ticks) for rlprof_emit, ticks or
 * CLOCK_MONOTONIC ns for rlprof_sink_emit. */
typedef struct rlprof_event {
  int64_t ts;
  int64_t payload;
  uint32_t name;  /* rlprof_intern() */
  uint16_t track; /* rlprof_emit: filled in; sink: rlprof_sink_add_track() or 0 */
  uint8_t kind;
  uint8_t category;
  uint32_t arg0;
  uint32_t arg1;
} rlprof_event;

/* The writer thread's side, handed to drain(). */
typedef struct rlprof_sink rlprof_sink;
enum { RLPROF_TIME_TICKS = 0, RLPROF_TIME_MONOTONIC_NS = 1 };
/* Appends e to the capture of `window`; 0 when that capture is not open (counted as late). */
int rlprof_sink_emit(rlprof_sink* sink, uint32_t window, const rlprof_event* e, int time_base);
/* A track: kind 1 = device stream (os_id = device << 32 | stream), 2 = counter series. */
uint16_t rlprof_sink_add_track(rlprof_sink* sink, int kind, uint64_t os_id, const char* name);

typedef void (*rlprof_counter_add_fn)(void* ctx, const char* key, int64_t value);

/* What configure_with() is told about the process (struct_size first; fields are only ever
 * added at the end). */
typedef struct rlprof_source_config {
  uint32_t struct_size;
  uint32_t contents;   /* the process's RLPROF_CONTENTS_* bits */
  const char* level;   /* "level0" … "level2" (the config's device level) */
  double ops_sampling; /* the share of framework operator calls to record, (0, 1]; 1 = every one */
} rlprof_source_config;

typedef struct rlprof_source {
  uint32_t struct_size;
  const char* name; /* copied; unique among registered sources */
  uint32_t contents; /* RLPROF_CONTENTS_* bits; 0 = whatever the config asks */
  void* user;
  /* 0 = ready; anything else keeps the source off for this session. contents: the process's
   * RLPROF_CONTENTS_* bits; level: "level0" … "level2" (the config's device level). */
  int (*configure)(void* user, uint32_t contents, const char* level);
  void (*start)(void* user, uint32_t window);
  void (*boundary)(void* user, uint32_t window);
  void (*flush)(void* user, uint32_t window);
  void (*stop)(void* user, uint32_t window);
  void (*tick)(void* user, uint32_t window);
  void (*drain)(void* user, rlprof_sink* sink, uint32_t final_window);
  void (*counters)(void* user, uint32_t window, rlprof_counter_add_fn add, void* ctx);
  void (*destroy)(void* user);
  /* When set, called instead of configure(), with everything configure() gets and more. */
  int (*configure_with)(void* user, const rlprof_source_config* config);
} rlprof_source;

void rlprof_source_init(rlprof_source* source);
/* RLPROF_ERROR_INVALID_ARGUMENT: no name; RLPROF_ERROR_STATE: the name is taken. */
int rlprof_register_source(const rlprof_source* source);
int rlprof_unregister_source(const char* name);
/* The generation of the open capture window (0 = none); cheap (one relaxed load). */
uint32_t rlprof_window(void);
/* The hot path's clock (TSC or CLOCK_MONOTONIC ns; the writer converts). */
uint64_t rlprof_ticks(void);
/* Id of a string in the session's string table (0 for NULL / empty). */
uint32_t rlprof_intern(const char* s, size_t n);
/* Records e (ticks) into the calling thread's buffer of `window`; 0 if it is not open. */
int rlprof_emit(uint32_t window, const rlprof_event* e);
/* A track of the live session that a source places events on itself (an NVTX domain's
 * ranges): kind 3 = async ranges, 0 = thread; the same (kind, os_id, name) gives the same id
 * within a session. 0 when no session is live or no ids are left. Takes a lock: cache it
 * (per window) on the hot path. */
uint16_t rlprof_track(int kind, uint64_t os_id, const char* name);
/* rlprof_emit that keeps e->track (from rlprof_track; 0 = the calling thread's track). */
int rlprof_emit_track(uint32_t window, const rlprof_event* e);
/* External correlation: device work launched by this thread between a push and its pop
 * carries `id` (with CUPTI: the runtime API event's external_id), so it is attributed to the
 * operator / range that pushed it. No-ops (one load) while no device source is active. */
void rlprof_correlation_push(uint64_t id);
void rlprof_correlation_pop(void);
/* 1 while a device source takes external correlation ids (pushing is worth it), else 0. */
int rlprof_correlation_active(void);

/* The markers' hot state, read inline by the C++ header (and by sources) with one relaxed
 * load: `window` is rlprof_window(), `use_tsc` says whether rlprof_ticks() is the TSC (1)
 * or CLOCK_MONOTONIC ns (0). Read it only with __atomic_load_n(…, __ATOMIC_RELAXED); never
 * write it. */
typedef struct rlprof_hot_state {
  uint32_t window;
  uint32_t use_tsc;
} rlprof_hot_state;
extern rlprof_hot_state rlprof_hot;

/* ---- Samples: each generated sample's life (issue 33; docs/samples.md). A rollout loop (or
 * rlprof's vLLM source) hands over one record per finished sample, with the times it saw on
 * CLOCK_MONOTONIC (Python: time.monotonic_ns()); a trainer says what became of it by id. The
 * records go into the open capture window (0 returned when none is open), a few events each,
 * counted against the capture's budget. `sample_rate` (config) keeps a deterministic share of
 * ids: every process keeps the same ones, so a sample and its use stay joined.
 *
 *   rlprof_sample s;
 *   rlprof_sample_init(&s);                       (unknown: 0 for times, -1 for counts)
 *   s.id = "req-17"; s.submit_ns = t0; s.first_token_ns = t1; s.last_token_ns = t2;
 *   s.prompt_tokens = 64; s.completion_tokens = 200; s.finish_reason = "stop";
 *   rlprof_sample_record(&s);                     (strings are copied)
 *   ... in the trainer: rlprof_sample_use("req-17", "consumed", step, version, 0);
 */
typedef struct rlprof_sample_span {
  const char* phase;  /* "tool", "reward", "wait", … : recorded as sample/<phase> */
  const char* label;  /* optional: the tool's name, … */
  int64_t start_ns, end_ns;
} rlprof_sample_span;

typedef struct rlprof_sample {
  uint32_t struct_size;       /* set by rlprof_sample_init */
  const char* id;             /* required: the sample's key, unique in the run */
  const char* group;          /* optional: its prompt group (GRPO's uid) */
  const char* finish_reason;  /* optional: "stop", "length", "abort", … */
  /* CLOCK_MONOTONIC ns; 0 = unknown. submit: handed to the engine; queued → scheduled: waited
   * for a batch slot; scheduled → first token: prefill; first → last token: decode; end: done
   * (default: the last token). */
  int64_t submit_ns, queued_ns, scheduled_ns, first_token_ns, last_token_ns, end_ns;
  /* -1 = unknown */
  int64_t prompt_tokens, completion_tokens, cached_tokens, preemptions;
  int64_t version_first, version_last; /* weight versions it was generated with */
  int64_t replica;                     /* the engine replica that made it (-1: this process) */
  const rlprof_sample_span* spans;     /* tool calls, reward, … (n_spans of them) */
  uint32_t n_spans;
} rlprof_sample;

void rlprof_sample_init(rlprof_sample* s);
/* 1: recorded into the open window; 0: not (no window, sampled out, no session). */
int rlprof_sample_record(const rlprof_sample* s);
/* What became of sample `id`: outcome "consumed" (by the training step `step`, whose policy is
 * `version`; -1 unknown) or why it was dropped ("stale", "filtered", "truncated", "overflow",
 * …). at_ns: when (0 = now). 1: recorded, 0: not. */
int rlprof_sample_use(const char* id, const char* outcome, int64_t step, int64_t version, int64_t at_ns);
/* Whether `sample_rate` keeps `id` (1) or not (0): the same answer in every process. */
int rlprof_sample_kept(const char* id);

#if defined(__GNUC__) || defined(__clang__)
/* rlprof_window() and rlprof_ticks() inline (no call): for markers on a hot path. */
static inline uint32_t rlprof_window_inline(void) {
  return __atomic_load_n(&rlprof_hot.window, __ATOMIC_RELAXED);
}
static inline uint64_t rlprof_ticks_inline(void) {
#if defined(__x86_64__) || defined(__i386__)
  if (__atomic_load_n(&rlprof_hot.use_tsc, __ATOMIC_RELAXED)) return __builtin_ia32_rdtsc();
#endif
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
#else
static inline uint32_t rlprof_window_inline(void) { return rlprof_window(); }
static inline uint64_t rlprof_ticks_inline(void) { return rlprof_ticks(); }
#endif

#ifdef __cplusplus
}
#endif

#endif /* RLPROF_INCLUDE_RLPROF_RLPROF_H_ */
