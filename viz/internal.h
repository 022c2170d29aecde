/* internal.h — what the viz/ files share and nobody else sees: the model (time series
 * and catalogue built by one pass over the events: loss, accuracy, global step, per-ps
 * traffic, staleness, timeline lanes, placement), the source struct behind viz_source,
 * the per-frame scan (packets in flight, flashes), the palette and the drawing helpers.
 * Time series live in a fixed number of buckets whose width doubles when a live run
 * outgrows them, so memory stays bounded for any run length. */
#ifndef VIZ_INTERNAL_H
#define VIZ_INTERNAL_H

#include <cairo.h>

#include "hub/stream.h"
#include "events/trace.h"
#include "viz/layout.h"
#include "viz/viz.h"

#define VIZ_BUCKETS 2048
#define VIZ_LOSS_WORKERS 8      /* per-worker loss curves kept */
#define VIZ_PS_SERIES 256       /* ps tasks with their own traffic series (rest summed) */
#define VIZ_STALE_BINS 12       /* staleness 0..7 one by one, then 8+, 32+, 256+, 2048+ */
/* The histogram bin (0 .. VIZ_STALE_BINS-1) of a staleness value. */
int viz_stale_bin(double staleness);
#define VIZ_MAX_LANES 64        /* tasks with their own timeline lane: ps and workers
                                 * with an index below VIZ_MAX_LANES / 2 */
#define VIZ_MAX_OPS 20000       /* placement rows kept */
#define VIZ_MAX_MARKS 8192

/* Timeline activities; PACED (--pace) and EVAL (the chief evaluating) come last, and a
 * lane with neither draws as before. */
enum { VIZ_ACT_PULL, VIZ_ACT_COMPUTE, VIZ_ACT_PUSH, VIZ_ACT_WAIT, VIZ_ACT_PACED, VIZ_ACT_EVAL,
       VIZ_N_ACT };
/* The viewer's own phase beyond events/state.h's: the chief evaluating the test set (the
 * replay state calls that time idle; the model knows it from EVT_EVAL). */
enum { VIZ_PHASE_EVALUATING = EVT_PHASE_COUNT, VIZ_N_PHASES };

typedef struct viz_mark { int64_t t; int kind; int job, task; double value; } viz_mark;
/* An evaluation by the chief: it ran from t0 (its EVT_EVAL's dur back from t, or else the
 * moment the chief last fell idle before t) to t, when it reported acc and loss. */
typedef struct viz_eval { int64_t t; double acc, loss; int64_t step; int64_t t0; } viz_eval;
typedef struct viz_op { uint32_t name, type, device; int is_var; } viz_op;
typedef struct viz_var { uint32_t name, shape, device; int64_t bytes; int ps; } viz_var;
typedef struct viz_taskdev { uint8_t job; int32_t task; uint32_t device; } viz_taskdev;
/* A task's open activities (begins not yet ended) and when it last had none. */
typedef struct viz_act { int32_t cnt[VIZ_N_ACT]; int64_t since[VIZ_N_ACT]; int64_t idle_since; } viz_act;

/* One series: VIZ_BUCKETS rows of k doubles, merged by sum (or max) when buckets double. */
typedef struct viz_series { double *v; int k; int use_max; } viz_series;

