/* answers.c — the lesson's questions on the page and the students' answers. The questions
 * are copied from the source once, before any thread starts, so HTTP threads read them
 * without the source (which is the render thread's). Each page id answers a question once;
 * everything the browser sends is parsed here and checked against the copied questions
 * (the question a number in range, the choice a letter or number in range, the id from a
 * short alphabet): nothing from the request sizes an allocation. Counts live under
 * web_server.mu; the teacher's terminal gets one line per change, at most one a second
 * (web_answers_log, on the render thread), and the window a note (view --serve). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dp.h"
#include "web/internal.h"

void web_answers_load(web_server *w)
{
    int n = viz_lesson_question_count(w->src);
    w->qs = n > 0 ? xcalloc((size_t)n, sizeof *w->qs) : NULL;
    for (int i = 0; i < n; i++) {
        viz_question q;
        if (viz_lesson_question(w->src, i, &q)) break;
        web_question *d = &w->qs[w->n_qs++];
        d->step = q.step;
        d->text = xstrdup(q.text ? q.text : "");
        d->explain = q.explain ? xstrdup(q.explain) : NULL;
        d->n_choices = q.n_choices;
        for (int k = 0; k < q.n_choices; k++) d->choices[k] = xstrdup(q.choices[k] ? q.choices[k] : "");
        d->answer = q.answer;
    }
}

void web_answers_free(web_server *w)
{
    for (int i = 0; i < w->n_qs; i++) {
        web_question *q = &w->qs[i];
        free(q->text);
        free(q->explain);
        for (int k = 0; k < q->n_choices; k++) free(q->choices[k]);
        free(q->answers);
    }
    free(w->qs);
    w->qs = NULL;
    w->n_qs = 0;
}

int web_question_at(const web_server *w, int64_t gstep)
{
    int best = -1;
    for (int i = 0; i < w->n_qs; i++)
        if (w->qs[i].step <= gstep && (best < 0 || w->qs[i].step >= w->qs[best].step)) best = i;
    return best;
}

int web_id_ok(const char *s)
{
    size_t n = 0;
    for (; s && s[n]; n++) {
        char c = s[n];
        if (n >= WEB_ID_MAX || !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                                 (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.'))
            return 0;
    }
    return n > 0;
}

/* "A".."F" or "0".."5" (also "a".."f") -> the index, or -1. */
static int parse_choice(const char *s, int n_choices)
{
    if (!s || !s[0] || s[1]) return -1;
    int c = s[0] >= 'A' && s[0] <= 'Z' ? s[0] - 'A' : s[0] >= 'a' && s[0] <= 'z' ? s[0] - 'a'
          : s[0] >= '0' && s[0] <= '9' ? s[0] - '0' : -1;
    return c >= 0 && c < n_choices ? c : -1;
}

static void dump(json_t *j, char *buf, size_t n)
{
    char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
    snprintf(buf, n, "%s", s ? s : "{}");
    free(s);
    json_decref(j);
}

static void error_json(char *buf, size_t n, const char *msg)
{
    dump(json_pack("{s:s}", "error", msg), buf, n);
}

/* The counts of question i as a JSON array; mu held. */
static json_t *counts_of(const web_question *q)
{
    json_t *a = json_array();
    for (int k = 0; k < q->n_choices; k++) json_array_append_new(a, json_integer((json_int_t)q->counts[k]));
    return a;
}

static json_t *choices_of(const web_question *q)
{
    json_t *a = json_array();
    for (int k = 0; k < q->n_choices; k++) json_array_append_new(a, json_string(q->choices[k]));
    return a;
}

