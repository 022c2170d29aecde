/* http.c — the web server's HTTP side on libmicrohttpd, one thread per connection:
 *   GET  /                 the page (page.c)
 *   GET  /stream?id=PAGE[&at=S][&paused=1][&speed=X]
 *                          multipart/x-mixed-replace of PNG frames of that page's position
 *   GET  /state?id=PAGE    its position as JSON;  POST /control?id=PAGE&op=OP[&t=S][&x=X]
 *   GET  /frame.png?id=PAGE   the frame it shows now;  GET /stats   the counters as JSON
 *   GET  /lesson           the lesson's questions (no answers);  GET /answers   the counts
 *   POST /answer?id=PAGE&q=N&choice=C   that page's answer (answers.c validates it)
 * A stream's thread blocks in stream_read() only while its page waits for a new frame
 * (at most a heartbeat period: a paused page gets its frame again so that the idle
 * timeout spares it). Frames are shared and immutable; a stream holds one reference. A
 * page more than max_behind frames behind is dropped at its next write; one whose socket
 * accepts nothing for idle_timeout_s is closed by libmicrohttpd (counted in done_cb). */
#include <microhttpd.h>
#include <sodium.h>

#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/dp.h"
#include "net/auth.h"
#include "net/sock.h"
#include "web/internal.h"

enum { REQ_OTHER = 0, REQ_STREAM };

/* A stream socket's send buffer: the kernel's autotuning would let a stalled page absorb
 * megabytes before it counts as stalled; this bounds what one page holds to a few frames. */
#define WEB_STREAM_SNDBUF (256 * 1024)

/* Per request (libmicrohttpd's con_cls); freed in done_cb. */
typedef struct web_req {
    int kind;
    char peer[64];
} web_req;

/* One page's stream; owned by its response, freed in stream_free. */
typedef struct web_stream {
    web_server *w;
    web_cursor *c;            /* a stream reference (mu) */
    web_frame *f;             /* the frame being sent (a reference), or NULL */
    size_t off;               /* bytes of f->part sent */
    int started;              /* WEB_STREAM_START sent */
    uint64_t seq;             /* the cursor's seq of f (0: none yet) */
    uint64_t part_ns;         /* when the current part started */
    char peer[64];
} web_stream;

static uint64_t heartbeat_ns(const web_server *w)
{
    uint64_t s = (uint64_t)w->opt.idle_timeout_s * 1000000000u / 3;
    return s < 500000000u ? 500000000u : s;
}

static struct timespec abs_time(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    return ts;
}

/* ---- the stream ------------------------------------------------------------------------ */
/* Takes the cursor's newest frame, or the same one again once a heartbeat is due;
 * waits for either. Returns 1 with s->f set, 0 when the server stops. mu held. */
