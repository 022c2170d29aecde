/* player.c — the web server's render thread and its positions (cursors). Laid out like the
 * viewer's main loop: each tick, input (read the live stream), update (apply queued
 * controls, advance the clocks, decide which frames are wanted), draw (each distinct
 * frame once, outside the lock), publish (hand frames to cursors, wake the streams).
 * The viz source is used by this thread only; HTTP threads reach it through cursors and
 * queued controls under web_server.mu. Nothing here ever waits on a page. */
#include <cairo.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/dp.h"
#include "web/internal.h"
#include "viz/png.h"

#define WEB_LIVE_LAG_NS 60000000 /* a followed live run is drawn this far behind its newest
                                  * event, extrapolated at most 0.5 s (as the window does) */

/* Render-thread state that no other thread reads. */
typedef struct player {
    web_server *w;
    uint64_t last_ns;
    int64_t live_anchor_t;
    uint64_t live_anchor_ns;
    int64_t live_t;
} player;

void web_frame_ref(web_frame *f)
{
    if (f) f->refs++;
}

void web_frame_unref(web_frame *f)
{
    if (!f || --f->refs > 0) return;
    free(f->part);
    free(f->caption);
    free(f);
}

static int key_eq(const web_key *a, const web_key *b)
{
    return a->t == b->t && a->paused == b->paused && a->live == b->live &&
           a->behind_live == b->behind_live && a->speed == b->speed;
}

static web_key key_of(const web_server *w, const web_cursor *c)
{
    web_key k = {c->t, !c->playing, w->live, w->live && !c->at_live, c->speed};
    return k;
}

static int64_t clamp_t(const web_server *w, int64_t t)
{
    return t < 0 ? 0 : t > w->t1 ? w->t1 : t;
}

/* ---- cursors (called by HTTP threads, mu held) ---------------------------------------- */
static web_cursor *cursor_new(web_server *w, const char *name, double at_s, int paused,
                              double speed)
{
    web_cursor *c = xcalloc(1, sizeof *c);
    c->id = w->next_cursor_id++;
    snprintf(c->name, sizeof c->name, "%s", name);
    c->speed = speed > 0 ? speed : w->opt.speed;
    c->playing = !paused;
    if (w->live) {
        c->at_live = !paused;
        c->t = w->t1;
    } else {
        c->t = at_s >= 0 ? clamp_t(w, (int64_t)(at_s * 1e9)) : 0;
    }
    c->next = w->cursors;
    w->cursors = c;
    w->st.cursors_now++;
    return c;
}

web_cursor *web_cursor_find(web_server *w, const char *name)
{
    if (w->opt.follow) return w->cursors && w->cursors->id == 0 ? w->cursors : NULL;
    for (web_cursor *c = w->cursors; c; c = c->next)
        if (c->id && !strcmp(c->name, name)) return c;
    return NULL;
}

web_cursor *web_cursor_attach(web_server *w, const char *name, double at_s, int paused,
                              double speed)
{
    web_cursor *c = web_cursor_find(w, name);
    if (!c) {
        if (w->st.cursors_now >= (uint64_t)w->opt.max_conns) return NULL;
        if (at_s < 0) at_s = w->opt.at_s;
        if (paused < 0) paused = w->opt.start_paused;
        c = cursor_new(w, name, at_s, paused, speed);
    }
    c->refs++;
    pthread_cond_signal(&w->tick_cv);   /* draw its first frame now, not at the next tick */
    return c;
}

void web_cursor_release(web_server *w, web_cursor *c)
{
    if (--c->refs > 0 || c->id == 0) return;
    for (web_cursor **p = &w->cursors; *p; p = &(*p)->next) {
        if (*p == c) {
            *p = c->next;
            break;
        }
    }
    web_frame_unref(c->frame);
    w->st.cursors_now--;
    pthread_cond_broadcast(&w->frame_cv);   /* a control waiting on it gives up */
    free(c);
}

