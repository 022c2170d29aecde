/* app.c — the viewer window (`downpour view`), laid out like a raylib program: initialise;
 * loop { input, update, draw }; tear down. Cairo draws straight into the pixels of an
 * SDL streaming texture (ARGB8888 == cairo ARGB32), sized to the drawable so that HiDPI
 * screens stay crisp. Replay scrubs a trace; live mode follows a hub (pausing only
 * freezes the picture: events keep being read, so training never waits on the viewer,
 * and `c` catches up). A hidden --script feeds key presses for tests. One thread. */
#include <SDL.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dp.h"
#include "viz/internal.h"   /* the lesson's stops and choices (viz/lesson.c) */

static const double speeds[] = {0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100};
#define N_SPEEDS ((int)DP_ARRAY_LEN(speeds))

/* The preset after `now` (faster when up, else slower), so that [ and ] step through the
 * presets from any --speed; the ends stay put. */
static double next_speed(double now, int up)
{
    if (up) {
        for (int i = 0; i < N_SPEEDS; i++)
            if (speeds[i] > now * 1.0001) return speeds[i];
        return speeds[N_SPEEDS - 1];
    }
    for (int i = N_SPEEDS - 1; i >= 0; i--)
        if (speeds[i] < now * 0.9999) return speeds[i];
    return speeds[0];
}

typedef struct app {
    viz_source *src, *cmp;
    SDL_Window *win;
    SDL_Renderer *ren;
    SDL_Texture *tex;
    int tex_w, tex_h;
    viz_view view;
    int playing, following, quit, dragging, dirty, fullscreen, shots;
    uint64_t last_ns, toast_until_ns, live_anchor_ns;
    int64_t live_anchor_t;
    char toast[600];
    char note[256];            /* the tick hook's line (view --serve: the answers), or "" */
    const char *shot_dir;
    const char *script; size_t script_pos; uint64_t script_next_ns;
    const viz_app_options *o;
    /* fork from here: the fork shown as B (owned, replaces --compare's B while shown), the
     * step and key it changed, and when it was asked for (0: its first frame is drawn) */
    viz_source *fork_src;
    char fork_path[4096], fork_set[64];
    int64_t fork_step;
    uint64_t fork_asked_ns, fork_key_ns;
} app;

void viz_app_options_init(viz_app_options *o)
{
    memset(o, 0, sizeof *o);
    o->width = 1280;
    o->height = 720;
    o->speed = 1;
    o->at_s = -1;
}

static void set_toast(app *a, const char *msg)
{
    snprintf(a->toast, sizeof a->toast, "%.590s", msg);
    a->toast_until_ns = dp_now_ns() + 2500000000ull;
    a->dirty = 1;
}

static int64_t t_end(app *a)
{
    return viz_source_t1(a->src);
}

static void set_time(app *a, int64_t t)
{
    int64_t e = t_end(a);
    a->view.t = t < 0 ? 0 : t > e ? e : t;
    a->dirty = 1;
}

/* The message line on the screen: a toast while it lasts, else the tick hook's note. */
static const char *shown_message(const app *a)
{
    return a->toast[0] ? a->toast : a->note[0] ? a->note : NULL;
}

static void save_frame(app *a)
{
    char path[4096], err[DP_ERRLEN];
    snprintf(path, sizeof path, "%s/downpour-%04d.png", a->shot_dir, ++a->shots);
    viz_view v = a->view;
    v.toast = NULL;
    v.width = a->tex_w;
    v.height = a->tex_h;
    if (dp_mkdirs(a->shot_dir, err) || viz_render_file(a->src, &v, path, err)) {   /* made as asked */
        set_toast(a, err);
        fprintf(stderr, "downpour: view: %s\n", err);
        return;
    }
    char lesson[600];
    viz_lesson_describe(a->src, &v, lesson, sizeof lesson);
    char fork[4400] = "";
    if (v.compare)
        snprintf(fork, sizeof fork, " compare=1 compare_engine=%s fork_step=%lld%s%s", v.compare->m.engine,
                 (long long)v.compare->m.fork_step, a->fork_src ? " fork=" : "", a->fork_src ? a->fork_path : "");
    /* last, as it may hold spaces: the message line on the screen as it was saved (the
     * file leaves it out) */
    const char *shown = shown_message(a);
    printf("saved %s t=%lld paused=%d speed=%g placement=%d help=%d live=%d fork_menu=%d%s%s message=%s\n", path,
           (long long)v.t, v.paused, v.speed, v.placement, v.help, v.live, v.fork_menu, lesson, fork,
           shown ? shown : "");
    fflush(stdout);
    char msg[4200];
    snprintf(msg, sizeof msg, "saved %s", path);
    set_toast(a, msg);
}

