/* web.h — the class in a browser: an HTTP server (libmicrohttpd) whose page shows frames
 * drawn server-side by the viewer's own code (viz_render_image, PNG), streamed to each
 * page as multipart/x-mixed-replace. One render thread owns the source (a recorded trace,
 * or a live hub subscription) and every position ("cursor": each page's own, or the
 * server's one with follow); each tick it renders each distinct frame once and hands the
 * same immutable buffer to every page that shows that moment. A page that reads slowly
 * skips to the newest frame; one that falls max_behind frames behind, or makes no
 * progress for idle_timeout_s, is dropped and counted; none of that slows the render
 * thread or the other pages. Connections are capped; refusals are counted.
 * Threading: libmicrohttpd runs one thread per connection, plus the render thread; the
 * public calls below may be made from any thread. Depends on viz/, events/, common/. */
#ifndef WEB_WEB_H
#define WEB_WEB_H

#include <stdint.h>
#include <stdio.h>

#define WEB_DEFAULT_ADDR "127.0.0.1:7480"

typedef struct web_server web_server;

/* What to serve. Embedded by the caller; web_options_init() gives the defaults noted
 * here. Strings are borrowed until web_server_new() returns (they are copied). */
#define WEB_MAX_SIZE 8192   /* a page's frames: at most this many pixels each way */

typedef struct web_options {
    const char *listen;     /* "host:port" (port 0 = ephemeral); NULL = WEB_DEFAULT_ADDR */
    const char *trace;      /* replay this trace, or */
    const char *connect;    /* watch the hub at this address (live) */
    int follow;             /* every page shows the server's position (and moves it) */
    int width, height;      /* frame size in pixels (1280x720), 64..WEB_MAX_SIZE each */
    double fps;             /* frames per second while a position moves (15) */
    double at_s;            /* the server's position at start, s; < 0 = the start (-1) */
    int start_paused;       /* the server's position starts paused (replay) */
    double speed;           /* initial playback speed (1) */
    int max_conns;          /* connection cap (128) */
    int idle_timeout_s;     /* a connection with no progress this long is closed (10) */
    int max_behind;         /* frames a page may fall behind mid-frame before it is dropped
                             * (0 = 4 s of frames) */
    const char *title;      /* shown in the page's title bar; NULL = the trace's name */
    int driven;             /* with follow: the server's position is set by
                             * web_server_drive() (the window of `view --serve`), not by
                             * its own clock or the pages' buttons (they get 409) */
} web_options;

/* Fills o with the defaults above. */
void web_options_init(web_options *o);

/* Opens the source (a live one is subscribed at once; the hub must be listening), binds
 * the address and starts serving. Returns NULL with err filled on failure. Free with
 * web_server_free(). */
web_server *web_server_new(const web_options *o, char *err);

/* Stops serving (every stream ends), joins the threads and frees. NULL is a no-op. */
void web_server_free(web_server *w);

/* "http://127.0.0.1:40123/": the bound address; borrowed until web_server_free(). */
const char *web_server_url(const web_server *w);
/* The address to give students: the bound one, or for a wildcard bind the first
 * non-loopback IPv4 address of this machine. Borrowed until web_server_free(). */
const char *web_server_share_url(const web_server *w);
/* 1 when the bound address is a loopback one. */
int web_server_is_loopback(const web_server *w);

typedef struct web_stats {
    uint64_t conns_now, conns_total;  /* HTTP connections */
    uint64_t refused;                 /* connections refused at the cap */
    uint64_t streams_now, streams_total;
    uint64_t cursors_now;             /* positions being shown */
    uint64_t frames_rendered;         /* distinct frames drawn */
    uint64_t frames_sent;             /* frames started to a page (repeats included) */
    uint64_t frames_repeated;         /* the same frame again, to keep a paused page alive */
    uint64_t frames_skipped;          /* newer frames a page never got (it read too slowly) */
    uint64_t bytes_sent;              /* stream bytes handed to the sockets */
    uint64_t dropped_slow;            /* pages dropped for falling max_behind frames behind */
    uint64_t dropped_stalled;         /* pages dropped for no progress in idle_timeout_s */
    uint64_t render_ns;               /* time spent drawing and encoding, total */
} web_stats;

/* A snapshot of the counters. */
void web_server_get_stats(web_server *w, web_stats *st);

/* Sets the server's position (driven servers only; otherwise a no-op): every page shows
 * trace time t, playing or not, at speed. Any thread. */
void web_server_drive(web_server *w, int64_t t, int playing, double speed);
/* The latest answers line ("question 2 (step 150): 8 answered: A 3, B 5, C 0"), or "",
 * into buf. Any thread. */
void web_server_note(web_server *w, char *buf, size_t n);

/* `downpour view TRACE --serve ADDR` in one call: starts a web server for the same source
 * (wopt; with wopt->follow it is driven by the window: every page follows the window),
 * prints "serving URL" on out, then runs the window (vopt, whose tick hook is set here:
 * it drives the server and shows the answers line in the window's corner), and frees the
 * server when the window closes. Returns the window's exit status (1 with a message on
 * stderr when the server could not start). */
struct viz_app_options;
int web_view(const struct viz_app_options *vopt, const web_options *wopt, FILE *out);

/* `downpour serve` in one call, on the calling thread: starts the server, prints
 * "serving URL" on out (tests read the port from it), a warning on stderr when the
 * address is not a loopback one, and waits for SIGINT or SIGTERM (blocked in the
 * calling thread and the server's threads for the call); then prints the closing
 * statistics on stderr and frees it. Returns 0 or a dp_err with err filled. */
int web_serve(const web_options *o, FILE *out, char *err);

/* `downpour hub --http ADDR` in one call: runs the hub like evt_hub_serve() (hopt,
 * out: see hub/hub.h) and, once it is bound, a web server subscribed to it (wopt,
 * whose connect is set to the hub's address). Returns when the hub stops. */
struct evt_hub_options;
int web_serve_hub(const struct evt_hub_options *hopt, const web_options *wopt, FILE *out,
                  char *err);

#endif
