/* dp.h — what every Downpour module shares: the error enum, allocation wrappers that
 * abort on out-of-memory, error-message helpers, logging, a monotonic clock and a small
 * seeded RNG. Depends only on libc. The only mutable global is the log level. */
#ifndef DP_H
#define DP_H

#include <stddef.h>
#include <stdint.h>
#include <stdarg.h>
#include <assert.h>

/* Project-wide return codes: 0 on success, one of these (negative) on failure. */
enum dp_err {
    DP_OK = 0,
    DP_ERR = -1,      /* generic failure, see message */
    DP_EINVAL = -2,   /* bad input: flag, file, frame */
    DP_EIO = -3,      /* system call failed */
    DP_EPROTO = -4,   /* peer broke the protocol */
    DP_ETIMEDOUT = -5,
    DP_ECLOSED = -6,  /* peer closed the connection */
    DP_ECORRUPT = -7, /* damaged file */
    DP_ENOTFOUND = -8,
    DP_EFULL = -9     /* a bounded queue is full */
};

/* Size of the caller-supplied error buffers passed as `char err[DP_ERRLEN]`. */
#define DP_ERRLEN 512

#define DP_UNUSED(x) ((void)(x))
/* An assert that carries its reason, libev style: dp_assert("shard out of range", i < n). */
#define dp_assert(why, cond) assert(((void)(why), (cond)))
#define DP_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
/* Element-wise float loops: GCC at -O2 vectorises only loops with a fixed trip count, so
 * the hot ones run in blocks of DP_VEC_BLOCK elements (restrict pointers) and finish the
 * rest one by one; each element gets the same operations, so the results are bit for
 * bit those of the plain loop. Used by the optimizer (cluster/optim.c) and the CPU ops
 * (runtime/nn.c). */
#define DP_VEC_BLOCK 8
/* ... and, on x86-64, those loops are built twice, for SSE2 and for AVX2, the loader
 * picking the one this CPU runs (GCC's and clang's target_clones): eight floats an
 * instruction where the CPU has them, with the same operations on each element (AVX2
 * alone does not fuse a multiply and an add; ISO C mode keeps contraction off), so the
 * same bits either way. */
#if defined(__x86_64__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define DP_VEC_CLONES __attribute__((target_clones("avx2", "default")))
#endif
#endif
#ifndef DP_VEC_CLONES
#define DP_VEC_CLONES
#endif
#define dp_container_of(ptr, type, member) \
    ((type *)(void *)((char *)(ptr) - offsetof(type, member)))

/* Little-endian integers in byte buffers: the one set every format uses (frames, traces,
 * checkpoints). */
static inline void dp_put_u16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static inline void dp_put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline void dp_put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint16_t dp_get_u16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t dp_get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t dp_get_u64(const uint8_t *p)
{
    return (uint64_t)dp_get_u32(p) | (uint64_t)dp_get_u32(p + 4) << 32;
}

/* FNV-1a, 64 bits, over n bytes, going on from h (DP_FNV1A_INIT to begin): the config
 * hash, the parameters' checksum, the string table's hash. */
#define DP_FNV1A_INIT 0xcbf29ce484222325ull   /* the FNV offset basis */
static inline uint64_t dp_fnv1a(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = (const uint8_t *)p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

/* Allocation that aborts with a message on out-of-memory; never returns NULL
 * (xmalloc(0) returns a unique pointer). Free with free(). */
void *xmalloc(size_t n);
void *xcalloc(size_t count, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);

/* Formats a message into err (DP_ERRLEN bytes) when err is not NULL; returns `code`
 * so that failure paths can be written `return dp_fail(err, DP_EINVAL, "...")`. */
int dp_fail(char *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Log levels; dp_log_level is the one mutable global besides signal flags. */
enum { DP_LOG_ERROR = 0, DP_LOG_WARN = 1, DP_LOG_INFO = 2, DP_LOG_DEBUG = 3 };
extern int dp_log_level;
/* Prints "downpour: <prefix>: message" to stderr when level <= dp_log_level. */
void dp_log(int level, const char *prefix, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Monotonic nanoseconds (CLOCK_MONOTONIC) and wall-clock nanoseconds (CLOCK_REALTIME). */
uint64_t dp_now_ns(void);
uint64_t dp_wall_ns(void);
/* CPU nanoseconds this process has used so far (CLOCK_PROCESS_CPUTIME_ID: all its threads,
 * user and system): what a task did, as against how long it took on a shared host. */
uint64_t dp_cpu_ns(void);
/* CPU nanoseconds the calling thread has used so far (CLOCK_THREAD_CPUTIME_ID). */
uint64_t dp_thread_cpu_ns(void);
/* The host's CPU nanoseconds so far in interrupt and softirq handling, all cores
 * (/proc/stat, to the kernel's tick): work no task's CPU time counts, on a busy loopback
 * mostly receiving what was sent. 0 with *out set, -1 when it cannot be read. */
int dp_host_irq_ns(uint64_t *out);

/* A small deterministic RNG (xoshiro256**, seeded through splitmix64). Embedded by
 * value in whatever owns it; no global state. */
typedef struct dp_rng { uint64_t s[4]; } dp_rng;
void dp_rng_seed(dp_rng *r, uint64_t seed);
uint64_t dp_rng_next(dp_rng *r);
/* Uniform double in [0, 1). */
double dp_rng_uniform(dp_rng *r);
/* Standard normal (Box-Muller, no cached state). */
double dp_rng_normal(dp_rng *r);
/* Uniform integer in [0, n) without modulo bias; n > 0. */
uint64_t dp_rng_below(dp_rng *r, uint64_t n);

/* Parses a decimal integer / double from the whole of s (no trailing junk, no
 * overflow) into *out; returns 0 or DP_EINVAL. */
int dp_parse_int(const char *s, long long *out);
int dp_parse_double(const char *s, double *out);

/* Edit distance between a and b: letters inserted, deleted, changed, or two neighbours
 * swapped (optimal string alignment), '-' in a matching '_' in b (a flag against a key);
 * 99 when either is longer than 63 bytes. For "did you mean" suggestions. */
size_t dp_edit_distance(const char *a, const char *b);
/* The most edits a suggestion may be from what was typed, so that "--bogus" suggests
 * nothing: one in a name of up to 4 letters (leading dashes not counted), two up to 8,
 * three beyond. */
size_t dp_suggest_edits(const char *typed);

/* Reads the whole file at path (at most max bytes) into a NUL-terminated buffer; *len
 * gets its length when len is not NULL. Returns the buffer (caller frees with free()),
 * or NULL with "PATH: reason" in err. */
char *dp_read_file(const char *path, size_t max, size_t *len, char *err);

/* Creates a folder and its parents (mkdir -p). Returns 0, or DP_EIO with "PATH: reason". */
int dp_mkdirs(const char *path, char *err);

/* Whether a window can open at all: X11 or Wayland named in the environment, or a video
 * driver asked for by name (SDL_VIDEODRIVER). Without one SDL falls back to an offscreen
 * driver and a viewer would run unseen, so callers go headless (or fail) and say so. */
int dp_have_display(void);

#endif