static void pause_view(app *a, int paused)
{
    a->playing = !paused;
    a->view.paused = paused;
    if (paused && viz_source_is_live(a->src)) a->following = 0;
    a->dirty = 1;
}

/* Ends a lesson stop (pause or answered question) and plays on; a live view plays on
 * from the frozen picture and catches up. */
static void lesson_go_on(app *a)
{
    a->view.lesson_pause = a->view.question = a->view.revealed = a->view.picked = 0;
    pause_view(a, 0);
}

/* Keys while stopped for the lesson: space (or a choice's letter) reveals the answer,
 * space again goes on. Returns 1 when the key was the lesson's. */
static int lesson_key(app *a, SDL_Keycode k)
{
    viz_view *v = &a->view;
    int n = v->question ? viz_lesson_choices(a->src, v->question - 1, NULL) : 0;
    if (v->question && !v->revealed) {
        int pick = k >= 'a' && k < 'a' + n ? k - 'a' : k >= 'A' && k < 'A' + n ? k - 'A' : -1;
        if (k != SDLK_SPACE && pick < 0) return 0;
        v->revealed = 1;
        v->picked = pick + 1;
        a->dirty = 1;
        return 1;
    }
    if ((v->question || v->lesson_pause) && k == SDLK_SPACE) {
        lesson_go_on(a);
        return 1;
    }
    return 0;
}

/* ---- fork from here ------------------------------------------------------------------- */
/* Key f: opens the chooser over a paused replay at its global step. */
static void fork_open(app *a)
{
    if (viz_source_is_live(a->src)) {
        set_toast(a, "fork: only a replay can be forked (record the run, then view its trace)");
        return;
    }
    if (!a->o->fork) {
        set_toast(a, "fork: not available in this viewer");
        return;
    }
    if (viz_source_state_at(a->src, a->view.t)->global_step < 1) {
        set_toast(a, "fork: no global step yet: play on to a step, then f");
        return;
    }
    pause_view(a, 1);
    a->view.fork_menu = 1;
    a->fork_key_ns = dp_now_ns();
    a->dirty = 1;
}

/* Enter in the chooser: asks the callback for the fork and shows it as B. */
static void fork_run(app *a)
{
    viz_fork_choice ch[VIZ_FORK_CHOICES];
    int n = viz_fork_choices(a->src, ch), i = a->view.fork_menu - 1;
    int64_t step = viz_source_state_at(a->src, a->view.t)->global_step;
    a->view.fork_menu = 0;
    a->dirty = 1;
    if (i < 0 || i >= n) return;
    char path[4096], err[DP_ERRLEN], msg[DP_ERRLEN + 32];
    uint64_t asked = dp_now_ns();
    if (a->o->fork(a->o->fork_ctx, a->o->trace, step, ch[i].set, path, sizeof path, err)) {
        snprintf(msg, sizeof msg, "fork: %s", err);
        set_toast(a, msg);
        fprintf(stderr, "downpour: view: %s\n", msg);
        return;
    }
    viz_source *f = viz_source_open(path, err);
    if (!f) {
        snprintf(msg, sizeof msg, "fork: %s", err);
        set_toast(a, msg);
        return;
    }
    viz_source_free(a->fork_src);
    a->fork_src = f;
    snprintf(a->fork_path, sizeof a->fork_path, "%s", path);
    snprintf(a->fork_set, sizeof a->fork_set, "%s", ch[i].set);
    a->fork_step = step;
    a->view.compare = f;
    a->view.compare_by_step = 0;   /* the fork is on the replay's clock */
    a->fork_asked_ns = asked;
    snprintf(msg, sizeof msg, "forked at step %lld: %s (simulated, right)", (long long)step, ch[i].set);
    set_toast(a, msg);
}