int web_control(web_server *w, const char *name, int op, double arg)
{
    int rc = 0;
    pthread_mutex_lock(&w->mu);
    web_cursor *c = web_cursor_find(w, name);
    if (!c) {
        rc = DP_ENOTFOUND;
        goto done;
    }
    if (c->n_ops >= WEB_MAX_OPS) {
        rc = DP_ERR;
        goto done;
    }
    uint64_t id = c->id, ticket = ++c->ops_queued;
    c->ops[c->n_ops] = op;
    c->op_args[c->n_ops++] = arg;
    pthread_cond_signal(&w->tick_cv);
    struct timespec dl;
    clock_gettime(CLOCK_MONOTONIC, &dl);
    dl.tv_sec += 2;
    for (;;) {
        if (w->stopping) break;
        web_cursor *d = web_cursor_find(w, name);
        if (!d || d->id != id || d->ops_done >= ticket) break;   /* applied, or page gone */
        if (pthread_cond_timedwait(&w->frame_cv, &w->mu, &dl)) {
            rc = DP_ETIMEDOUT;
            break;
        }
    }
done:
    pthread_mutex_unlock(&w->mu);
    return rc;
}

void web_state_json(web_server *w, const char *name, char *buf, size_t n)
{
    pthread_mutex_lock(&w->mu);
    web_cursor *c = web_cursor_find(w, name);
    json_t *j;
    if (!c) {
        j = json_pack("{s:s}", "error", "no such page (its stream is not open)");
    } else {
        j = json_pack("{s:I, s:f, s:f, s:f, s:b, s:f, s:b, s:b, s:b, s:b, s:I, s:s, s:s, s:b}",
                      "t_ns", (json_int_t)c->t, "t", (double)c->t / 1e9,
                      "t0", (double)w->t0 / 1e9, "t1", (double)w->t1 / 1e9,
                      "playing", c->playing, "speed", c->speed, "live", w->live,
                      "at_live", c->at_live, "follow", w->opt.follow,
                      "hub_closed", w->hub_closed, "seq", (json_int_t)c->seq,
                      "share", w->share, "title", w->title, "loopback", w->loopback);
        /* What the frame being shown says: its caption, global step and question (the
         * frame's moment, which trails c->t by at most a tick). */
        const web_frame *f = c->frame;
        json_object_set_new(j, "driven", json_boolean(w->opt.driven));
        json_object_set_new(j, "questions", json_integer(w->n_qs));
        json_object_set_new(j, "frame_t_ns", f ? json_integer((json_int_t)f->key.t) : json_null());
        json_object_set_new(j, "caption", f && f->caption ? json_string(f->caption) : json_null());
        json_object_set_new(j, "gstep", json_integer(f ? (json_int_t)f->gstep : 0));
        json_object_set_new(j, "question", json_integer(f ? f->question : -1));
    }
    pthread_mutex_unlock(&w->mu);
    char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
    snprintf(buf, n, "%s", s ? s : "{}");
    free(s);
    json_decref(j);
}

/* ---- update (render thread, mu held) --------------------------------------------------- */
static void apply_op(player *p, web_cursor *c, int op, double arg)
{
    web_server *w = p->w;
    switch (op) {
    case WEB_OP_PLAY:
        if (!w->live && c->t >= w->t1) c->t = 0;   /* play at the end starts over */
        c->playing = 1;
        break;
    case WEB_OP_PAUSE:
        c->playing = 0;
        c->at_live = 0;
        break;
    case WEB_OP_STEP: case WEB_OP_BACK: case WEB_OP_NEXT_EVENT: case WEB_OP_PREV_EVENT: {
        int dir = op == WEB_OP_STEP || op == WEB_OP_NEXT_EVENT ? 1 : -1;
        int by_step = op == WEB_OP_STEP || op == WEB_OP_BACK;
        c->playing = 0;
        c->at_live = 0;
        c->t = clamp_t(w, viz_source_seek_event(w->src, c->t, dir, by_step));
        break;
    }
    case WEB_OP_SEEK:
        c->at_live = 0;
        c->t = clamp_t(w, (int64_t)(arg * 1e9));
        break;
    case WEB_OP_SPEED:
        c->speed = fmin(100, fmax(0.01, arg));
        break;
    case WEB_OP_LIVE:
        if (w->live) c->at_live = c->playing = 1, c->t = p->live_t;
        else c->t = w->t1;
        break;
    default:
        break;
    }
}