static int next_part(web_stream *s)
{
    web_server *w = s->w;
    web_cursor *c = s->c;
    for (;;) {
        if (w->stopping) return 0;
        uint64_t now = dp_now_ns(), due = s->part_ns + heartbeat_ns(w);
        if (c->frame && c->seq != s->seq) {
            if (s->seq && c->seq > s->seq + 1) w->st.frames_skipped += c->seq - s->seq - 1;
            break;
        }
        if (c->frame && s->seq && now >= due) {
            w->st.frames_repeated++;
            break;
        }
        struct timespec dl = abs_time(c->frame && s->seq ? due : now + 1000000000u);
        pthread_cond_timedwait(&w->frame_cv, &w->mu, &dl);
    }
    web_frame_ref(c->frame);
    web_frame_unref(s->f);
    s->f = c->frame;
    s->seq = c->seq;
    s->off = 0;
    s->part_ns = dp_now_ns();
    w->st.frames_sent++;
    return 1;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    web_stream *s = cls;
    web_server *w = s->w;
    DP_UNUSED(pos);
    if (!s->started) {
        s->started = 1;
        web_yield_cpu(); /* this connection's thread */
        size_t n = strlen(WEB_STREAM_START);
        dp_assert("web: stream buffer holds the first delimiter", max >= n);
        memcpy(buf, WEB_STREAM_START, n);
        return (ssize_t)n;
    }
    pthread_mutex_lock(&w->mu);
    if (!s->f || s->off == s->f->part_len) {
        if (!next_part(s)) {
            pthread_mutex_unlock(&w->mu);
            return MHD_CONTENT_READER_END_OF_STREAM;
        }
    } else if (s->c->seq > s->seq + (uint64_t)w->opt.max_behind) {
        w->st.dropped_slow++;
        uint64_t behind = s->c->seq - s->seq;
        pthread_mutex_unlock(&w->mu);
        dp_log(DP_LOG_WARN, "web", "dropped a slow page %s: %llu frames behind", s->peer,
               (unsigned long long)behind);
        return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    const web_frame *f = s->f;
    pthread_mutex_unlock(&w->mu);
    /* The frame is immutable and referenced: copied without the lock. */
    size_t n = f->part_len - s->off;
    if (n > max) n = max;
    memcpy(buf, f->part + s->off, n);
    s->off += n;
    pthread_mutex_lock(&w->mu);
    w->st.bytes_sent += n;
    pthread_mutex_unlock(&w->mu);
    return (ssize_t)n;
}

static void stream_free(void *cls)
{
    web_stream *s = cls;
    web_server *w = s->w;
    pthread_mutex_lock(&w->mu);
    web_frame_unref(s->f);
    web_cursor_release(w, s->c);
    w->st.streams_now--;
    pthread_mutex_unlock(&w->mu);
    free(s);
}

/* ---- responses ---------------------------------------------------------------------------- */
static enum MHD_Result respond(struct MHD_Connection *conn, unsigned status, const char *type,
                               const void *body, size_t len)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body,
                                                             MHD_RESPMEM_MUST_COPY);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, "Content-Type", type);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    enum MHD_Result rc = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return rc;
}

static enum MHD_Result respond_json(struct MHD_Connection *conn, unsigned status, const char *s)
{
    return respond(conn, status, "application/json", s, strlen(s));
}

static enum MHD_Result respond_error(struct MHD_Connection *conn, unsigned status, const char *msg)
{
    json_t *j = json_pack("{s:s}", "error", msg);
    char *s = json_dumps(j, JSON_COMPACT);
    enum MHD_Result rc = respond_json(conn, status, s ? s : "{}");
    free(s);
    json_decref(j);
    return rc;
}

static const char *arg(struct MHD_Connection *conn, const char *key)
{
    return MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, key);
}

/* Parses the optional number argument key into *out; -1 when it is not a number. */
static int arg_double(struct MHD_Connection *conn, const char *key, double *out)
{
    const char *v = arg(conn, key);
    if (!v) return 0;
    return dp_parse_double(v, out) || !(*out > -1e12 && *out < 1e12) ? -1 : 0;
}

static enum MHD_Result serve_stream(web_server *w, struct MHD_Connection *conn, web_req *rq)
{
    double at = -1, speed = 0;
    const char *id = arg(conn, "id"), *paused = arg(conn, "paused");
    char anon[48];
    if (arg_double(conn, "at", &at) || arg_double(conn, "speed", &speed) || at < -1 ||
        speed < 0)
        return respond_error(conn, MHD_HTTP_BAD_REQUEST, "at and speed must be numbers >= 0");
    web_stream *s = xcalloc(1, sizeof *s);
    s->w = w;
    snprintf(s->peer, sizeof s->peer, "%s", rq->peer);
    pthread_mutex_lock(&w->mu);
    if (!id || !*id) {   /* a stream nobody will control: a name of its own */
        snprintf(anon, sizeof anon, "anon-%llu", (unsigned long long)w->st.streams_total);
        id = anon;
    }
    s->c = web_cursor_attach(w, id, at, paused ? strcmp(paused, "0") != 0 : -1, speed);
    if (s->c) w->st.streams_now++, w->st.streams_total++;
    pthread_mutex_unlock(&w->mu);
    if (!s->c) {
        free(s);
        return respond_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "too many pages");
    }
    rq->kind = REQ_STREAM;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    int sndbuf = WEB_STREAM_SNDBUF;
    if (ci) setsockopt(ci->connect_fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
    struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024,
                                                               stream_read, s, stream_free);
    if (!r) {
        stream_free(s);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type",
                            "multipart/x-mixed-replace; boundary=" WEB_BOUNDARY);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    enum MHD_Result rc = MHD_queue_response(conn, MHD_HTTP_OK, r);
    MHD_destroy_response(r);   /* stream_free runs when libmicrohttpd is done with it */
    return rc;
}