/* Keys while the chooser is open: f / Tab / arrows move, 1-4 pick, Enter forks, Esc
 * closes. Returns 1 when the key was the chooser's. */
static int fork_key(app *a, SDL_Keycode k)
{
    viz_view *v = &a->view;
    if (!v->fork_menu) return 0;
    viz_fork_choice ch[VIZ_FORK_CHOICES];
    int n = viz_fork_choices(a->src, ch);
    if (k == SDLK_f || k == SDLK_TAB || k == SDLK_DOWN) v->fork_menu = v->fork_menu % n + 1;
    else if (k == SDLK_UP) v->fork_menu = (v->fork_menu + n - 2) % n + 1;
    else if (k >= '1' && k < '1' + n) v->fork_menu = (int)(k - '0');
    else if (k == SDLK_RETURN || k == SDLK_KP_ENTER) fork_run(a);
    else if (k == SDLK_ESCAPE) v->fork_menu = 0;
    else if (k == SDLK_q || k == SDLK_s) return 0;   /* quit and save still work */
    a->dirty = 1;
    return 1;
}

/* After a frame is shown: the first one with the fork beside the replay says how long it
 * took from the request (Enter) and from the `f` that opened the chooser. */
static void fork_drawn(app *a)
{
    if (!a->fork_asked_ns) return;
    uint64_t now = dp_now_ns();
    printf("forked %s at_step=%lld set=%s first_frame_ms=%.1f since_f_ms=%.1f\n", a->fork_path,
           (long long)a->fork_step, a->fork_set, (double)(now - a->fork_asked_ns) / 1e6,
           (double)(now - a->fork_key_ns) / 1e6);
    fflush(stdout);
    a->fork_asked_ns = 0;
}

/* ---- input --------------------------------------------------------------------------- */
static void on_key(app *a, SDL_Keycode k)
{
    viz_view *v = &a->view;
    if (lesson_key(a, k)) return;
    if (fork_key(a, k)) return;
    if (k == SDLK_e && (SDL_GetModState() & KMOD_SHIFT)) k = 'E';
    switch (k) {
    case 'E':   /* the caption history; up / down scroll it */
        v->history = !v->history;
        v->history_scroll = 0;
        a->dirty = 1;
        break;
    case SDLK_e:
        v->captions = viz_captions_on(a->src, v) ? -1 : 1;
        a->dirty = 1;
        break;
    case SDLK_UP: case SDLK_DOWN:
        if (v->history) {
            v->history_scroll += k == SDLK_UP ? 1 : -1;
            if (v->history_scroll < 0) v->history_scroll = 0;
            a->dirty = 1;
        }
        break;
    case SDLK_SPACE:
        if (!a->playing && !viz_source_is_live(a->src) && v->t >= t_end(a)) set_time(a, 0);
        pause_view(a, a->playing);
        break;
    case SDLK_LEFT: case SDLK_RIGHT: case SDLK_COMMA: case SDLK_PERIOD: {
        int dir = k == SDLK_LEFT || k == SDLK_COMMA ? -1 : 1;
        pause_view(a, 1);
        set_time(a, viz_source_seek_event(a->src, v->t, dir, k == SDLK_COMMA || k == SDLK_PERIOD));
        break;
    }
    case SDLK_LEFTBRACKET: case SDLK_RIGHTBRACKET:
        v->speed = next_speed(v->speed, k == SDLK_RIGHTBRACKET);
        a->dirty = 1;
        break;
    case SDLK_p: v->placement = !v->placement; a->dirty = 1; break;
    case SDLK_h: v->help = !v->help; a->dirty = 1; break;
    case SDLK_t: v->compare_by_step = !v->compare_by_step; a->dirty = 1; break;
    case SDLK_s: save_frame(a); break;
    case SDLK_f: fork_open(a); break;
    case SDLK_F11:
        a->fullscreen = !a->fullscreen;
        SDL_SetWindowFullscreen(a->win, a->fullscreen ? SDL_WINDOW_FULLSCREEN_DESKTOP : 0);
        a->dirty = 1;
        break;
    case SDLK_HOME: pause_view(a, 1); set_time(a, 0); break;
    case SDLK_c: case SDLK_END:
        if (viz_source_is_live(a->src)) {
            a->following = 1;
            pause_view(a, 0);
            a->following = 1;
        } else {
            set_time(a, t_end(a));
        }
        break;
    case SDLK_ESCAPE:   /* closes the help card or the inspector first */
        if (v->help || v->sel.kind != VIZ_SEL_NONE) {
            v->help = 0;
            v->sel.kind = VIZ_SEL_NONE;
            a->dirty = 1;
            break;
        }
        a->quit = 1;
        break;
    case SDLK_q: a->quit = 1; break;
    default:
        break;
    }
}

