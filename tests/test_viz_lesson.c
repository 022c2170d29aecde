/* test_viz_lesson.c — a viewer that explains (viz/lesson.c), on a hand-made in-memory run
 * whose metadata carries a lesson (under "config", as the simulator writes it): global
 * steps 2..12 at 10 ms apart and nothing else, so no rule caption competes (a second run
 * from step 1 has the caption engine's first-step caption). Expectations
 * come from the fixture (the lesson's steps, its answer) and the literal colour key
 * (vizpix.h), positions from the layout's rectangles:
 *   - the caption bar (a white panel) is drawn by default with a lesson, not without one,
 *     and not when turned off;
 *   - it shows text (ink pixels) at the lesson caption's step and none the step before;
 *   - the caption engine's caption shows before it, and the lesson's takes precedence at
 *     its step (the same pixels as in the run without the engine's caption);
 *   - the question's stop is found when playback crosses its step, not before;
 *   - the question card is a large white card with text; once revealed the right choice
 *     is filled in the key's green and the wrong ones are not; before, none is. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/dp.h"
#include "viz/internal.h"
#include "vizpix.h"

extern void FcFini(void) __attribute__((weak));

#define MS 1000000
#define CAPTION_STEP 5
#define QUESTION_STEP 8
#define ANSWER 1   /* "async" */

static const char *lesson_meta =
    "{\"engine\":\"sim\",\"config\":{\"lesson\":{\"title\":\"t\",\"number\":1,"
    "\"captions\":[{\"step\":5,\"text\":\"Five global steps: every push is one.\"}],"
    "\"pauses\":[3],"
    "\"questions\":[{\"step\":8,\"question\":\"Which mode never waits at a barrier?\","
    "\"choices\":[\"sync\",\"async\",\"neither\"],\"answer\":1}]}}}";

/* Global step k at k * 10 ms, k = first..12, from the chief. */
static viz_source *run_from(evt_strtab *strs, const char *meta, int first)
{
    viz_source *s = viz_source_new_mem(strs, meta);
    for (int k = first; k <= 12; k++) {
        evt_record e;
        evt_init(&e, EVT_GLOBAL_STEP, EVT_JOB_WORKER, 0);
        e.t = (int64_t)k * 10 * MS;
        e.step = k;
        viz_source_append(s, &e);
    }
    return s;
}

static viz_source *run(evt_strtab *strs, const char *meta)
{
    return run_from(strs, meta, 2);
}

/* Time within global step k (k * 10 ms + 5 ms). */
static int64_t at_step(int k)
{
    return (int64_t)k * 10 * MS + 5 * MS;
}

/* Pixels of r darker than mid-grey in every channel: text, not panel or page. */
static int ink(cairo_surface_t *img, viz_rect r)
{
    int n = 0;
    for (int y = (int)r.y; y < r.y + r.h; y++)
        for (int x = (int)r.x; x < r.x + r.w; x++) {
            viz_rgb p = pixel(img, x, y);
            n += p.r >= 0 && p.r < 0.5 && p.g < 0.5 && p.b < 0.5;
        }
    return n;
}

static viz_rect inset(viz_rect r, double d)
{
    return (viz_rect){r.x + d, r.y + d, r.w - 2 * d, r.h - 2 * d};
}