static enum MHD_Result serve_frame(web_server *w, struct MHD_Connection *conn)
{
    const char *id = arg(conn, "id");
    pthread_mutex_lock(&w->mu);
    web_cursor *c = web_cursor_find(w, id ? id : "");
    web_frame *f = c ? c->frame : NULL;
    web_frame_ref(f);
    pthread_mutex_unlock(&w->mu);
    if (!f) return respond_error(conn, MHD_HTTP_NOT_FOUND, "no frame for that page yet");
    enum MHD_Result rc = respond(conn, MHD_HTTP_OK, "image/png", f->part, f->png_len);
    pthread_mutex_lock(&w->mu);
    web_frame_unref(f);
    pthread_mutex_unlock(&w->mu);
    return rc;
}

static enum MHD_Result serve_state(web_server *w, struct MHD_Connection *conn)
{
    char buf[8192];
    const char *id = arg(conn, "id");
    web_state_json(w, id ? id : "", buf, sizeof buf);
    return respond_json(conn, strstr(buf, "\"error\"") ? MHD_HTTP_NOT_FOUND : MHD_HTTP_OK, buf);
}

static enum MHD_Result serve_control(web_server *w, struct MHD_Connection *conn)
{
    static const struct { const char *name; int op; } ops[] = {
        {"play", WEB_OP_PLAY}, {"pause", WEB_OP_PAUSE}, {"step", WEB_OP_STEP},
        {"back", WEB_OP_BACK}, {"next", WEB_OP_NEXT_EVENT}, {"prev", WEB_OP_PREV_EVENT},
        {"seek", WEB_OP_SEEK}, {"speed", WEB_OP_SPEED}, {"live", WEB_OP_LIVE},
    };
    const char *id = arg(conn, "id"), *name = arg(conn, "op");
    int op = 0;
    for (size_t i = 0; name && i < DP_ARRAY_LEN(ops); i++)
        if (!strcmp(name, ops[i].name)) op = ops[i].op;
    double x = 0;
    if (w->opt.driven)
        return respond_error(conn, MHD_HTTP_CONFLICT,
                             "the teacher's window moves every page: its buttons are off");
    if (!op)
        return respond_error(conn, MHD_HTTP_BAD_REQUEST,
                             "op must be play, pause, step, back, next, prev, seek, speed or live");
    if ((op == WEB_OP_SEEK && (!arg(conn, "t") || arg_double(conn, "t", &x) || x < 0)) ||
        (op == WEB_OP_SPEED && (!arg(conn, "x") || arg_double(conn, "x", &x) || x <= 0)))
        return respond_error(conn, MHD_HTTP_BAD_REQUEST,
                             "seek needs t=SECONDS, speed needs x=FACTOR");
    int rc = web_control(w, id ? id : "", op, x);
    if (rc == DP_ENOTFOUND)
        return respond_error(conn, MHD_HTTP_NOT_FOUND, "no such page (its stream is not open)");
    if (rc == DP_ERR)
        return respond_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "too many controls queued");
    if (rc == DP_ETIMEDOUT)
        return respond_error(conn, MHD_HTTP_GATEWAY_TIMEOUT, "the control was not applied in time");
    return serve_state(w, conn);
}