typedef struct viz_model {
    int64_t bw;               /* bucket width, ns */
    int nb;                   /* buckets holding data (max index + 1) */
    viz_series loss;          /* k=2: sum, count of STEP_END losses */
    viz_series wloss;         /* k=2*VIZ_LOSS_WORKERS */
    viz_series gstep;         /* k=1, max: global step reached in the bucket (-1 none) */
    viz_series ps_bytes;      /* k=2*VIZ_PS_SERIES: bytes pulled from / pushed to each ps */
    viz_series copy_bytes;    /* k=2*VIZ_MACHINE_DEVICES: bytes copied into each device (by its
                               * index in devs): forward copies, gradients */
    viz_series stale;         /* k=VIZ_STALE_BINS+1: applies per staleness bin, then drops */
    viz_series lane;          /* k=VIZ_MAX_LANES*VIZ_N_ACT: ns of each activity */
    viz_series agg;           /* k=VIZ_N_ACT: ns summed over all workers */
    viz_mark *marks; size_t n_marks, cap_marks;
    viz_eval *evals; size_t n_evals, cap_evals;
    viz_op *ops; size_t n_ops, cap_ops;
    viz_var *vars; int n_vars, cap_vars;
    viz_taskdev *devs; int n_devs, cap_devs;
    int n_ps, n_workers;      /* largest task index + 1 seen */
    int chief;                /* worker index of the chief (0) */
    int local;                /* "engine": "local" (metadata or the cluster's config) */
    int has_paced;            /* a PACED_BEGIN was seen: the paced legend entries show */
    int has_eval;             /* an EVAL was seen: the evaluating legend entries show */
    int64_t t_start;          /* the first CLUSTER_START (the run's start), -1 none */
    int64_t t_story;          /* the first worker pull or global step: where the story
                               * starts after start-up and data loading, -1 none yet */
    /* Stragglers from the metadata ("straggler": "worker:3x4,...", or the older
     * "slow_worker": "3:4"), top level or under "config": slow[w] > 1 for a slowed worker. */
    double *slow; int slow_len;
    /* Shaped links from the metadata (`cluster --net`: "net": [{"job", "task", "label"}]),
     * the first 8 of them. */
    struct { int job, task; char label[32]; } links[8];
    int n_links;
    /* Sampling: a sim trace with per-message events for a sample of workers only
     * ("trace_level": "sample", or "steps": none). sampled[w] marks the workers seen with
     * per-message events (a transfer naming a ps, or an apply / drop naming them). */
    int trace_level;          /* VIZ_TRACE_FULL, _SAMPLE or _STEPS */
    int meta_workers;         /* "cluster": {"workers": N} from the metadata, 0 unknown */
    int meta_ps;              /* ... and its "ps" */
    uint8_t *sampled; int sampled_len, n_sampled;
    int lane_job[VIZ_MAX_LANES], lane_task[VIZ_MAX_LANES], n_lanes;
    int16_t *lane_of[2];      /* [job][task] -> lane + 1 (0 = none), job ps/worker */
    viz_act *act[2]; int act_len[2];
    int64_t max_dur;          /* longest pull/push, for the packet window */
    double dur_sum[2]; int64_t dur_n[2];   /* pull, push: mean duration (live estimate) */
    int64_t t_last;
    uint64_t events;
    char title[128], engine[32], mode[96];
    int metadata_mode;        /* mode came from metadata (config JSON does not override) */
    char run_mode[16];        /* the run's "mode" key as written ("sync", "async", "ssp") */
    int run_backup;           /* its backup_workers (0 none) */
    /* A fork ("fork from here", lab/fork.c): the recorded run's global step it continues
     * from (0: not a fork) and the keys it changed ("backup_workers=1"). A fork's events
     * are on the recorded run's clock, so compare mode shows it at the same trace time. */
    int64_t fork_step;
    char fork_set[96];
} viz_model;

enum { VIZ_TRACE_FULL = 0, VIZ_TRACE_SAMPLE, VIZ_TRACE_STEPS };

void viz_model_init(viz_model *m, int64_t duration_hint);
void viz_model_release(viz_model *m);
void viz_model_add(viz_model *m, const evt_record *e, const char *(*str)(const void *, uint32_t),
                   const void *ctx);
void viz_model_metadata(viz_model *m, const char *json);
/* Bucket of time t (clamped to [0, nb)). */
int viz_model_bucket(const viz_model *m, int64_t t);
/* Global step reached by the end of bucket b (prefix max). */
int64_t viz_model_gstep_at(const viz_model *m, int b);
int viz_model_lane(const viz_model *m, int job, int task);   /* -1 none */
/* Bytes/s over the span buckets ending at bucket b, pulled from (rate[2p]) and pushed to
 * (rate[2p + 1]) each of n_ps ps; ps past the model's own series share its last evenly.
 * rate is the caller's, 2 * n_ps long. */