static void test_caption_bar(void)
{
    evt_strtab *strs = evt_strtab_new();
    viz_source *s = run(strs, lesson_meta), *plain = run(strs, "{\"engine\":\"sim\"}");
    viz_view v;
    viz_view_init(&v);
    viz_ctx c;
    /* the caption's step: a white bar with text in it */
    v.t = at_step(CAPTION_STEP);
    cairo_surface_t *img = frame_open(s, &v, &c);
    viz_rect bar = viz_lesson_bar_rect(&c.lay), text = inset(bar, 4);
    double area = bar.w * bar.h;
    int white = count_color(img, bar, KEY_WHITE, FLAT_TOL), txt = ink(img, text);
    CHECK_MSG(white > 0.6 * area, "caption bar at step %d: %d of %.0f px white (> 60%%)", CAPTION_STEP, white, area);
    CHECK_MSG(txt > 100, "caption bar at step %d: %d ink px of text (> 100)", CAPTION_STEP, txt);
    frame_close(&c, img);
    /* the step before: the bar, empty */
    v.t = at_step(CAPTION_STEP - 1);
    img = frame_open(s, &v, &c);
    white = count_color(img, bar, KEY_WHITE, FLAT_TOL);
    txt = ink(img, text);
    CHECK_MSG(white > 0.6 * area, "caption bar at step %d (before the caption) is drawn: %d px white", CAPTION_STEP - 1, white);
    CHECK_MSG(txt < 5, "caption bar at step %d (before the caption): %d ink px (< 5: no text)", CAPTION_STEP - 1, txt);
    frame_close(&c, img);
    /* turned off (`e`): no bar */
    v.t = at_step(CAPTION_STEP);
    v.captions = -1;
    img = frame_open(s, &v, &c);
    white = count_color(img, bar, KEY_WHITE, FLAT_TOL);
    CHECK_MSG(white < 0.1 * area, "captions off: %d px white where the bar was (< 10%%)", white);
    frame_close(&c, img);
    /* no lesson in the metadata: off by default */
    v.captions = 0;
    img = frame_open(plain, &v, &c);
    white = count_color(img, bar, KEY_WHITE, FLAT_TOL);
    CHECK_MSG(white < 0.1 * area, "no lesson: %d px white where the bar would be (< 10%%)", white);
    frame_close(&c, img);
    /* the engine's caption (step 1) shows before the lesson's step and yields at it */
    viz_source *rules = run_from(strs, lesson_meta, 1);
    for (int k = CAPTION_STEP - 1; k <= CAPTION_STEP; k++) {
        v.t = at_step(k);
        cairo_surface_t *a = viz_render_image(s, &v), *b = viz_render_image(rules, &v);
        int d = differing(a, b, text, FLAT_TOL), t_rules = ink(b, text);
        if (k < CAPTION_STEP) {
            CHECK_MSG(t_rules > 100, "step %d: the engine's first-step caption shows: %d ink px (> 100)", k, t_rules);
        } else {
            CHECK_MSG(d == 0, "step %d: the lesson's caption takes precedence: %d px differ from the run "
                      "without the engine's caption (0)", k, d);
        }
        cairo_surface_destroy(a);
        cairo_surface_destroy(b);
    }
    viz_source_free(rules);
    viz_source_free(plain);
    viz_source_free(s);
    evt_strtab_free(strs);
}

static void test_stops(void)
{
    evt_strtab *strs = evt_strtab_new();
    viz_source *s = run(strs, lesson_meta);
    viz_lesson_stop st;
    int found = viz_lesson_next_stop(s, at_step(QUESTION_STEP - 2), at_step(QUESTION_STEP + 1), &st);
    CHECK_MSG(found && st.kind == VIZ_STOP_QUESTION && st.index == 0 && st.step == QUESTION_STEP,
              "playing across step %d stops for question 0 at step %d (got kind %d step %lld)", QUESTION_STEP,
              QUESTION_STEP, st.kind, (long long)st.step);
    CHECK_MSG(st.t == (int64_t)QUESTION_STEP * 10 * MS, "the question's stop is at %d ms, when step %d is reached (got %lld ns)",
              QUESTION_STEP * 10, QUESTION_STEP, (long long)st.t);
    found = viz_lesson_next_stop(s, at_step(3), at_step(QUESTION_STEP - 1), &st);
    CHECK_MSG(!found, "no stop between steps 3 and %d (got kind %d step %lld)", QUESTION_STEP - 1, st.kind,
              (long long)st.step);
    found = viz_lesson_next_stop(s, at_step(1), at_step(QUESTION_STEP + 1), &st);
    CHECK_MSG(found && st.kind == VIZ_STOP_PAUSE && st.step == 3,
              "from step 1 the first stop is the pause at step 3 (got kind %d step %lld)", st.kind, (long long)st.step);
    viz_source_free(s);
    evt_strtab_free(strs);
}