static void on_mouse(app *a, const SDL_Event *ev)
{
    int ww, wh;
    SDL_GetWindowSize(a->win, &ww, &wh);
    double sx = ww > 0 ? (double)a->tex_w / ww : 1, sy = wh > 0 ? (double)a->tex_h / wh : 1;
    double x = (ev->type == SDL_MOUSEMOTION ? ev->motion.x : ev->button.x) * sx;
    double y = (ev->type == SDL_MOUSEMOTION ? ev->motion.y : ev->button.y) * sy;
    if (ev->type == SDL_MOUSEBUTTONUP) {
        a->dragging = 0;
        return;
    }
    int64_t t = viz_scrub_time(a->src, &a->view, x, a->dragging ? a->view.height - 4 : y);
    if (ev->type == SDL_MOUSEMOTION) {
        if (a->dragging && t >= 0) set_time(a, t);
        return;
    }
    if (t < 0 && viz_lesson_bar_hit(a->src, &a->view, x, y)) {   /* the caption bar: history */
        a->view.history = !a->view.history;
        a->view.history_scroll = 0;
        a->dirty = 1;
        return;
    }
    if (t >= 0) {       /* press on the timeline: scrub */
        a->dragging = 1;
        if (viz_source_is_live(a->src)) a->following = 0, a->view.behind_live = 1;
        set_time(a, t);
        return;
    }
    viz_hit(a->src, &a->view, x, y, &a->view.sel);
    if (a->view.sel.kind != VIZ_SEL_NONE && !viz_source_is_live(a->src)) pause_view(a, 1);
    a->dirty = 1;
}

