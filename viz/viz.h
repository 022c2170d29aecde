/* viz.h — Downpour's viewer: turns a run's events (a recorded trace, or a live stream
 * from the hub) into pictures. The picture at one instant is a pure function of
 * (source, view): the same trace, time and size give the same pixels, which is what
 * `downpour render` writes and what the SDL window shows. Depends only on events/ and
 * common/; the viewer cannot tell real runs from simulated ones except by metadata.
 * Threading: a source and its frames belong to one thread. */
#ifndef VIZ_VIZ_H
#define VIZ_VIZ_H

#include <stddef.h>
#include <stdint.h>

#include <cairo.h>

#include "events/event.h"
#include "events/state.h"

/* ---- sources: where the events come from ------------------------------------------ */
typedef struct viz_source viz_source;

/* Opens a recorded trace and indexes it once (time series for the panels and the
 * timeline: one pass over the events). Returns NULL with err filled when the file is
 * not a readable trace; damage is reported by viz_source_damage(). Free with
 * viz_source_free(). */
viz_source *viz_source_open(const char *path, char *err);

/* An in-memory source fed with viz_source_append() (tests, live view). strings is
 * borrowed until viz_source_free() and resolves the records' string ids. */
viz_source *viz_source_new_mem(const evt_strtab *strings, const char *metadata_json);

/* A live source: connects to the hub at addr ("host:port") within timeout_ms and
 * subscribes. Returns NULL with err filled on failure. Call viz_source_pump() often. */
viz_source *viz_source_connect(const char *addr, int timeout_ms, char *err);

void viz_source_free(viz_source *s);

/* Appends one event (copied) to an in-memory source. Events should come in time order
 * (a slightly earlier one is tolerated). */
void viz_source_append(viz_source *s, const evt_record *e);

/* Live sources: reads whatever the hub has sent, without waiting. Returns the number
 * of new events, 0, or DP_ECLOSED once the hub has gone (the events stay viewable), or
 * another dp_err with err filled. A no-op returning 0 for other sources. */
int viz_source_pump(viz_source *s, char *err);

int viz_source_is_live(const viz_source *s);
/* Time range of the events, ns since trace start. */
int64_t viz_source_t0(const viz_source *s);
int64_t viz_source_t1(const viz_source *s);
uint64_t viz_source_events(const viz_source *s);
/* One-line damage description, or NULL. Borrowed. */
const char *viz_source_damage(const viz_source *s);
/* String for an id of this source ("" unknown). Borrowed until the source is freed. */
const char *viz_source_string(const viz_source *s, uint32_t id);

/* The replay state at time t (every event with time <= t). Borrowed until the next
 * call on this source. Never NULL. */
const evt_state *viz_source_state_at(viz_source *s, int64_t t);

/* Navigation for the arrow and ,/. keys: the time of the next (dir > 0) or previous
 * (dir < 0) event strictly after/before t; with by_step, of the next/previous change of
 * the global step. Returns t itself when there is none. */
int64_t viz_source_seek_event(viz_source *s, int64_t t, int dir, int by_step);

/* Where the story starts: the end of task start-up and data loading, i.e. the first pull
 * (or push) of any worker, or the first global step, whichever comes first; the source's
 * first event when there is neither. A replay starts here unless told otherwise. */
int64_t viz_source_story_start(const viz_source *s);

/* Time at which the global step first reached step (for compare-by-step), or the end. */
int64_t viz_source_time_of_step(viz_source *s, int64_t step);

/* ---- views: what to draw -------------------------------------------------------------- */
enum viz_sel_kind { VIZ_SEL_NONE = 0, VIZ_SEL_TASK, VIZ_SEL_PACKET };

typedef struct viz_selection {
    int kind;            /* viz_sel_kind */
    int job, task;       /* task (or the packet's worker) */
    uint64_t id;         /* packet: message id (per worker) */
    int packet_kind;     /* packet: EVT_PULL_BEGIN or EVT_PUSH_BEGIN */
} viz_selection;

typedef struct viz_view {
    int64_t t;           /* trace time shown, ns */
    int width, height;   /* pixels */
    double dpr;          /* device pixels per logical pixel (HiDPI), >= 1 */
    int placement;       /* show the placement table instead of the cluster */
    int help;            /* help overlay */
    int paused;
    double speed;        /* playback speed shown in the top bar */
    int live;            /* source is live: LIVE badge; behind_live: paused or scrubbed */
    int behind_live;
    int compare_by_step; /* compare: B follows A's global step rather than its time */
    viz_selection sel;   /* inspector card */
    const char *toast;   /* short message in the corner ("saved frame-0001.png"), or NULL */
    viz_source *compare; /* second trace drawn beside the first, or NULL (borrowed) */
    /* Lessons and captions (viz/lesson.c; docs/viewer.md "A viewer that explains"). */
    int captions;        /* caption bar: 0 auto (on when the metadata has a "lesson"), 1 on, -1 off */
    int history;         /* the caption history over the cluster */
    int history_scroll;  /* its lines scrolled back from the newest */
    int lesson_pause;    /* stopped at a lesson pause: "paused for the lesson: space to go on" */
    int question;        /* the lesson question shown: its index + 1, 0 none */
    int revealed;        /* its answer is shown (the right choice highlighted) */
    int picked;          /* the choice picked + 1 (0: none, space revealed it) */
    int projector;       /* projector mode: no text below 18 px, fewer and larger panels */
    int fork_menu;       /* the fork chooser (key f): its highlighted choice + 1, 0 hidden */
} viz_view;