void viz_model_ps_rates(const viz_model *m, int b, int span, int n_ps, double *rate);
/* The peak over the run of those rates, summed per group and taken per direction (group[p]
 * in [0, n_groups); NULL: every ps its own group). At least 1. Costs one pass over the
 * buckets (a sliding window), so it is cheap enough for every frame. */
double viz_model_ps_rate_peak(const viz_model *m, int span, int n_ps, const int *group,
                              int n_groups);
/* The same for copies between devices: bytes/s into each of the first n devices of devs
 * (forward copies rate[2d], gradients rate[2d + 1]); rate is the caller's, 2 * n long. */
void viz_model_copy_rates(const viz_model *m, int b, int span, int n, double *rate);
/* Whether the run is one machine (`downpour local`): engine local, no ps, one task. */
int viz_model_one_machine(const viz_model *m);
/* Buckets to average rates over: about 1.5 global steps (16 .. nb/4). */
int viz_model_rate_span(const viz_model *m);
/* Devices of task (job, task) in order of appearance: fills ids (up to max), returns
 * the count. */
int viz_model_task_devices(const viz_model *m, int job, int task, uint32_t *ids, int max);
int viz_model_device_index(const viz_model *m, uint32_t device);
int viz_model_var_index(const viz_model *m, uint32_t name);
/* The straggler factor of worker w from the metadata (> 1 slowed), or 0 when none. */
double viz_model_slow(const viz_model *m, int w);
/* The label of task (job, task)'s shaped link ("20 ms, 1 Mbit/s"; borrowed), or NULL. */
const char *viz_model_link(const viz_model *m, int job, int task);
/* The evaluation in progress at time t (t0 <= t < its t), or NULL. Borrowed. */
const viz_eval *viz_model_eval_at(const viz_model *m, int64_t t);
/* What a run did over [t0, t1) (whole buckets), for compare mode's diff strip: the share of
 * worker time spent waiting (barrier or ssp), whether the workers did anything at all, the
 * gradients dropped and applied, and the mean staleness of the applied ones (-1 none). */
typedef struct viz_diff_stats { double wait, drops, applies, stale; int busy; } viz_diff_stats;
void viz_model_diff_stats(const viz_model *m, int64_t t0, int64_t t1, viz_diff_stats *out);
/* When traffic and applies cover only a sample of the workers, writes the note every panel
 * that counts them carries ("16 sampled of 1,200") into buf and returns 1; else returns 0
 * with buf empty. */
int viz_model_sample_note(const viz_model *m, char *buf, size_t n);

enum { VIZ_SRC_TRACE = 1, VIZ_SRC_MEM, VIZ_SRC_LIVE };
typedef struct viz_lesson viz_lesson;   /* lesson.c */

struct viz_source {
    int kind;
    trace_reader *r;
    evt_sub *sub;
    int sub_closed;
    const evt_strtab *strs;
    evt_record *ev; size_t n, cap;       /* mem / live */
    evt_state *snaps; size_t n_snaps;    /* mem: state after k * VIZ_SNAP events */
    evt_state cur; size_t cur_n;         /* mem: state after cur_n events */
    evt_state out;                       /* trace: last answer */
    int64_t out_t; int out_valid;
    viz_model m;
    viz_lesson *lesson;                  /* the metadata's lesson and the captioner (lesson.c) */
};

/* Calls fn for every event with time in [a, b] (reader order), stopping after max
 * events; returns the number visited. */
typedef void (*viz_scan_fn)(void *ctx, const evt_record *e);
size_t viz_source_scan(viz_source *s, int64_t a, int64_t b, size_t max, viz_scan_fn fn, void *ctx);
/* The run's start on the source's clock: its first CLUSTER_START, else its first event.
 * Compare mode lines two runs up on it (a hub may have started long before the cluster). */
int64_t viz_source_origin(const viz_source *s);

/* ---- per-frame data: what is moving at time t ---------------------------------------- */
typedef struct viz_packet {
    int is_push, dropped, worker, ps, var;   /* var: catalogue index, -1 unknown */
    int64_t t0, t1;                          /* begin, end (estimated for live) */
    int64_t bytes, step;
    uint64_t id;
} viz_packet;