/* The followed live time: the newest event, extrapolated between arrivals. */
static void update_live(player *p, uint64_t now)
{
    web_server *w = p->w;
    if (w->t1 != p->live_anchor_t) {
        p->live_anchor_t = w->t1;
        p->live_anchor_ns = now;
    }
    int64_t ext = (int64_t)(now - p->live_anchor_ns);
    if (ext > 500000000) ext = 500000000;
    int64_t t = p->live_anchor_t + ext - WEB_LIVE_LAG_NS;
    p->live_t = t > 0 ? t : 0;
}

static void advance(player *p, web_cursor *c, uint64_t dt)
{
    web_server *w = p->w;
    if (w->live) {
        if (c->at_live) {
            c->t = p->live_t;
        } else if (c->playing) {
            c->t += (int64_t)((double)dt * c->speed);
            if (c->t >= p->live_t) c->t = p->live_t, c->at_live = 1;
        }
    } else if (c->playing && !(w->opt.driven && c->id == 0)) {
        int64_t from = c->t, stop_t;
        int q;
        c->t += (int64_t)((double)dt * c->speed);
        if (c->t >= w->t1) c->t = w->t1, c->playing = 0;   /* stops at the end */
        /* As the window does: a replay stops at the lesson's pauses and questions (play
         * goes on); a live run never waits for a page. */
        if (viz_lesson_stop_between(w->src, from, c->t, &stop_t, &q)) c->t = stop_t, c->playing = 0;
    }
}

/* A frame some cursor already shows for key k (so that it is not drawn twice). */
static web_frame *shown_frame(web_server *w, const web_key *k)
{
    for (web_cursor *c = w->cursors; c; c = c->next)
        if (c->frame && key_eq(&c->frame->key, k)) return c->frame;
    return NULL;
}

static void set_frame(web_cursor *c, web_frame *f)
{
    web_frame_ref(f);
    web_frame_unref(c->frame);
    c->frame = f;
    c->seq++;
}

/* Applies controls, moves the clocks and fills keys[] with the distinct frames wanted
 * (at most cap); returns how many. */
static int update(player *p, web_key *keys, int cap)
{
    web_server *w = p->w;
    uint64_t now = dp_now_ns(), dt = now - p->last_ns;
    p->last_ns = now;
    w->t0 = viz_source_t0(w->src);
    w->t1 = viz_source_t1(w->src);
    if (w->live) update_live(p, now);
    int n = 0;
    for (web_cursor *c = w->cursors; c; c = c->next) {
        advance(p, c, dt);
        for (int k = 0; k < c->n_ops; k++) apply_op(p, c, c->ops[k], c->op_args[k]);
        c->n_ops = 0;
        c->ops_taken = c->ops_queued;
        if (c->refs == 0) continue;       /* nobody watches: move, but draw nothing */
        web_key k = key_of(w, c);
        if (c->frame && key_eq(&c->frame->key, &k)) continue;
        web_frame *f = shown_frame(w, &k);
        if (f) {
            set_frame(c, f);
            continue;
        }
        int dup = 0;
        for (int j = 0; j < n && !dup; j++) dup = key_eq(&keys[j], &k);
        if (!dup && n < cap) keys[n++] = k;
    }
    return n;
}