unsigned web_answer_submit(web_server *w, const char *id, const char *qs, const char *choice,
                           char *buf, size_t n)
{
    long long qi;
    if (!w->n_qs) {
        error_json(buf, n, "this run has no lesson questions");
        return 400;
    }
    if (!web_id_ok(id)) {
        error_json(buf, n, "id must be 1 to 47 letters, digits, '_', '-' or '.'");
        return 400;
    }
    if (!qs || dp_parse_int(qs, &qi) || qi < 0 || qi >= w->n_qs) {
        char msg[96];
        snprintf(msg, sizeof msg, "unknown question: q must be 0..%d", w->n_qs - 1);
        error_json(buf, n, msg);
        return 400;
    }
    web_question *q = &w->qs[qi];
    int c = parse_choice(choice, q->n_choices);
    if (c < 0) {
        char msg[96];
        snprintf(msg, sizeof msg, "unknown choice: question %lld has choices A..%c", qi,
                 'A' + q->n_choices - 1);
        error_json(buf, n, msg);
        return 400;
    }
    unsigned status = 200;
    pthread_mutex_lock(&w->mu);
    int prev = -1;
    for (int i = 0; i < q->n_answers && prev < 0; i++)
        if (!strcmp(q->answers[i].id, id)) prev = q->answers[i].choice;
    if (prev >= 0) {
        status = 409;
    } else if (q->n_answers >= WEB_MAX_ANSWERS) {
        status = 503;
    } else {
        if (!q->answers) q->answers = xcalloc(WEB_MAX_ANSWERS, sizeof *q->answers);
        web_answer *a = &q->answers[q->n_answers++];
        snprintf(a->id, sizeof a->id, "%s", id);
        a->choice = c;
        q->counts[c]++;
        q->changes++;
        prev = c;
    }
    json_t *j;
    if (status == 503) {
        j = json_pack("{s:s}", "error", "too many answers to this question");
    } else {
        j = json_pack("{s:I, s:i, s:i, s:o, s:I, s:b}", "q", (json_int_t)qi, "choice", prev,
                      "answer", q->answer, "counts", counts_of(q), "answered",
                      (json_int_t)q->n_answers, "again", status == 409);
        if (q->explain) json_object_set_new(j, "explain", json_string(q->explain));
        if (status == 409)
            json_object_set_new(j, "error", json_string("this page has already answered that question"));
    }
    pthread_mutex_unlock(&w->mu);
    dump(j, buf, n);
    return status;
}

void web_answers_json(web_server *w, char *buf, size_t n)
{
    json_t *arr = json_array();
    json_int_t total = 0;
    pthread_mutex_lock(&w->mu);
    for (int i = 0; i < w->n_qs; i++) {
        const web_question *q = &w->qs[i];
        json_array_append_new(arr, json_pack("{s:i, s:I, s:o, s:I}", "q", i, "step", (json_int_t)q->step,
                                             "counts", counts_of(q), "answered", (json_int_t)q->n_answers));
        total += q->n_answers;
    }
    pthread_mutex_unlock(&w->mu);
    dump(json_pack("{s:o, s:I}", "questions", arr, "answers", total), buf, n);
}

void web_lesson_json(const web_server *w, char *buf, size_t n)
{
    json_t *arr = json_array();
    for (int i = 0; i < w->n_qs; i++) {
        const web_question *q = &w->qs[i];
        json_array_append_new(arr, json_pack("{s:i, s:I, s:s, s:o}", "q", i, "step", (json_int_t)q->step,
                                             "question", q->text, "choices", choices_of(q)));
    }
    dump(json_pack("{s:s, s:o}", "title", w->title ? w->title : "", "questions", arr), buf, n);
}

/* "question 2 (step 150): 8 answered: A 3, B 5, C 0" into buf; mu held. */
static void counts_line(const web_question *q, int i, char *buf, size_t n)
{
    int len = snprintf(buf, n, "question %d (step %lld): %d answered:", i + 1, (long long)q->step,
                       q->n_answers);
    for (int k = 0; k < q->n_choices && len >= 0 && (size_t)len < n; k++)
        len += snprintf(buf + len, n - (size_t)len, "%s %c %llu", k ? "," : "", 'A' + k,
                        (unsigned long long)q->counts[k]);
}

void web_answers_log(web_server *w, uint64_t now, int force)
{
    if (!w->n_qs || (!force && now - w->answers_logged_ns < WEB_ANSWER_LOG_NS)) return;
    char lines[8][sizeof w->note];
    int n_lines = 0;
    pthread_mutex_lock(&w->mu);
    for (int i = 0; i < w->n_qs; i++) {
        web_question *q = &w->qs[i];
        if (q->changes == q->logged) continue;
        q->logged = q->changes;
        counts_line(q, i, w->note, sizeof w->note);   /* the window shows the latest change */
        if (n_lines < 8) snprintf(lines[n_lines++], sizeof lines[0], "%s", w->note);
    }
    pthread_mutex_unlock(&w->mu);
    if (!n_lines) return;
    w->answers_logged_ns = now;
    for (int i = 0; i < n_lines; i++) fprintf(stderr, "web: answers: %s\n", lines[i]);
    fflush(stderr);
}