/* Script tokens: key names, "wait:MS", "click:X:Y" (window coordinates). */
static void script_step(app *a)
{
    if (!a->script || !a->script[a->script_pos] || dp_now_ns() < a->script_next_ns) return;
    const char *p = a->script + a->script_pos;
    size_t n = strcspn(p, ",");
    char tok[64];
    snprintf(tok, sizeof tok, "%.*s", (int)(n < 63 ? n : 63), p);
    a->script_pos += n + (p[n] == ',');
    uint64_t gap = 150000000ull;
    static const struct { const char *name; SDL_Keycode k; } names[] = {
        {"space", SDLK_SPACE}, {"left", SDLK_LEFT}, {"right", SDLK_RIGHT}, {"comma", SDLK_COMMA},
        {"period", SDLK_PERIOD}, {"[", SDLK_LEFTBRACKET}, {"]", SDLK_RIGHTBRACKET},
        {"home", SDLK_HOME}, {"end", SDLK_END}, {"esc", SDLK_ESCAPE}, {"up", SDLK_UP},
        {"down", SDLK_DOWN}, {"enter", SDLK_RETURN}, {"tab", SDLK_TAB}, {"f11", SDLK_F11},
    };
    SDL_Event ev;
    memset(&ev, 0, sizeof ev);
    int x, y;
    if (!strncmp(tok, "wait:", 5)) {
        gap = (uint64_t)atoi(tok + 5) * 1000000ull;
    } else if (sscanf(tok, "click:%d:%d", &x, &y) == 2) {
        ev.type = SDL_MOUSEBUTTONDOWN;
        ev.button.button = SDL_BUTTON_LEFT;
        ev.button.x = x;
        ev.button.y = y;
        SDL_PushEvent(&ev);
        ev.type = SDL_MOUSEBUTTONUP;
        SDL_PushEvent(&ev);
    } else {
        ev.type = SDL_KEYDOWN;
        ev.key.keysym.sym = strlen(tok) == 1 ? (SDL_Keycode)tok[0] : SDLK_UNKNOWN;
        for (size_t i = 0; i < DP_ARRAY_LEN(names); i++)
            if (!strcmp(tok, names[i].name)) ev.key.keysym.sym = names[i].k;
        if (ev.key.keysym.sym == SDLK_UNKNOWN) fprintf(stderr, "downpour: view: script: unknown key '%s'\n", tok);
        else SDL_PushEvent(&ev);
    }
    a->script_next_ns = dp_now_ns() + gap;
}

static void input(app *a)
{
    SDL_Event ev;
    while (SDL_PollEvent(&ev)) {
        switch (ev.type) {
        case SDL_QUIT: a->quit = 1; break;
        case SDL_KEYDOWN: on_key(a, ev.key.keysym.sym); break;
        case SDL_MOUSEBUTTONDOWN: case SDL_MOUSEBUTTONUP: on_mouse(a, &ev); break;
        case SDL_MOUSEMOTION: if (a->dragging) on_mouse(a, &ev); break;
        case SDL_WINDOWEVENT: a->dirty = 1; break;
        default: break;
        }
    }
    script_step(a);
}

/* ---- update -------------------------------------------------------------------------- */
/* Playback moved the view from t_old: stop at the first lesson pause or question crossed.
 * A live run is not paused (training never waits on the viewer): the picture freezes. */
static void lesson_stops(app *a, int64_t t_old)
{
    viz_lesson_stop st;
    if (a->view.question || a->view.lesson_pause || !viz_lesson_next_stop(a->src, t_old, a->view.t, &st)) return;
    pause_view(a, 1);
    a->view.t = st.t;
    a->view.behind_live = a->view.live;
    if (st.kind == VIZ_STOP_QUESTION) a->view.question = st.index + 1;
    else a->view.lesson_pause = 1;
    a->dirty = 1;
}

static void update(app *a)
{
    int64_t t_old = a->view.t;
    uint64_t now = dp_now_ns();
    double dt = (double)(now - a->last_ns);
    a->last_ns = now;
    if (viz_source_is_live(a->src)) {
        char err[DP_ERRLEN];
        int64_t before = viz_source_t1(a->src);
        int rc = viz_source_pump(a->src, err);
        if (rc == DP_ECLOSED && !strstr(a->toast, "hub")) {
            set_toast(a, "the hub closed the stream: showing what was received");
            a->toast_until_ns = UINT64_MAX;
        } else if (rc < 0 && rc != DP_ECLOSED) {
            set_toast(a, err);
        }
        if (viz_source_t1(a->src) != before) {
            a->live_anchor_t = viz_source_t1(a->src);
            a->live_anchor_ns = now;
        }
        if (a->following) {
            int64_t ext = (int64_t)(now - a->live_anchor_ns);
            if (ext > 500000000) ext = 500000000;
            int64_t t = a->live_anchor_t + ext - 60000000;
            a->view.t = t > 0 ? t : 0;
            a->dirty = 1;
        } else if (a->playing) {
            a->view.t += (int64_t)(dt * a->view.speed);
            if (a->view.t >= a->live_anchor_t) a->following = 1;
            a->dirty = 1;
        }
        a->view.behind_live = !a->following;
        a->view.live = 1;
    } else if (a->playing) {
        int64_t t = a->view.t + (int64_t)(dt * a->view.speed);
        if (t >= t_end(a)) {
            t = t_end(a);
            pause_view(a, 1);
        }
        set_time(a, t);
    }
    if (a->playing || a->following) lesson_stops(a, t_old);
    if (a->toast_until_ns && now > a->toast_until_ns) {
        a->toast_until_ns = 0;
        a->toast[0] = 0;
        a->dirty = 1;
    }
}