/* A default view: t = start, 1280x720, dpr 1, speed 1, nothing toggled. */
void viz_view_init(viz_view *v);

/* Draws the frame for view onto cr, filling (0, 0, width, height). Deterministic. */
void viz_draw(cairo_t *cr, viz_source *s, const viz_view *view);

/* What is under pixel (x, y) in the frame for view: a task box, a packet in flight,
 * or nothing (out->kind = VIZ_SEL_NONE). */
void viz_hit(viz_source *s, const viz_view *view, double x, double y, viz_selection *out);

/* Scrubber: the trace time for pixel x on the timeline, or -1 when (x, y) is not on
 * the timeline. */
int64_t viz_scrub_time(viz_source *s, const viz_view *view, double x, double y);

/* ---- headless output ------------------------------------------------------------------ */
/* Writes the frame for view to path; the format follows the extension (.png, .pdf,
 * .svg). Same source, view and path extension give the same bytes. Returns 0 or a
 * dp_err with err filled. */
int viz_render_file(viz_source *s, const viz_view *view, const char *path, char *err);

/* Writes a one-page PNG summary sheet to path: a header (title, cluster, duration,
 * global step, events, last evaluation) above four frames — the run at 10%, 50% and
 * 100% of its training time (from global step 1) and the placement view. title may be NULL. Returns 0 or a dp_err. */
int viz_render_sheet(viz_source *s, const char *path, const char *title, char *err);

/* Draws into a new ARGB32 image surface (caller destroys it). */
cairo_surface_t *viz_render_image(viz_source *s, const viz_view *view);
/* One machine (`downpour local`): where the frame for view puts each device's box, one
 * line per device into buf ("device CPU:1 X,Y,W,H #RRGGBB": its rectangle in pixels and
 * its colour, that of the box's header), for tests that read the pixels. Returns the
 * number of devices drawn (0 when the frame is not one machine's). */
int viz_machine_describe(viz_source *s, const viz_view *view, char *buf, size_t n);

/* ---- the window (viz/app.c) ------------------------------------------------------------ */
typedef struct viz_app_options {
    const char *trace;         /* replay this trace, or */
    const char *connect;       /* watch the hub at this address */
    const char *compare;       /* second trace, side by side (beside a replay or a live run) */
    int width, height;         /* initial window size (default 1280x720) */
    const char *script;        /* test hook: "space,wait:300,right,p,s,q" */
    const char *screenshot_dir;/* where `s` saves PNGs (default ".") */
    double speed;              /* initial speed (default 1) */
    int start_paused;
    double at_s;               /* initial time, seconds (replay); < 0: where the story starts */
    int projector;             /* projector mode (1920x1080 unless --size; see viz_view) */
    /* "Fork from here" (key f in a replay, then a choice and Enter): continues the replayed
     * trace from global step `step` with one key changed (set: "KEY=VALUE") and writes the
     * continuation as a trace file whose path it puts in out (n bytes); the window opens it
     * and shows it beside the replay (compare mode, labelled simulated), from the same
     * instant. Returns 0, or a dp_err with err filled (shown as a toast). Called on the
     * window's thread, which waits for it. The file is the callback's: the window only reads
     * it, until viz_app_run returns. NULL: `f` says forks are not available. */
    int (*fork)(void *ctx, const char *trace, int64_t step, const char *set, char *out, size_t n,
                char *err);
    void *fork_ctx;            /* borrowed: passed to fork */
    /* A front end sharing the window's process (`view --serve`, web/): called once per
     * loop turn with the window's view; it may write a line into note (n bytes; "" for
     * none) that the window shows in its corner. NULL: none. */
    void (*tick)(void *ctx, const viz_view *view, char *note, size_t n);
    void *tick_ctx;            /* borrowed: passed to tick */
} viz_app_options;

void viz_app_options_init(viz_app_options *o);
/* Opens the window and runs until `q`/close. Returns the exit status (0 ok, 1 failure
 * with a message on stderr). */
int viz_app_run(const viz_app_options *o);

/* ---- lessons for other front ends (the browser page, web/) ----------------------------
 * Read-only views of what viz/lesson.c keeps, so that a page shows the captions and the
 * questions the window shows without a second reading of the lesson. Same thread rules
 * as the source. */
#define VIZ_QUESTION_CHOICES 6
typedef struct viz_question {
    int64_t step;                                /* ask_at_step */
    const char *text;                            /* the question */
    const char *choices[VIZ_QUESTION_CHOICES];
    int n_choices;
    int answer;                                  /* the right choice, -1 none */
    const char *explain;                         /* the lesson's caption of that step, or NULL */
} viz_question;

/* Number of questions in the source's lesson (0 without one). */
int viz_lesson_question_count(const viz_source *s);
/* Question q (0-based) into out; strings borrowed until viz_source_free(). Returns 0, or
 * -1 (out zeroed) when q is out of range. */
int viz_lesson_question(const viz_source *s, int q, viz_question *out);
/* The caption the window's caption bar shows at time t (the lesson's caption of the
 * global step, or the caption rules' line), or NULL. Borrowed until the next call on s. */
const char *viz_caption_text(viz_source *s, int64_t t);
/* The first lesson stop (a pause or, winning a tie, a question) that playback from a to b
 * crosses, t in (a, b]: returns 1 with *t_out its time and *question its index or -1 for
 * a pause; 0 when there is none. */
int viz_lesson_stop_between(viz_source *s, int64_t a, int64_t b, int64_t *t_out, int *question);

#endif