/* A copy between two devices of one task (`downpour local`: a transfer with no peer, from
 * device src to device dst, string ids); var the tensor's name. */
typedef struct viz_copy {
    int is_push;                             /* a gradient on its way to its variable */
    uint32_t src, dst, var;
    int64_t t0, t1, bytes;                   /* t1 <= t: landed a moment ago */
} viz_copy;

typedef struct viz_frame {
    viz_packet *pk; int n_pk, cap_pk;
    viz_copy *cp; int n_cp, cap_cp;          /* device copies in flight or just landed */
    /* compute runs open at t, per device (string ids): op is the begin event's var (the
     * op it starts with), 0 when the trace does not name it */
    uint32_t run_dev[VIZ_MACHINE_DEVICES], run_op[VIZ_MACHINE_DEVICES]; int n_run;
    int64_t *flash;          /* [n_vars]: time of the latest apply in the window, -1 */
    double *progress;        /* [n_workers]: compute progress 0..1, -1 not computing */
    double *staleness;       /* [n_workers]: staleness of its latest gradient, -1 unknown */
} viz_frame;

void viz_frame_build(viz_source *s, const evt_state *st, int64_t t, viz_frame *f);
void viz_frame_release(viz_frame *f);

/* ---- palette (Okabe-Ito phases, Paul Tol muted variables, Tol light devices) --------- */
typedef struct viz_rgb { double r, g, b; } viz_rgb;
viz_rgb viz_phase_color(int phase);
viz_rgb viz_var_color(int var_index);
viz_rgb viz_device_color(int device_index);
viz_rgb viz_act_color(int act);
/* evt_phase_name, and "evaluating" for VIZ_PHASE_EVALUATING. */
const char *viz_phase_name(int phase);
extern const viz_rgb VIZ_BG, VIZ_INK, VIZ_MUTED, VIZ_PANEL, VIZ_LINE, VIZ_ACCENT;

/* ---- drawing helpers (viz/draw_util.c) ------------------------------------------------ */
void viz_set(cairo_t *cr, viz_rgb c);
void viz_seta(cairo_t *cr, viz_rgb c, double a);
/* A traffic band from (x0, y0) (top width wt per side) down to (gx, y1) (bottom width wb):
 * pulls (d = 0) to the left of the axis, pushes (d = 1) to the right. */
void viz_band(cairo_t *cr, double x0, double y0, double gx, double y1, double wt, double wb, int d);
void viz_round_rect(cairo_t *cr, viz_rect r, double radius);
void viz_font(cairo_t *cr, double size, int bold);
/* Text at (x, y) baseline-left; align 0 left, 1 centre, 2 right; returns its width.
 * Text longer than max_w (when > 0) is cut with an ellipsis. */
double viz_text(cairo_t *cr, double x, double y, const char *s, int align, double max_w);
double viz_text_width(cairo_t *cr, const char *s);
/* Test hook: fn(ctx, full, shown, px, cut, box) for every viz_text on cr — the text asked
 * for, the text drawn, its size in device pixels, 1 when it was cut with an ellipsis, and
 * where it lies in device pixels (its width by the font's ascent and descent about the
 * baseline). ctx is borrowed until viz_text_hook_set(cr, NULL, NULL) or the end of cr. */
typedef void (*viz_text_hook)(void *ctx, const char *full, const char *shown, double px, int cut, viz_rect box);
void viz_text_hook_set(cairo_t *cr, viz_text_hook fn, void *ctx);
void viz_fmt_bytes(char *buf, size_t n, double bytes);
/* A count with thousands separators: "1,200". */
void viz_fmt_count(char *buf, size_t n, long long v);
void viz_fmt_time(char *buf, size_t n, int64_t ns);
/* Short task name "/job:ps/task:0". */
void viz_task_name(char *buf, size_t n, int job, int task);
/* "CPU:0" from "/job:worker/replica:0/task:1/device:CPU:0". */
const char *viz_device_short(const char *full);