/* ---- draw ---------------------------------------------------------------------------- */
static int draw(app *a)
{
    int w, h, ww, wh;
    SDL_GetRendererOutputSize(a->ren, &w, &h);
    SDL_GetWindowSize(a->win, &ww, &wh);
    if (w < 64 || h < 64) return 0;
    if (!a->tex || w != a->tex_w || h != a->tex_h) {
        if (a->tex) SDL_DestroyTexture(a->tex);
        a->tex = SDL_CreateTexture(a->ren, SDL_PIXELFORMAT_ARGB8888, SDL_TEXTUREACCESS_STREAMING, w, h);
        if (!a->tex) {
            fprintf(stderr, "downpour: view: texture %dx%d: %s\n", w, h, SDL_GetError());
            return -1;
        }
        a->tex_w = w;
        a->tex_h = h;
    }
    a->view.width = w;
    a->view.height = h;
    a->view.dpr = ww > 0 ? fmax(1, (double)w / ww) : 1;
    a->view.toast = shown_message(a);
    void *pixels;
    int pitch;
    if (SDL_LockTexture(a->tex, NULL, &pixels, &pitch)) return -1;
    cairo_surface_t *surf = cairo_image_surface_create_for_data(pixels, CAIRO_FORMAT_ARGB32, w, h, pitch);
    cairo_t *cr = cairo_create(surf);
    viz_draw(cr, a->src, &a->view);
    cairo_destroy(cr);
    cairo_surface_flush(surf);
    cairo_surface_destroy(surf);
    SDL_UnlockTexture(a->tex);
    SDL_RenderClear(a->ren);
    SDL_RenderCopy(a->ren, a->tex, NULL, NULL);
    SDL_RenderPresent(a->ren);
    a->dirty = 0;
    return 0;
}


/* ---- the tick hook (view --serve): a front end sharing this process ---------------------- */
/* Hands the view to o->tick once per loop turn; redraws when its note changes. */
static void app_tick(app *a, const viz_app_options *o)
{
    char note[sizeof a->note] = "";
    o->tick(o->tick_ctx, &a->view, note, sizeof note);
    if (strcmp(note, a->note)) {
        snprintf(a->note, sizeof a->note, "%s", note);
        a->dirty = 1;
    }
}

/* A driver that draws nowhere, unless it was asked for by name. */
static int invisible_driver(void)
{
    const char *d = SDL_GetCurrentVideoDriver(), *asked = getenv("SDL_VIDEODRIVER");
    if (!d || (asked && *asked)) return 0;
    return !strcmp(d, "offscreen") || !strcmp(d, "dummy") || !strcmp(d, "evdev");
}

#define NO_DISPLAY "downpour: view: no display: use `downpour render`\n"

/* A trace that cannot be opened is the first thing to hear of, display or not: the
 * display check comes before the (possibly long) read, a missing file before both. */
static int openable(const char *path)
{
    if (!path) return 1;
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "downpour: view: %s: %s\n", path, strerror(errno));
        return 0;
    }
    fclose(f);
    return 1;
}

