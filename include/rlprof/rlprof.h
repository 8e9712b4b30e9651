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
  RLPROF_SUB_STEP_MINI_BATCH = 3
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

#ifdef __cplusplus
}
#endif

#endif /* RLPROF_INCLUDE_RLPROF_RLPROF_H_ */