/* ---- the parts of a frame ----------------------------------------------------------- */
typedef struct viz_ctx {
    cairo_t *cr;
    viz_source *src;
    const viz_view *view;
    const evt_state *st;
    viz_layout lay;
    viz_frame fr;
    int64_t t, t_end;         /* shown time, end of the time axis */
} viz_ctx;

void viz_ctx_begin(viz_ctx *c, cairo_t *cr, viz_source *s, const viz_view *v, int64_t t,
                   int w, int h, int side_panels);
void viz_ctx_end(viz_ctx *c);
void viz_draw_cluster(viz_ctx *c);          /* draw.c */
/* A worker box with several devices draws one compute lane per device (up to this many)
 * across its bottom line: where lane i of n sits in a box whose inner rectangle is inner
 * with line height lh (out: n long). */
#define VIZ_MAX_DEVICE_LANES 8
void viz_device_lanes(viz_rect inner, double lh, double s, int n, viz_rect *out);
/* One machine (lay.machine): the task's box, its devices and the copies between them. */
void viz_draw_machine(viz_ctx *c);          /* machine.c */
void viz_draw_packets(viz_ctx *c);          /* packets.c: transfers in flight, their key */
void viz_draw_ps_cells(viz_ctx *c);         /* pscells.c: compact ps row */
void viz_draw_ps_col_bands(viz_ctx *c);     /* pscells.c: dense traffic per column of cells */
void viz_cluster_hit(const viz_ctx *c, double x, double y, viz_selection *out);
void viz_draw_topbar(viz_ctx *c, viz_rect r, const char *tag);  /* panels.c */
void viz_draw_panels(viz_ctx *c);
void viz_draw_timeline(viz_ctx *c);
void viz_draw_placement(viz_ctx *c);        /* overlay.c */
void viz_draw_help(viz_ctx *c);
/* The inspector card's title and lines for the view's selection (a task or a packet in
 * flight); returns the number of lines, -1 with nothing selected. */
#define VIZ_INSPECT_LINES 10
#define VIZ_INSPECT_WIDTH 160
int viz_inspector_text(viz_ctx *c, char title[VIZ_INSPECT_WIDTH], char lines[VIZ_INSPECT_LINES][VIZ_INSPECT_WIDTH]);
void viz_draw_inspector(viz_ctx *c);
void viz_draw_toast(viz_ctx *c, const char *msg);
/* What worker w is shown doing at the frame's time: its replay phase, or
 * VIZ_PHASE_EVALUATING for the chief while it evaluates. */
int viz_worker_phase(const viz_ctx *c, int w);
/* The label of variable v's version in its ps box: "v12", or for global_step the global
 * step itself ("step 12"), which no apply event counts. */
void viz_var_version_label(const viz_ctx *c, int v, char *buf, size_t n);
/* Compare mode (compare.c): the time of B shown beside A at A's time v->t — the same time
 * since each run's start, or (compare_by_step) when B reached A's global step. */
int64_t viz_compare_time(viz_source *a, viz_source *b, const viz_view *v);
void viz_draw_compare(cairo_t *cr, viz_source *a, const viz_view *v);
/* The diff strip's verdict for one column (compare.c): 0 the runs agree, 1 A has more, 2 B
 * has more, of row 0 waiting, 1 drops, 2 staleness (x is A's, y B's). */
int viz_diff_who(int row, const viz_diff_stats *x, const viz_diff_stats *y);
/* One whole frame of s at time t into (0, 0, w, h) of cr (view.c); tag ("A", "B") leads the
 * title, side_panels 0 leaves the panels out. */
void viz_draw_frame(cairo_t *cr, viz_source *s, const viz_view *v, int64_t t, int w, int h,
                    int side_panels, const char *tag);
/* One line chart of a model's loss into r (shared by panels and compare): the buckets in
 * [from, t] at x = r.x + r.w * (time - from) / span, y from 0 (bottom) to ymax (top). */
void viz_plot_loss(viz_ctx *c, viz_rect r, const viz_model *m, int64_t from, int64_t t,
                   int64_t span, viz_rgb color, int per_worker, double ymax);
double viz_model_loss_max(const viz_model *m);

