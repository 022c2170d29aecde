/* internal.h — what the web module's files share: the server struct, frames (immutable,
 * reference-counted multipart parts), cursors (positions shown) and the calls between
 * the render thread (player.c) and the HTTP side (http.c). Invariants: every field below
 * marked "mu" is read and written under web_server.mu; the viz source is touched only by
 * the render thread; a frame's bytes never change once published. */
#ifndef WEB_INTERNAL_H
#define WEB_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "viz/viz.h"
#include "web/web.h"

#define WEB_BOUNDARY "dpframe"
/* A stream opens with a delimiter and a header block; then each frame is a PNG followed by
 * the next delimiter and header block. A browser shows a part once the header block after
 * it is in (Chrome does), so sending that right behind each PNG makes a frame appear as
 * soon as its bytes arrive; the price is that parts carry no per-frame headers (no
 * Content-Length: a reader splits on the delimiter). */
#define WEB_PART_END "\r\n--" WEB_BOUNDARY "\r\nContent-Type: image/png\r\n\r\n"
#define WEB_STREAM_START (WEB_PART_END + 2)
#define WEB_MAX_OPS 8            /* control requests queued per cursor */
#define WEB_MAX_ANSWERS 4096     /* answers kept per question; more are refused (503) */
#define WEB_ID_MAX 47            /* a page's id: 1..47 of [A-Za-z0-9_.-] */
#define WEB_ANSWER_LOG_NS 1000000000ull   /* at most one answers line a second on stderr */

/* Everything that changes a frame's pixels: equal keys draw equal frames. */
typedef struct web_key {
    int64_t t;
    int paused, live, behind_live;
    double speed;
} web_key;

/* One drawn frame as a multipart part (the PNG, then WEB_PART_END).
 * refs (mu): cursors and streams holding it; freed by web_frame_unref at 0. */
typedef struct web_frame {
    int refs;
    web_key key;
    unsigned char *part;         /* the PNG, then WEB_PART_END */
    size_t part_len, png_len;
    char *caption;               /* the caption bar's text at key.t (viz_caption_text), or NULL */
    int64_t gstep;               /* the global step at key.t */
    int question;                /* the lesson question current at gstep (index), or -1 */
} web_frame;

/* A lesson question, copied from the source at start so that HTTP threads never touch the
 * source, with the answers given to it. Text fields are immutable after start. */
typedef struct web_answer { char id[WEB_ID_MAX + 1]; int choice; } web_answer;
typedef struct web_question {
    int64_t step;
    char *text, *explain;        /* explain may be NULL */
    char *choices[VIZ_QUESTION_CHOICES];
    int n_choices, answer;       /* answer: the right choice, -1 none */
    uint64_t counts[VIZ_QUESTION_CHOICES];   /* mu */
    web_answer *answers;         /* mu: who answered what, n_answers of them */
    int n_answers;
    uint64_t changes, logged;    /* mu: answers taken / when the stderr line was printed */
} web_question;

enum web_op { WEB_OP_PLAY = 1, WEB_OP_PAUSE, WEB_OP_STEP, WEB_OP_BACK, WEB_OP_NEXT_EVENT,
              WEB_OP_PREV_EVENT, WEB_OP_SEEK, WEB_OP_SPEED, WEB_OP_LIVE };

/* A position being shown: a page's own, or the server's (id 0). All fields mu. */
typedef struct web_cursor {
    uint64_t id;
    char name[48];               /* the page's id ("" for the server's) */
    int refs;                    /* streams attached (the server's cursor is never freed) */
    int64_t t;
    int playing, at_live;
    double speed;
    web_frame *frame;            /* newest frame for this cursor, or NULL (a ref) */
    uint64_t seq;                /* bumped each time frame changes */
    int ops[WEB_MAX_OPS];        /* queued controls, applied by the render thread */
    double op_args[WEB_MAX_OPS];
    int n_ops;
    uint64_t ops_queued, ops_taken, ops_done;   /* tickets: queued, applied, shown */
    struct web_cursor *next;
} web_cursor;

struct web_server {
    web_options opt;             /* strings point into the copies below */
    char *trace, *connect, *title;
    char url[192], share[192];
    char token[40];      /* the page's access token ("": none, no secret configured) */
    int loopback;
    struct MHD_Daemon *mhd;
    viz_source *src;             /* render thread only after start */
    pthread_t thread;
    int has_thread;