/* ---- draw (render thread, no lock) ------------------------------------------------------ */
typedef struct png_buf {
    unsigned char *p;
    size_t len, cap;
} png_buf;

static int png_write(void *closure, const unsigned char *data, size_t length)
{
    png_buf *b = closure;
    size_t need = b->len + length + sizeof WEB_PART_END;
    if (need > b->cap) {
        while (need > b->cap) b->cap *= 2;
        b->p = xrealloc(b->p, b->cap);
    }
    memcpy(b->p + b->len, data, length);
    b->len += length;
    return 0;
}

/* Draws key k as a PNG followed by the stream's next delimiter; NULL (logged) on failure. */
static web_frame *draw_frame(web_server *w, const web_key *k)
{
    viz_view v;
    viz_view_init(&v);
    v.width = w->opt.width;
    v.height = w->opt.height;
    v.t = k->t;
    v.paused = k->paused;
    v.speed = k->speed;
    v.live = k->live;
    v.behind_live = k->behind_live;
    cairo_surface_t *img = viz_render_image(w->src, &v);
    png_buf b = {xmalloc(1 << 18), 0, 1 << 18};
    char err[DP_ERRLEN];
    int rc = viz_png_write(img, png_write, &b, err);
    cairo_surface_destroy(img);
    if (rc) {
        dp_log(DP_LOG_WARN, "web", "encoding a frame: %s", err);
        free(b.p);
        return NULL;
    }
    memcpy(b.p + b.len, WEB_PART_END, sizeof WEB_PART_END - 1);   /* png_write keeps room */
    web_frame *f = xcalloc(1, sizeof *f);
    f->refs = 1;   /* the draw's own, dropped by publish() */
    f->key = *k;
    const char *cap = viz_caption_text(w->src, k->t);
    f->caption = cap && *cap ? xstrdup(cap) : NULL;
    f->gstep = viz_source_state_at(w->src, k->t)->global_step;
    f->question = web_question_at(w, f->gstep);
    f->part = b.p;
    f->png_len = b.len;
    f->part_len = b.len + sizeof WEB_PART_END - 1;
    return f;
}

/* ---- publish (render thread, mu held) ---------------------------------------------------- */
static void publish(player *p, web_frame **frames, const web_key *keys, int n)
{
    web_server *w = p->w;
    for (web_cursor *c = w->cursors; c; c = c->next) {
        if (c->refs > 0) {
            web_key k = key_of(w, c);
            for (int j = 0; j < n; j++) {
                if (frames[j] && key_eq(&keys[j], &k) && c->frame != frames[j]) {
                    set_frame(c, frames[j]);
                    break;
                }
            }
        }
        c->ops_done = c->ops_taken;   /* controls applied in update() are now visible */
    }
    for (int j = 0; j < n; j++) web_frame_unref(frames[j]);   /* the draw's own reference */
    pthread_cond_broadcast(&w->frame_cv);
}

/* ---- the loop ----------------------------------------------------------------------------- */
static void pump_live(player *p)
{
    web_server *w = p->w;
    char err[DP_ERRLEN];
    if (!w->live || w->hub_closed) return;
    int rc = viz_source_pump(w->src, err);
    if (rc == DP_ECLOSED) {
        pthread_mutex_lock(&w->mu);
        w->hub_closed = 1;
        pthread_mutex_unlock(&w->mu);
        dp_log(DP_LOG_INFO, "web", "the hub closed the stream: showing what was received");
    } else if (rc < 0) {
        dp_log(DP_LOG_WARN, "web", "live stream: %s", err);
    }
}

void web_server_drive(web_server *w, int64_t t, int playing, double speed)
{
    pthread_mutex_lock(&w->mu);
    web_cursor *c = w->opt.driven && w->cursors && w->cursors->id == 0 ? w->cursors : NULL;
    if (c && (c->t != t || c->playing != playing || c->speed != speed)) {
        c->t = clamp_t(w, t);
        c->playing = playing;
        c->speed = speed;
        pthread_cond_signal(&w->tick_cv);
    }
    pthread_mutex_unlock(&w->mu);
}

