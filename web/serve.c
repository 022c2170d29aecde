/* serve.c — the web server's life cycle (options, new, free, stats) and the two commands
 * built on it: `downpour serve TRACE` (web_serve: wait for a signal) and `downpour hub
 * --http ADDR` (web_serve_hub: the hub, and once it is bound a web server subscribed to
 * it, as a viewer would be). Threads the server starts have every signal blocked, so that
 * SIGINT / SIGTERM reach the thread that waits for them (serve) or the hub's loop. */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/dp.h"
#include "hub/hub.h"
#include "viz/viz.h"
#include "web/internal.h"

void web_options_init(web_options *o)
{
    memset(o, 0, sizeof *o);
    o->listen = WEB_DEFAULT_ADDR;
    o->width = 1280;
    o->height = 720;
    o->fps = 15;
    o->at_s = -1;
    o->speed = 1;
    o->max_conns = 128;
    o->idle_timeout_s = 10;
}

void web_share_host(char *buf, size_t n)
{
    struct ifaddrs *ifs = NULL;
    snprintf(buf, n, "localhost");
    if (getifaddrs(&ifs) == 0) {
        for (struct ifaddrs *i = ifs; i; i = i->ifa_next) {
            if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
            if (!(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK)) continue;
            inet_ntop(AF_INET, &((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr, buf,
                      (socklen_t)n);
            freeifaddrs(ifs);
            return;
        }
        freeifaddrs(ifs);
    }
    if (gethostname(buf, n) != 0) snprintf(buf, n, "localhost");
    buf[n - 1] = 0;
}

static int check_options(const web_options *o, char *err)
{
    if (!o->trace == !o->connect)
        return dp_fail(err, DP_EINVAL, "web: serve either a trace or a live hub");
    if (!(o->fps > 0 && o->fps <= 120))
        return dp_fail(err, DP_EINVAL, "web: fps %g is not in (0, 120]", o->fps);
    if (o->width < 64 || o->height < 64 || o->width > WEB_MAX_SIZE || o->height > WEB_MAX_SIZE)
        return dp_fail(err, DP_EINVAL, "web: frame size %dx%d is not 64..%d each", o->width,
                       o->height, WEB_MAX_SIZE);
    if (o->max_conns < 1 || o->max_conns > 10000)
        return dp_fail(err, DP_EINVAL, "web: connection cap %d is not 1..10000", o->max_conns);
    if (o->idle_timeout_s < 1 || o->idle_timeout_s > 3600)
        return dp_fail(err, DP_EINVAL, "web: idle timeout %d s is not 1..3600", o->idle_timeout_s);
    if (o->driven && !o->follow)
        return dp_fail(err, DP_EINVAL, "web: a server driven by the window must follow it");
    if (!(o->speed >= 0.01 && o->speed <= 100))
        return dp_fail(err, DP_EINVAL, "web: speed %g is not in 0.01..100", o->speed);
    return 0;
}

static void init_sync(web_server *w)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);   /* deadlines are dp_now_ns() */
    pthread_cond_init(&w->tick_cv, &ca);
    pthread_cond_init(&w->frame_cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&w->mu, NULL);
}

web_server *web_server_new(const web_options *o, char *err)
{
    if (check_options(o, err)) return NULL;
    web_server *w = xcalloc(1, sizeof *w);
    init_sync(w);
    w->opt = *o;
    w->trace = o->trace ? xstrdup(o->trace) : NULL;
    w->connect = o->connect ? xstrdup(o->connect) : NULL;
    w->opt.trace = w->trace;
    w->opt.connect = w->connect;
    w->opt.listen = NULL;   /* not kept: borrowed */
    if (w->opt.max_behind <= 0) w->opt.max_behind = (int)(4 * w->opt.fps) + 1;
    w->src = w->trace ? viz_source_open(w->trace, err) : viz_source_connect(w->connect, 3000, err);
    if (!w->src) goto fail;
    if (viz_source_damage(w->src))
        dp_log(DP_LOG_WARN, "web", "%s: %s", w->trace, viz_source_damage(w->src));
    w->live = viz_source_is_live(w->src);
    w->t0 = viz_source_t0(w->src);
    w->t1 = viz_source_t1(w->src);
    if (o->title) {
        w->title = xstrdup(o->title);
    } else if (w->trace) {
        const char *slash = strrchr(w->trace, '/');
        w->title = xstrdup(slash ? slash + 1 : w->trace);
    } else {
        w->title = xmalloc(strlen(w->connect) + 16);
        sprintf(w->title, "live from %s", w->connect);
    }
    w->opt.title = w->title;
    web_answers_load(w);
    /* Threads started from here on inherit a mask with every signal blocked. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int rc = web_player_start(w, err);
    if (!rc) rc = web_http_start(w, o->listen ? o->listen : WEB_DEFAULT_ADDR, err);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc) goto fail;
    return w;
fail:
    web_server_free(w);
    return NULL;
}

void web_server_free(web_server *w)
{
    if (!w) return;
    web_http_stop(w);      /* every stream ends first: they hold cursors and frames */
    web_player_stop(w);
    while (w->cursors) {
        web_cursor *c = w->cursors;
        w->cursors = c->next;
        web_frame_unref(c->frame);
        free(c);
    }
    web_answers_free(w);
    viz_source_free(w->src);
    pthread_cond_destroy(&w->tick_cv);
    pthread_cond_destroy(&w->frame_cv);
    pthread_mutex_destroy(&w->mu);
    free(w->trace);
    free(w->connect);
    free(w->title);
    free(w);
}