int viz_app_run(const viz_app_options *o)
{
    /* ---- initialise ---- */
    app a;
    memset(&a, 0, sizeof a);
    a.o = o;
    char err[DP_ERRLEN];
    if (!openable(o->trace) || !openable(o->compare)) return 1;
    if (!dp_have_display()) {   /* before reading anything: say so at once */
        fputs(NO_DISPLAY, stderr);
        return 1;
    }
    if (o->connect) a.src = viz_source_connect(o->connect, 3000, err);
    else if (o->trace) a.src = viz_source_open(o->trace, err);
    else snprintf(err, sizeof err, "nothing to view: give a TRACE or --connect ADDR");
    if (!a.src) {
        fprintf(stderr, "downpour: view: %s\n", err);
        return 1;
    }
    if (o->compare && !(a.cmp = viz_source_open(o->compare, err))) {
        fprintf(stderr, "downpour: view: %s\n", err);
        viz_source_free(a.src);
        return 1;
    }
    if (viz_source_damage(a.src)) fprintf(stderr, "downpour: view: %s\n", viz_source_damage(a.src));
    viz_view_init(&a.view);
    a.view.compare = a.cmp;
    a.view.projector = o->projector;
    a.view.live = viz_source_is_live(a.src);
    a.view.speed = o->speed > 0 ? o->speed : 1;   /* as given: --speed 3 plays at 3x */
    a.following = a.view.live;
    pause_view(&a, o->start_paused);
    a.following = a.view.live && !o->start_paused;
    if (o->at_s >= 0 && !a.view.live) set_time(&a, (int64_t)(o->at_s * 1e9));  /* within the trace */
    else if (!a.view.live) set_time(&a, viz_source_story_start(a.src));  /* skip start-up */
    a.shot_dir = o->screenshot_dir ? o->screenshot_dir : ".";
    a.script = o->script;
    SDL_SetHint(SDL_HINT_VIDEO_X11_NET_WM_BYPASS_COMPOSITOR, "0");
    int init_failed = SDL_Init(SDL_INIT_VIDEO) != 0;
    if (init_failed || invisible_driver()) {
        if (init_failed) {
            fprintf(stderr, "downpour: view: no display (%s): use `downpour render`\n", SDL_GetError());
        } else {
            fputs(NO_DISPLAY, stderr);
            SDL_Quit();
        }
        viz_source_free(a.src);
        viz_source_free(a.cmp);
        return 1;
    }
    a.win = SDL_CreateWindow("Downpour", SDL_WINDOWPOS_CENTERED, SDL_WINDOWPOS_CENTERED,
                             o->width, o->height, SDL_WINDOW_RESIZABLE | SDL_WINDOW_ALLOW_HIGHDPI);
    if (a.win) a.ren = SDL_CreateRenderer(a.win, -1, 0);
    if (a.win && !a.ren) a.ren = SDL_CreateRenderer(a.win, -1, SDL_RENDERER_SOFTWARE);
    int rc = 0;
    if (!a.win || !a.ren) {
        fprintf(stderr, "downpour: view: window: %s\n", SDL_GetError());
        rc = 1;
        a.quit = 1;
    }
    a.last_ns = dp_now_ns();
    a.dirty = 1;
    /* ---- loop { input, update, draw } ---- */
    while (!a.quit) {
        uint64_t start = dp_now_ns();
        input(&a);
        update(&a);
        if (o->tick) app_tick(&a, o);
        if (a.dirty && draw(&a)) {
            rc = 1;
            break;
        }
        fork_drawn(&a);
        uint64_t spent = dp_now_ns() - start, frame = a.playing || a.dragging ? 16000000ull : 30000000ull;
        if (spent < frame) SDL_Delay((uint32_t)((frame - spent) / 1000000));
    }
    /* ---- tear down ---- */
    if (a.tex) SDL_DestroyTexture(a.tex);
    if (a.ren) SDL_DestroyRenderer(a.ren);
    if (a.win) SDL_DestroyWindow(a.win);
    SDL_Quit();
    viz_source_free(a.fork_src);
    viz_source_free(a.cmp);
    viz_source_free(a.src);
    return rc;
}