static enum MHD_Result serve_stats(web_server *w, struct MHD_Connection *conn)
{
    web_stats st;
    web_server_get_stats(w, &st);
    json_t *j = json_pack(
        "{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f}",
        "conns_now", (json_int_t)st.conns_now, "conns_total", (json_int_t)st.conns_total,
        "refused", (json_int_t)st.refused, "streams_now", (json_int_t)st.streams_now,
        "streams_total", (json_int_t)st.streams_total, "cursors_now", (json_int_t)st.cursors_now,
        "frames_rendered", (json_int_t)st.frames_rendered, "frames_sent", (json_int_t)st.frames_sent,
        "frames_repeated", (json_int_t)st.frames_repeated,
        "frames_skipped", (json_int_t)st.frames_skipped, "bytes_sent", (json_int_t)st.bytes_sent,
        "dropped_slow", (json_int_t)st.dropped_slow,
        "dropped_stalled", (json_int_t)st.dropped_stalled,
        "dropped", (json_int_t)(st.dropped_slow + st.dropped_stalled),
        "render_ms_per_frame",
        st.frames_rendered ? (double)st.render_ns / 1e6 / (double)st.frames_rendered : 0.0);
    char *s = json_dumps(j, JSON_COMPACT);
    enum MHD_Result rc = respond_json(conn, MHD_HTTP_OK, s ? s : "{}");
    free(s);
    json_decref(j);
    return rc;
}

/* ---- the lesson's questions ------------------------------------------------------------------ */
static enum MHD_Result serve_answer(web_server *w, struct MHD_Connection *conn)
{
    char buf[4096];
    unsigned status = web_answer_submit(w, arg(conn, "id"), arg(conn, "q"), arg(conn, "choice"),
                                        buf, sizeof buf);
    return respond_json(conn, status, buf);
}

static enum MHD_Result serve_answers(web_server *w, struct MHD_Connection *conn)
{
    size_t n = 256 + (size_t)w->n_qs * 320;   /* a question's counts: < 320 bytes */
    char *buf = xmalloc(n);
    web_answers_json(w, buf, n);
    enum MHD_Result rc = respond_json(conn, MHD_HTTP_OK, buf);
    free(buf);
    return rc;
}

static enum MHD_Result serve_lesson(web_server *w, struct MHD_Connection *conn)
{
    size_t n = 1024;   /* the questions are the lesson file's: size them, do not guess */
    for (int i = 0; i < w->n_qs; i++) {
        n += 64 + 6 * strlen(w->qs[i].text);
        for (int k = 0; k < w->qs[i].n_choices; k++) n += 16 + 6 * strlen(w->qs[i].choices[k]);
    }
    n += 6 * strlen(w->title ? w->title : "");
    char *buf = xmalloc(n);
    web_lesson_json(w, buf, n);
    enum MHD_Result rc = respond_json(conn, MHD_HTTP_OK, buf);
    free(buf);
    return rc;
}

/* ---- the page's token ------------------------------------------------------------------------
 * With a secret configured, every request must carry the viewer token of the run's key: in
 * the query (`?token=`, the address `downpour` prints) or in the cookie the page's answer sets,
 * which the page's own requests then send. Compared in constant time; refusals name nothing. */
#define TOKEN_COOKIE "dp_token"

static int token_matches(const web_server *w, const char *given)
{
    size_t n = strlen(w->token);
    return given && strlen(given) == n && sodium_memcmp(given, w->token, n) == 0;
}

static int token_from_query(const web_server *w, struct MHD_Connection *conn)
{
    return token_matches(w, MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "token"));
}

static int token_ok(const web_server *w, struct MHD_Connection *conn)
{
    return !w->token[0] || token_from_query(w, conn) ||
           token_matches(w, MHD_lookup_connection_value(conn, MHD_COOKIE_KIND, TOKEN_COOKIE));
}

/* The page; with the token in the query, it is remembered in a cookie for the page's
 * requests (HttpOnly, this site only). */
static enum MHD_Result serve_page(web_server *w, struct MHD_Connection *conn)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(web_page_html), (void *)web_page_html,
                                                             MHD_RESPMEM_PERSISTENT);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, "Content-Type", "text/html; charset=utf-8");
    MHD_add_response_header(r, "Cache-Control", "no-store");
    if (w->token[0] && token_from_query(w, conn)) {
        char cookie[96];
        snprintf(cookie, sizeof cookie, TOKEN_COOKIE "=%s; HttpOnly; SameSite=Strict; Path=/", w->token);
        MHD_add_response_header(r, "Set-Cookie", cookie);
    }
    enum MHD_Result rc = MHD_queue_response(conn, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return rc;
}