static void test_question_card(void)
{
    evt_strtab *strs = evt_strtab_new();
    viz_source *s = run(strs, lesson_meta);
    viz_view v;
    viz_view_init(&v);
    v.t = (int64_t)QUESTION_STEP * 10 * MS;
    viz_ctx c;
    viz_rect card, ch[3];
    int answer = -1;
    CHECK_MSG(viz_lesson_choices(s, 0, &answer) == 3 && answer == ANSWER, "question 0: 3 choices, answer %d (got %d)",
              ANSWER, answer);
    /* without the question: no card */
    cairo_surface_t *img = frame_open(s, &v, &c);
    viz_lesson_card_layout(&c.lay, 3, &card, ch);
    double area = card.w * card.h;
    CHECK_MSG(card.w * card.h > 0.25 * c.lay.cluster.w * c.lay.cluster.h,
              "the card is large: %.0f px, over a quarter of the cluster", area);
    int white = count_color(img, card, KEY_WHITE, FLAT_TOL);
    CHECK_MSG(white < 0.3 * area, "no question shown: %d of %.0f px white (< 30%%)", white, area);
    frame_close(&c, img);
    /* the question: a white card with text, no choice highlighted */
    v.question = 1;
    img = frame_open(s, &v, &c);
    white = count_color(img, card, KEY_WHITE, FLAT_TOL);
    int txt = ink(img, card);
    CHECK_MSG(white > 0.6 * area, "question card: %d of %.0f px white (> 60%%)", white, area);
    CHECK_MSG(txt > 400, "question card: %d ink px of text (> 400)", txt);
    for (int i = 0; i < 3; i++) {
        int g = count_color(img, ch[i], KEY_COMPUTE, FLAT_TOL);
        CHECK_MSG(g < 0.01 * ch[i].w * ch[i].h, "before the answer choice %c is not green: %d px", 'A' + i, g);
    }
    frame_close(&c, img);
    /* revealed (the wrong choice C picked): B green, A and C not */
    v.revealed = 1;
    v.picked = 3;
    img = frame_open(s, &v, &c);
    for (int i = 0; i < 3; i++) {
        int g = count_color(img, ch[i], KEY_COMPUTE, FLAT_TOL);
        double a = ch[i].w * ch[i].h;
        if (i == ANSWER) CHECK_MSG(g > 0.5 * a, "revealed: the answer %c is green over %d of %.0f px (> 50%%)", 'A' + i, g, a);
        else CHECK_MSG(g < 0.01 * a, "revealed: wrong choice %c is not green: %d px", 'A' + i, g);
    }
    int verm = count_color(img, ch[2], KEY_VERMILLION, FLAT_TOL);
    CHECK_MSG(verm > 50, "the wrong pick C is outlined in vermillion: %d px (> 50)", verm);
    frame_close(&c, img);
    /* every line the card writes, from the question to its footer (the choices and the
     * explanation between), lies inside the card, and none runs into the footer */
    static vizpix_text log;
    img = vizpix_draw_logged(s, &v, &log);
    int i0 = -1, i1 = -1;
    for (int i = 0; i < log.n_at; i++) {
        if (i0 < 0 && !strncmp(log.at[i].text, "Which mode", 10)) i0 = i;
        if (!strcmp(log.at[i].text, "space to go on")) i1 = i;
    }
    int outside = 0, into_footer = 0;
    for (int i = i0; i0 >= 0 && i <= i1; i++) {
        viz_rect a = log.at[i].box, f = log.at[i1].box;
        outside += !vizpix_inside(a, card);
        into_footer += i < i1 && a.y + a.h > f.y + 0.5 && a.y < f.y + f.h;
    }
    CHECK_MSG(i0 >= 0 && i1 > i0 + 6, "revealed: the card writes its question, 3 choices and footer (lines %d to %d)", i0, i1);
    CHECK_MSG(outside == 0 && into_footer == 0, "... all inside the card (%d outside), none into the footer (%d)", outside,
              into_footer);
    cairo_surface_destroy(img);
    viz_source_free(s);
    evt_strtab_free(strs);
}

/* A live run has no trace metadata: its lesson comes in CLUSTER_START's config JSON (the
 * launcher's), and captions and questions follow as for a replay. */
static void test_live_lesson(void)
{
    evt_strtab *strs = evt_strtab_new();
    viz_source *s = viz_source_new_mem(strs, NULL);
    CHECK_MSG(!viz_lesson_present(s), "a live source starts without a lesson");
    const char *cfg = strstr(lesson_meta, "{\"lesson\"");   /* {"lesson": ...} of the config */
    char json[1024];
    snprintf(json, sizeof json, "{\"mode\":\"async\",%s", cfg + 1);
    json[strlen(json) - 1] = 0;                             /* the top's '}': the config's ends ours */
    evt_record e;
    evt_init(&e, EVT_CLUSTER_START, EVT_JOB_CLIENT, 0);
    e.t = MS;
    e.str = evt_strtab_intern(strs, json);
    viz_source_append(s, &e);
    CHECK_MSG(viz_lesson_present(s), "CLUSTER_START's config brings the lesson (%s)", json);
    for (int k = 2; k <= 12; k++) {
        evt_init(&e, EVT_GLOBAL_STEP, EVT_JOB_WORKER, 0);
        e.t = (int64_t)k * 10 * MS;
        e.step = k;
        viz_source_append(s, &e);
    }
    const char *cap = viz_lesson_caption(s, at_step(CAPTION_STEP), CAPTION_STEP);
    CHECK_MSG(cap && strcmp(cap, "Five global steps: every push is one.") == 0, "live caption at step %d: %s",
              CAPTION_STEP, cap ? cap : "(none)");
    int answer = -1;
    CHECK_MSG(viz_lesson_choices(s, 0, &answer) == 3 && answer == ANSWER, "live question: 3 choices, answer %d",
              answer);
    viz_source_free(s);
    evt_strtab_free(strs);
}

int main(void)
{
    test_caption_bar();
    test_stops();
    test_question_card();
    test_live_lesson();
    cairo_debug_reset_static_data();
    if (FcFini) FcFini();
    return CHECK_DONE();
}