void web_server_note(web_server *w, char *buf, size_t n)
{
    pthread_mutex_lock(&w->mu);
    snprintf(buf, n, "%s", w->note[0] ? w->note : "");
    pthread_mutex_unlock(&w->mu);
}

void web_yield_cpu(void)
{
    /* PRIO_PROCESS with a thread id sets that thread's nice value alone (Linux). */
    if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), WEB_NICE) != 0)
        dp_log(DP_LOG_DEBUG, "web", "cannot lower a thread's priority: %s", strerror(errno));
}

static void *player_main(void *arg)
{
    prctl(PR_SET_NAME, "web-player");   /* as top -H and /proc name it */
    web_yield_cpu();
    player p = {arg, dp_now_ns(), -1, 0, 0};
    web_server *w = p.w;
    uint64_t period = (uint64_t)(1e9 / w->opt.fps), next = dp_now_ns();
    int cap = w->opt.max_conns + 1;
    web_key *keys = xcalloc((size_t)cap, sizeof *keys);
    web_frame **frames = xcalloc((size_t)cap, sizeof *frames);
    for (;;) {
        pump_live(&p);                                        /* input */
        pthread_mutex_lock(&w->mu);
        if (w->stopping) {
            pthread_mutex_unlock(&w->mu);
            break;
        }
        int n = update(&p, keys, cap);             /* update */
        pthread_mutex_unlock(&w->mu);

        uint64_t t_draw = dp_now_ns();                        /* draw */
        for (int j = 0; j < n; j++) frames[j] = draw_frame(w, &keys[j]);
        t_draw = dp_now_ns() - t_draw;

        pthread_mutex_lock(&w->mu);                           /* publish */
        for (int j = 0; j < n; j++) w->st.frames_rendered += frames[j] != NULL;
        w->st.render_ns += t_draw;
        publish(&p, frames, keys, n);
        pthread_mutex_unlock(&w->mu);
        web_answers_log(w, dp_now_ns(), 0);                  /* the teacher's terminal */
        pthread_mutex_lock(&w->mu);
        /* Wait for the next tick; a control or a new page wakes us early. A late tick
         * does not make up for lost time: the clocks advance by wall time instead. */
        next += period;
        uint64_t now = dp_now_ns();
        if (next < now) next = now;
        struct timespec dl = {(time_t)(next / 1000000000u), (long)(next % 1000000000u)};
        int woken = 0;
        while (!w->stopping && !woken && dp_now_ns() < next) {
            int any_ops = 0;
            for (web_cursor *c = w->cursors; c; c = c->next) any_ops |= c->n_ops > 0;
            if (any_ops) break;
            woken = pthread_cond_timedwait(&w->tick_cv, &w->mu, &dl) == 0;
        }
        pthread_mutex_unlock(&w->mu);
    }
    web_answers_log(w, dp_now_ns(), 1);   /* what is still pending */
    free(keys);
    free(frames);
    return NULL;
}

int web_player_start(web_server *w, char *err)
{
    if (w->opt.follow) {   /* the server's own position: id 0, never freed */
        w->next_cursor_id = 0;
        cursor_new(w, "", w->opt.at_s, w->opt.start_paused, w->opt.speed);
    }
    w->next_cursor_id = 1;
    int rc = pthread_create(&w->thread, NULL, player_main, w);
    if (rc) return dp_fail(err, DP_EIO, "web: pthread_create: %s", strerror(rc));
    w->has_thread = 1;
    return 0;
}

void web_player_stop(web_server *w)
{
    if (!w->has_thread) return;
    pthread_mutex_lock(&w->mu);
    w->stopping = 1;
    pthread_cond_broadcast(&w->tick_cv);
    pthread_cond_broadcast(&w->frame_cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    w->has_thread = 0;
}