/* ---- libmicrohttpd callbacks ----------------------------------------------------------------- */
static enum MHD_Result handler(void *cls, struct MHD_Connection *conn, const char *url,
                               const char *method, const char *version, const char *upload,
                               size_t *upload_size, void **con_cls)
{
    web_server *w = cls;
    web_req *rq = *con_cls;
    DP_UNUSED(version);
    DP_UNUSED(upload);
    int post = !strcmp(method, MHD_HTTP_METHOD_POST);
    if (!rq) {
        rq = xcalloc(1, sizeof *rq);
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        if (ci && ci->client_addr) net_addr_text(ci->client_addr, rq->peer, sizeof rq->peer);
        *con_cls = rq;
        if (post) return MHD_YES;     /* a POST's body comes in later calls */
    }
    if (post && *upload_size) {       /* controls carry everything in the query: ignore */
        *upload_size = 0;
        return MHD_YES;
    }
    if (!token_ok(w, conn)) {
        dp_log(DP_LOG_INFO, "web", "refused %s %s from %s: no viewer token", method, url, rq->peer);
        return respond_error(conn, MHD_HTTP_FORBIDDEN, "this run has a secret: open the address downpour "
                             "printed, with its ?token=");
    }
    if (!strcmp(url, "/control")) {
        if (!post) return respond_error(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "use POST");
        return serve_control(w, conn);
    }
    if (!strcmp(url, "/answer")) {
        if (!post) return respond_error(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "use POST");
        return serve_answer(w, conn);
    }
    if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
        return respond_error(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "use GET");
    if (!strcmp(url, "/") || !strcmp(url, "/index.html")) return serve_page(w, conn);
    if (!strcmp(url, "/stream")) return serve_stream(w, conn, rq);
    if (!strcmp(url, "/state")) return serve_state(w, conn);
    if (!strcmp(url, "/frame.png")) return serve_frame(w, conn);
    if (!strcmp(url, "/stats")) return serve_stats(w, conn);
    if (!strcmp(url, "/answers")) return serve_answers(w, conn);
    if (!strcmp(url, "/lesson")) return serve_lesson(w, conn);
    return respond_error(conn, MHD_HTTP_NOT_FOUND, "no such page");
}

static void done_cb(void *cls, struct MHD_Connection *conn, void **con_cls,
                    enum MHD_RequestTerminationCode toe)
{
    web_server *w = cls;
    web_req *rq = *con_cls;
    DP_UNUSED(conn);
    if (!rq) return;
    if (rq->kind == REQ_STREAM && toe == MHD_REQUEST_TERMINATED_TIMEOUT_REACHED) {
        pthread_mutex_lock(&w->mu);
        w->st.dropped_stalled++;
        pthread_mutex_unlock(&w->mu);
        dp_log(DP_LOG_WARN, "web", "dropped a stalled page %s: nothing accepted for %d s",
               rq->peer, w->opt.idle_timeout_s);
    }
    free(rq);
    *con_cls = NULL;
}

static void conn_cb(void *cls, struct MHD_Connection *conn, void **socket_ctx,
                    enum MHD_ConnectionNotificationCode toe)
{
    web_server *w = cls;
    DP_UNUSED(conn);
    DP_UNUSED(socket_ctx);
    pthread_mutex_lock(&w->mu);
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) w->st.conns_now++, w->st.conns_total++;
    else if (toe == MHD_CONNECTION_NOTIFY_CLOSED) w->st.conns_now--;
    pthread_mutex_unlock(&w->mu);
}