const char *web_server_url(const web_server *w) { return w->url; }
const char *web_server_share_url(const web_server *w) { return w->share; }
int web_server_is_loopback(const web_server *w) { return w->loopback; }

void web_server_get_stats(web_server *w, web_stats *st)
{
    pthread_mutex_lock(&w->mu);
    *st = w->st;
    pthread_mutex_unlock(&w->mu);
}

/* "serving URL" on out; the share line and, off loopback, the warning on stderr. */
static void announce(web_server *w, const char *what, FILE *out)
{
    fprintf(out, "serving %s\n", w->url);
    fflush(out);
    if (w->loopback) {
        fprintf(stderr, "web: %s at %s (loopback: only this machine can open it; "
                "--listen 0.0.0.0:PORT shares it)\n", what, w->url);
    } else {
        fprintf(stderr, "web: %s at %s: students open %s\n", what, w->url, w->share);
        if (!w->token[0])
            fprintf(stderr, "downpour: web: warning: %s is not a loopback address and the run has no "
                    "secret: anyone who can reach this machine can watch%s (set $DOWNPOUR_SECRET or "
                    "--secret-file: the page then needs the address's ?token=)\n", w->url,
                    w->opt.follow && !w->opt.driven ? " and move the replay for everyone" : "");
    }
}

static void report(web_server *w)
{
    web_stats st;
    web_server_get_stats(w, &st);
    fprintf(stderr, "web: done: %llu pages, %llu frames drawn, %llu sent, %llu skipped, "
            "%llu dropped (%llu slow, %llu stalled), %llu connections refused\n",
            (unsigned long long)st.streams_total, (unsigned long long)st.frames_rendered,
            (unsigned long long)st.frames_sent, (unsigned long long)st.frames_skipped,
            (unsigned long long)(st.dropped_slow + st.dropped_stalled),
            (unsigned long long)st.dropped_slow, (unsigned long long)st.dropped_stalled,
            (unsigned long long)st.refused);
}

int web_serve(const web_options *o, FILE *out, char *err)
{
    sigset_t stop, old;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, &old);
    signal(SIGPIPE, SIG_IGN);
    web_server *w = web_server_new(o, err);
    if (!w) {
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        return DP_ERR;
    }
    announce(w, "the replay", out);
    int sig;
    sigwait(&stop, &sig);
    report(w);
    web_server_free(w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return 0;
}

typedef struct hub_web {
    const web_options *opt;
    FILE *out;
    web_server *w;
} hub_web;

static int start_web(void *ctx, const char *hub_addr, char *err)
{
    hub_web *hw = ctx;
    web_options o = *hw->opt;
    o.connect = hub_addr;
    o.trace = NULL;
    if (!(hw->w = web_server_new(&o, err))) return DP_ERR;
    announce(hw->w, "the live run", hw->out);
    return 0;
}

int web_serve_hub(const evt_hub_options *hopt, const web_options *wopt, FILE *out, char *err)
{
    evt_hub_options h = *hopt;
    hub_web hw = {wopt, out, NULL};
    h.on_bound = start_web;
    h.on_bound_ctx = &hw;
    int rc = evt_hub_serve(&h, out, err);
    if (hw.w) {
        report(hw.w);
        web_server_free(hw.w);
    }
    return rc;
}

/* ---- view --serve: the window and the page in one process ------------------------------- */
/* The window's tick hook: the server follows the window (when driven) and the window shows
 * the answers line. Runs on the window's thread, once per loop turn. */
static void view_tick(void *ctx, const viz_view *v, char *note, size_t n)
{
    web_server *w = ctx;
    web_server_drive(w, v->t, !v->paused, v->speed);
    web_server_note(w, note, n);
}

int web_view(const viz_app_options *vopt, const web_options *wopt, FILE *out)
{
    char err[DP_ERRLEN];
    web_options o = *wopt;
    o.trace = vopt->trace;
    o.connect = vopt->connect;
    o.driven = o.follow;
    if (o.at_s < 0) o.at_s = vopt->at_s;   /* every page starts where the window does */
    o.start_paused = o.follow ? 1 : vopt->start_paused;   /* following: the window's first tick sets it */
    signal(SIGPIPE, SIG_IGN);
    web_server *w = web_server_new(&o, err);
    if (!w) {
        fprintf(stderr, "downpour: view: %s\n", err);
        return 1;
    }
    announce(w, o.follow ? "the window's replay" : "the replay", out);
    viz_app_options v = *vopt;
    v.tick = view_tick;
    v.tick_ctx = w;
    int rc = viz_app_run(&v);
    report(w);
    web_server_free(w);
    return rc;
}