/* ---- fork from here (fork.c) --------------------------------------------------------- */
#define VIZ_FORK_CHOICES 4
/* A key the chooser offers: set "backup_workers=1" (what the fork changes), label "add a
 * backup worker" (what the card says). */
typedef struct viz_fork_choice { char set[64]; char label[96]; } viz_fork_choice;
/* The choices for s's run, from its metadata (out: VIZ_FORK_CHOICES long): a backup worker
 * more (sync only), the other of sync / async, the last worker slowed 4x, a ps more.
 * Returns their count (2..VIZ_FORK_CHOICES). */
int viz_fork_choices(const viz_source *s, viz_fork_choice *out);
/* The chooser's card and its n rows for layout l. */
void viz_fork_menu_layout(const viz_layout *l, int n, viz_rect *card, viz_rect *rows);
/* The chooser, when view->fork_menu (the highlighted choice + 1). */
void viz_draw_fork_menu(viz_ctx *c);

/* ---- lessons and captions (lesson.c) ------------------------------------------------- */
#define VIZ_LESSON_CHOICES 6
/* Parses the metadata's "lesson" (top level, or under "config") and keeps a copy of the
 * metadata for the captioner; never NULL (no lesson: captions only). Free with
 * viz_lesson_free() (NULL a no-op). */
viz_lesson *viz_lesson_new(const char *metadata_json);
void viz_lesson_free(viz_lesson *l);
int viz_lesson_present(const viz_source *s);
/* Whether v shows the caption bar (captions 1, or 0 with a lesson present). */
int viz_captions_on(const viz_source *s, const viz_view *v);
/* The caption at time t with the global step gstep: the lesson's latest caption with step
 * <= gstep unless the caption engine's at t belongs to a later step; NULL none. Borrowed
 * until the next call on s. */
const char *viz_lesson_caption(viz_source *s, int64_t t, int64_t gstep);
enum { VIZ_STOP_NONE = 0, VIZ_STOP_PAUSE, VIZ_STOP_QUESTION };
typedef struct viz_lesson_stop { int kind, index; int64_t step, t; } viz_lesson_stop;
/* The first lesson pause or question whose step the global step reaches at a time in
 * (a, b] (a question wins a tie); returns 1 with out filled, else 0. */
int viz_lesson_next_stop(viz_source *s, int64_t a, int64_t b, viz_lesson_stop *out);
/* Choices of question q (0-based), 0 when none; *answer (may be NULL) the right one or -1. */
int viz_lesson_choices(const viz_source *s, int q, int *answer);
viz_rect viz_lesson_bar_rect(const viz_layout *l);
/* The question card and its choices' rows (choices: n_choices long) for layout l. */
void viz_lesson_card_layout(const viz_layout *l, int n_choices, viz_rect *card, viz_rect *choices);
/* Caption bar, history, lesson banner and question card, as v asks (view.c calls it). */
void viz_draw_lesson(viz_ctx *c);
/* Whether (x, y) is on the caption bar of the frame for v. */
int viz_lesson_bar_hit(viz_source *s, const viz_view *v, double x, double y);
/* " captions=1 history=0 question=1 revealed=0 bar=x0,y0,x1,y1 answer=1 card=x0,y0,x1,y1
 * choice0=..." into buf, for the window's "saved" line (tests read the rectangles from it:
 * the caption bar's while captions are shown, the card's and choices' while a question is
 * up). */
void viz_lesson_describe(viz_source *s, const viz_view *v, char *buf, size_t n);
/* The timeline's time axis (panels.c): the start-up (from the first event to the first
 * pull or global step, viz_source_story_start) takes a fixed narrow segment at the left
 * of r, labelled, when it would otherwise take more; the rest of the run is linear. x of
 * time t in r, and its inverse (the scrubber: the time at pixel x, clamped to the run). */
double viz_timeline_x(const viz_ctx *c, viz_rect r, int64_t t);
int64_t viz_timeline_time_at(const viz_ctx *c, viz_rect r, double x);
/* The start-up segment of the timeline's lanes for c: 1 and *seg filled when it is
 * compressed, else 0. */
int viz_timeline_story_seg(const viz_ctx *c, viz_rect *seg);

#endif