/* Runs on libmicrohttpd's listening thread, like conn_cb's STARTED: the count is exact. */
static enum MHD_Result accept_cb(void *cls, const struct sockaddr *addr, socklen_t len)
{
    web_server *w = cls;
    DP_UNUSED(addr);
    DP_UNUSED(len);
    pthread_mutex_lock(&w->mu);
    int full = w->st.conns_now >= (uint64_t)w->opt.max_conns;
    if (full) w->st.refused++;
    pthread_mutex_unlock(&w->mu);
    return full ? MHD_NO : MHD_YES;
}

static void log_cb(void *cls, const char *fmt, va_list ap)
{
    char msg[512];
    DP_UNUSED(cls);
    vsnprintf(msg, sizeof msg, fmt, ap);
    msg[strcspn(msg, "\n")] = 0;
    dp_log(DP_LOG_DEBUG, "web", "libmicrohttpd: %s", msg);
}

/* ---- start / stop -------------------------------------------------------------------------- */
static int is_loopback(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)(const void *)ss)->sin_addr.s_addr) >> 24) == 127;
    if (ss->ss_family == AF_INET6)
        return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)(const void *)ss)->sin6_addr);
    return 0;
}

static int is_wildcard(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET)
        return ((const struct sockaddr_in *)(const void *)ss)->sin_addr.s_addr == htonl(INADDR_ANY);
    if (ss->ss_family == AF_INET6)
        return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)(const void *)ss)->sin6_addr);
    return 0;
}

int web_http_start(web_server *w, const char *listen_addr, char *err)
{
    struct sockaddr_storage ss;
    int fd = net_listen_addr(listen_addr, "web", &ss, err), rc = fd;
    if (fd < 0) goto fail;
    rc = DP_EIO;
    char addr[96];
    net_addr_text((struct sockaddr *)&ss, addr, sizeof addr);
    auth_key key;
    if (auth_hub_key_from_env(&key, err)) goto fail;
    if (key.set) auth_viewer_token(&key, w->token, sizeof w->token);
    auth_key_clear(&key);
    snprintf(w->url, sizeof w->url, "http://%s/", addr);
    w->loopback = is_loopback(&ss);
    if (is_wildcard(&ss)) {
        char host[64];
        int port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                   : ((struct sockaddr_in *)&ss)->sin_port);
        web_share_host(host, sizeof host);
        snprintf(w->share, sizeof w->share, "http://%s:%d/", host, port);
    } else {
        snprintf(w->share, sizeof w->share, "%s", w->url);
    }
    if (w->token[0]) {   /* the addresses to open carry the token */
        size_t n = strlen(w->url), m = strlen(w->share);
        snprintf(w->url + n, sizeof w->url - n, "?token=%s", w->token);
        snprintf(w->share + m, sizeof w->share - m, "?token=%s", w->token);
    }
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL_INTERNAL_THREAD |
                     MHD_USE_ERROR_LOG | (ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0);
    /* One over our own cap, so that accept_cb (which counts) is what refuses. */
    w->mhd = MHD_start_daemon(flags, 0, accept_cb, w, handler, w,
                              MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd,
                              MHD_OPTION_CONNECTION_LIMIT, (unsigned)w->opt.max_conns + 1,
                              MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)w->opt.idle_timeout_s,
                              MHD_OPTION_NOTIFY_COMPLETED, done_cb, w,
                              MHD_OPTION_NOTIFY_CONNECTION, conn_cb, w,
                              MHD_OPTION_EXTERNAL_LOGGER, log_cb, w,
                              MHD_OPTION_END);
    if (!w->mhd) {
        dp_fail(err, DP_EIO, "web: libmicrohttpd could not start on %s", addr);
        goto fail;
    }
    return 0;   /* the daemon owns fd now and closes it */
fail:
    if (fd >= 0) close(fd);
    return rc;
}

void web_http_stop(web_server *w)
{
    if (!w->mhd) return;
    pthread_mutex_lock(&w->mu);
    w->stopping = 1;                       /* streams waiting for a frame end now */
    pthread_cond_broadcast(&w->frame_cv);
    pthread_mutex_unlock(&w->mu);
    MHD_stop_daemon(w->mhd);
    w->mhd = NULL;
}
