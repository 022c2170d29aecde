/* ckpt.h — checkpoints of the model's (unpartitioned) tensors, the optimizer's slot
 * variables ("hidden/weights/Momentum") and the global step, as TensorFlow's Saver does:
 * DIR/model.ckpt-<step> plus DIR/checkpoint naming the latest and the kept ones (the
 * last CKPT_KEEP; older ones are deleted). Written atomically (temporary file, fsync,
 * rename, directory fsync) so a crash never leaves a torn checkpoint. File: "DPCKPT01", u32 version, i64 global step, u32 tensor count, then per
 * tensor u16 name length, name, u64 float count, floats; then a CRC32 of all before.
 * ckpt_info() and ckpt_diff() are `downpour checkpoint info|diff` (inspect_checkpoint). */
#ifndef RUNTIME_CKPT_H
#define RUNTIME_CKPT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CKPT_MAX_TENSORS 64
#define CKPT_KEEP 5          /* TensorFlow's Saver max_to_keep */

typedef struct ckpt_tensor {
    const char *name;
    float *data;      /* borrowed */
    size_t count;
} ckpt_tensor;

/* Creates dir (and its parents) if missing and checks that a file can be written in it (a probe file,
 * removed). Returns 0, or DP_EIO with a one-line message naming the directory. */
int ckpt_dir_check(const char *dir, char *err);

/* Writes tensors and global_step into dir (created if missing) as model.ckpt-<step>,
 * names it in the index, and deletes the checkpoints beyond the last CKPT_KEEP the
 * index listed. Returns 0 or a dp_err; path_out (may be NULL, 1024 bytes) receives the
 * file written. t is borrowed for the call. */
int ckpt_save(const char *dir, int64_t global_step, const ckpt_tensor *t, int n, char *path_out,
              char *err);

/* --save-checkpoint-steps / --save-checkpoint-secs: is a checkpoint due at global step gs,
 * the last saved (or restored) being of saved_step at saved_ns? Never for a step not past
 * saved_step. The steps rule is anchored to the multiples of every_steps (the first step
 * read at or past each), not to the last save: a chief that reads 26 once still saves 50,
 * 75, ... rather than drifting to 51, 76, ... as TensorFlow's SecondOrStepTimer would.
 * 0 turns a rule off. */
int ckpt_due(int64_t gs, int64_t saved_step, uint64_t saved_ns, uint64_t now_ns, int every_steps,
             int every_secs);

/* Finds the latest checkpoint in dir: 1 found (path in path_out, 1024 bytes), 0 none
 * (no index file, or dir is not a directory), or a dp_err. */
int ckpt_latest(const char *dir, char *path_out, char *err);

/* Reads a checkpoint into t[0..n): each name must be in the file with its count, and
 * the file must hold no others (errors name the file and the tensor). Returns 0 or a
 * dp_err. */
int ckpt_load(const char *path, int64_t *global_step, const ckpt_tensor *t, int n, char *err);

/* Reads any checkpoint: allocates names and data (free with ckpt_free_loaded). */
typedef struct ckpt_loaded {
    int64_t global_step;
    int n;
    char *names[CKPT_MAX_TENSORS];
    float *data[CKPT_MAX_TENSORS];
    size_t count[CKPT_MAX_TENSORS];
} ckpt_loaded;
int ckpt_read(const char *path, ckpt_loaded *out, char *err);
void ckpt_free_loaded(ckpt_loaded *l);

/* As ckpt_read, where path_or_dir may also be a checkpoint directory: one with a
 * "checkpoint" file is read through it (its latest checkpoint); anything else is read as
 * a file. Returns 0 (free *out with ckpt_free_loaded) or a dp_err with err filled. */
int ckpt_read_any(const char *path_or_dir, ckpt_loaded *out, char *err);

/* Prints the checkpoint at path_or_dir (see ckpt_read_any) on out: "global_step: N",
 * then per tensor its name, float count, sum, min and max. Returns 0 or a dp_err with
 * err filled (unreadable; nothing printed). out is borrowed for the call. */
int ckpt_info(FILE *out, const char *path_or_dir, char *err);

/* Compares checkpoints a and b (each a file or directory, see ckpt_read_any) and prints
 * on out a line when the global steps differ, per tensor pair the largest absolute
 * difference (marked "(over tolerance)" above tol; NaN counts as infinite) or that name
 * or size differ, then "checkpoints match" or "checkpoints differ". *match is 1 when
 * the global steps, tensor count, names and sizes agree and every difference is <= tol,
 * else 0. Returns 0, or a dp_err with err filled when a or b is unreadable (nothing
 * printed, *match untouched). out is borrowed for the call. */
int ckpt_diff(FILE *out, const char *a, const char *b, double tol, int *match, char *err);

#endif