    pthread_mutex_t mu;
    pthread_cond_t tick_cv;      /* wakes the render thread early (controls, new pages) */
    pthread_cond_t frame_cv;     /* a frame was published, or the server stops */
    int stopping;                /* mu */
    web_cursor *cursors;         /* mu; the server's own (id 0, follow only) is never freed */
    uint64_t next_cursor_id;     /* mu */
    int64_t t0, t1;              /* mu: the source's range, refreshed each tick */
    int live, hub_closed;        /* mu */
    web_stats st;                /* mu */
    web_question *qs;            /* the lesson's questions (answers: mu) */
    int n_qs;
    uint64_t answers_logged_ns;  /* render thread: when the last answers line was printed */
    char note[256];              /* mu: the answers line the window shows (view --serve) */
};

/* ---- player.c: the render thread and positions ---------------------------------------- */
/* Starts / stops the render thread (after the source is open). */
int web_player_start(web_server *w, char *err);
void web_player_stop(web_server *w);

/* The cursor a stream of page `name` shows, created at (at_s, paused, speed) when new
 * (at_s < 0: where the server's position is; paused < 0: as the server's starts, --paused;
 * speed <= 0: the server's speed). In follow
 * mode, always the server's. Takes a stream reference (release with web_cursor_release).
 * NULL when the cap on cursors is reached. Call with mu held. */
web_cursor *web_cursor_attach(web_server *w, const char *name, double at_s, int paused,
                              double speed);
void web_cursor_release(web_server *w, web_cursor *c);
/* The cursor page `name` controls (the server's in follow mode), or NULL. mu held. */
web_cursor *web_cursor_find(web_server *w, const char *name);

/* Queues op on the cursor of page `name` and waits (at most ~2 s) for the render thread
 * to apply it. Returns 0, DP_ENOTFOUND (no such page), DP_ERR (queue full) or
 * DP_ETIMEDOUT. Call without mu. */
int web_control(web_server *w, const char *name, int op, double arg);

/* Writes the JSON state of page `name`'s cursor into buf (n bytes). mu not held. */
void web_state_json(web_server *w, const char *name, char *buf, size_t n);

void web_frame_ref(web_frame *f);            /* mu held */
void web_frame_unref(web_frame *f);          /* mu held */

/* The question current at global step gstep: the last one asked at or before it, or -1. */
int web_question_at(const web_server *w, int64_t gstep);

/* ---- answers.c: the lesson's questions and the students' answers ------------------------ */
/* Copies the source's questions (before the threads start). */
void web_answers_load(web_server *w);
void web_answers_free(web_server *w);
/* Takes page id's answer `choice` to question q. Returns 200 with the question's counts
 * and its right answer as JSON in buf, or 400 / 409 / 503 with a one-line error in buf
 * (`{"error": ...}`). mu not held. */
unsigned web_answer_submit(web_server *w, const char *id, const char *q, const char *choice,
                           char *buf, size_t n);
/* The counts of every question as JSON into buf (n bytes). mu not held. */
void web_answers_json(web_server *w, char *buf, size_t n);
/* The lesson's questions without their answers, as JSON into buf. Needs no lock. */
void web_lesson_json(const web_server *w, char *buf, size_t n);
/* Render thread: prints one line on stderr per question whose counts changed, at most
 * once per WEB_ANSWER_LOG_NS (force: now, whatever is pending), and refreshes w->note. */
void web_answers_log(web_server *w, uint64_t now, int force);
/* Whether s is a valid page id. */
int web_id_ok(const char *s);

/* ---- http.c ------------------------------------------------------------------------- */
int web_http_start(web_server *w, const char *listen, char *err);
void web_http_stop(web_server *w);

/* ---- serve.c ------------------------------------------------------------------------ */
/* The host name to give students for a wildcard bind: this machine's first non-loopback
 * IPv4 address, else its host name. */
void web_share_host(char *buf, size_t n);

/* ---- page.c ------------------------------------------------------------------------- */
extern const char web_page_html[];

/* Lowers the calling thread's CPU priority (nice WEB_NICE, Linux: per thread): the page's
 * drawing and sending take only what training, the hub and the projector leave. Called
 * once by the player thread and by each connection's thread. */
#define WEB_NICE 10
void web_yield_cpu(void);

#endif
