/* scenario.c — scenario files (see scenario.h). inih calls back once per key without a
 * line number, so the text is fed to it line by line through a reader that counts: the
 * handler runs on the line the reader handed out last. The first error wins; the rest
 * of the file is still read by inih, but nothing more is recorded. */
#include "cluster/scenario.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include <ini.h>
#include <jansson.h>

#include "common/dp.h"
#include "common/units.h"

typedef struct parse_ctx {
    scenario *s;
    const char *text, *pos;
    int line;                       /* of the line handed to inih last */
    int section_line;               /* of the last [section] line */
    int line_indented;              /* that line starts with blanks (a continuation) */
    char last_section[64], last_key[64];
    int have_scenario, have_engine;
    char *err;
    int failed, failed_line;
} parse_ctx;

/* Feeds inih one line at a time (fgets semantics), counting lines. */
static char *reader(char *str, int num, void *stream)
{
    parse_ctx *p = stream;
    if (!*p->pos) return NULL;
    const char *nl = strchr(p->pos, '\n');
    size_t len = nl ? (size_t)(nl - p->pos) + 1 : strlen(p->pos);
    if (len > (size_t)num - 1) len = (size_t)num - 1;   /* lines are checked for length first */
    memcpy(str, p->pos, len);
    str[len] = 0;
    p->line_indented = (*p->pos == ' ' || *p->pos == '\t');
    p->pos += len;
    p->line++;
    const char *c = str;
    while (*c == ' ' || *c == '\t') c++;
    if (*c == '[') p->section_line = p->line;
    return str;
}

static int fail(parse_ctx *p, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Records the first error; returns 1 so that inih's own result stays about syntax. */
static int fail(parse_ctx *p, int line, const char *fmt, ...)
{
    if (p->failed) return 1;
    p->failed = 1;
    p->failed_line = line;
    char msg[DP_ERRLEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    dp_fail(p->err, DP_EINVAL, "%s:%d: %s", p->s->path, line, msg);
    return 1;
}

static int known_section(const char *name)
{
    if (!strcmp(name, "compare") || !strcmp(name, "lesson")) return 1;
    for (int i = 0; run_sections[i]; i++)
        if (!strcmp(run_sections[i], name)) return 1;
    return 0;
}

/* "ps, workers, compute": the keys of a section. */
static void section_keys(const char *section, char *buf, size_t n)
{
    size_t nk, o = 0;
    const run_key *keys = run_keys(&nk);
    buf[0] = 0;
    if (!strcmp(section, "scenario")) o = (size_t)snprintf(buf, n, "title, description, engine");
    if (!strcmp(section, "compare")) {
        snprintf(buf, n, "vary, label");
        return;
    }
    for (size_t i = 0; i < nk && o + 2 < n; i++)
        if (keys[i].section && !strcmp(keys[i].section, section))
            o += (size_t)snprintf(buf + o, n - o, "%s%s", o ? ", " : "", keys[i].name);
}

static void copy_text(char *dst, size_t n, const char *src)
{
    snprintf(dst, n, "%s", src);
}

/* [compare] vary = KEY: V1, V2, ... — or KEY: V1 | V2 | ... when a value holds commas
 * (vary = fail: worker:1@step=40,restart=1s | ps:1@step=200,restart=500ms). */
static int parse_vary(parse_ctx *p, const char *value)
{
    scenario *s = p->s;
    if (s->n_vary == SCN_MAX_VARY)
        return fail(p, p->line, "at most %d vary lines in [compare]", SCN_MAX_VARY);
    const char *colon = strchr(value, ':');
    if (!colon) return fail(p, p->line, "vary \"%s\" is not KEY: V1, V2, ... (e.g. vary = mode: sync, async)", value);
    char key[64];
    size_t kl = (size_t)(colon - value);
    while (kl && isspace((unsigned char)value[kl - 1])) kl--;
    if (kl == 0 || kl >= sizeof key) return fail(p, p->line, "vary \"%s\" names no key", value);
    memcpy(key, value, kl);
    key[kl] = 0;
    const run_key *k = run_key_find(key);
    if (!k || !k->section || strchr(key, '-')) {
        const run_key *near = run_key_suggest(key, NULL);
        if (near && near->section)
            return fail(p, p->line, "vary: unknown key \"%s\" (did you mean \"%s\"?)", key, near->name);
        return fail(p, p->line, "vary: unknown key \"%s\" (see downpour keys)", key);
    }
    if (!(run_key_engines(k) & s->engine))
        return fail(p, p->line, "vary: \"%s\" is not used by the %s", key,
                    s->engine == RUN_SIM ? "simulator" : "real runtime");
    for (int i = 0; i < s->n_vary; i++)
        if (s->vary[i].key == k) return fail(p, p->line, "vary: \"%s\" is varied twice", key);
    scn_vary *v = &s->vary[s->n_vary];
    memset(v, 0, sizeof *v);
    v->key = k;
    v->line = p->line;
    const char *q = colon + 1;
    char sep = strchr(q, '|') ? '|' : ',';
    while (*q) {
        while (isspace((unsigned char)*q)) q++;
        const char *comma = strchr(q, sep);
        size_t len = comma ? (size_t)(comma - q) : strlen(q);
        while (len && isspace((unsigned char)q[len - 1])) len--;
        if (len == 0) return fail(p, p->line, "vary: an empty value in \"%s\"", value);
        if (v->n_values == SCN_MAX_VALUES)
            return fail(p, p->line, "vary: at most %d values", SCN_MAX_VALUES);
        if (len >= sizeof v->values[0]) return fail(p, p->line, "vary: value \"%.*s\" is too long", (int)len, q);
        memcpy(v->values[v->n_values], q, len);
        v->values[v->n_values][len] = 0;
        char msg[DP_ERRLEN], what[96];
        run_value rv;
        snprintf(what, sizeof what, "vary %s", k->name);
        if (run_value_parse(k, v->values[v->n_values], what, &rv, msg)) return fail(p, p->line, "%s", msg);
        for (int i = 0; i < v->n_values; i++)
            if (!strcmp(v->values[i], v->values[v->n_values]))
                return fail(p, p->line, "vary: \"%s\" is given twice", v->values[i]);
        v->n_values++;
        if (!comma) break;
        q = comma + 1;
    }
    if (v->n_values < 2) return fail(p, p->line, "vary: \"%s\" needs at least two values to compare", value);
    s->n_vary++;
    return 1;
}

/* "at_step.150" -> 150 after the prefix; -1 when name is not prefix + a step. */
static long long step_suffix(const char *name, const char *prefix)
{
    size_t n = strlen(prefix);
    long long v;
    if (strncmp(name, prefix, n) || dp_parse_int(name + n, &v) || v < 0) return -1;
    return v;
}

/* Splits "a | b | c" into at most max trimmed fields of size n each; returns the count,
 * or -1 when a field is empty or too long. */
static int split_bar(const char *value, char *fields, size_t n, int max)
{
    int k = 0;
    const char *p = value;
    for (;;) {
        while (*p == ' ' || *p == '\t') p++;
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        while (len && (p[len - 1] == ' ' || p[len - 1] == '\t')) len--;
        if (len == 0 || len >= n || k == max) return -1;
        memcpy(fields + (size_t)k * n, p, len);
        fields[(size_t)k * n + len] = 0;
        k++;
        if (!bar) return k;
        p = bar + 1;
    }
}

static int parse_lesson(parse_ctx *p, const char *name, const char *value)
{
    scn_lesson *l = &p->s->lesson;
    l->present = 1;
    long long step;
    if (!strcmp(name, "number")) {
        long long v;
        if (dp_parse_int(value, &v) || v < 1 || v > 99) return fail(p, p->line, "number: \"%s\" is not 1..99", value);
        l->number = (int)v;
    } else if (!strcmp(name, "duration")) {
        char msg[DP_ERRLEN];
        if (dp_parse_time(value, "duration", &l->duration_s, msg)) return fail(p, p->line, "%s", msg);
    } else if ((step = step_suffix(name, "at_step.")) >= 0) {
        if (l->n_captions == SCN_MAX_LESSON) return fail(p, p->line, "at most %d captions", SCN_MAX_LESSON);
        scn_caption *c = &l->captions[l->n_captions++];
        c->step = step;
        c->line = p->line;
        if (strlen(value) >= sizeof c->text) return fail(p, p->line, "%s: caption longer than %zu characters", name, sizeof c->text - 1);
        copy_text(c->text, sizeof c->text, value);
    } else if (!strcmp(name, "pause_at_step")) {
        const char *q = value;
        while (*q) {
            char *end;
            long long v = strtoll(q, &end, 10);
            if (end == q || v < 0) return fail(p, p->line, "pause_at_step: \"%s\" is not a list of steps", value);
            if (l->n_pauses == SCN_MAX_LESSON) return fail(p, p->line, "at most %d pauses", SCN_MAX_LESSON);
            l->pauses[l->n_pauses++] = v;
            while (*end == ' ' || *end == ',') end++;
            q = end;
        }
    } else if ((step = step_suffix(name, "ask_at_step.")) >= 0) {
        if (l->n_questions == SCN_MAX_LESSON) return fail(p, p->line, "at most %d questions", SCN_MAX_LESSON);
        scn_question *qn = &l->questions[l->n_questions];
        char f[SCN_MAX_CHOICES + 2][256];
        int k = split_bar(value, &f[0][0], sizeof f[0], SCN_MAX_CHOICES + 2);
        if (k < 4)
            return fail(p, p->line, "%s: \"%s\" is not question | choice | choice ... | answer (2 to %d choices)",
                        name, value, SCN_MAX_CHOICES);
        memset(qn, 0, sizeof *qn);
        qn->step = step;
        qn->line = p->line;
        copy_text(qn->question, sizeof qn->question, f[0]);
        qn->n_choices = k - 2;
        qn->answer = -1;
        for (int i = 0; i < qn->n_choices; i++) {
            if (strlen(f[i + 1]) >= sizeof qn->choices[i]) return fail(p, p->line, "%s: choice %d is too long", name, i + 1);
            copy_text(qn->choices[i], sizeof qn->choices[i], f[i + 1]);
            if (!strcmp(f[i + 1], f[k - 1])) qn->answer = i;
        }
        if (qn->answer < 0) return fail(p, p->line, "%s: the answer \"%s\" is not one of the choices", name, f[k - 1]);
        l->n_questions++;
    } else {
        return fail(p, p->line, "unknown key \"%s\" in [lesson]; valid keys: number, duration, at_step.N, "
                    "pause_at_step, ask_at_step.N", name);
    }
    return 1;
}

static int handler(void *user, const char *section, const char *name, const char *value)
{
    parse_ctx *p = user;
    scenario *s = p->s;
    if (p->failed) return 1;
    /* a continuation line: the same key again, on a line that starts with blanks */
    int cont = p->line_indented && !strcmp(section, p->last_section) && !strcmp(name, p->last_key);
    snprintf(p->last_section, sizeof p->last_section, "%s", section);
    snprintf(p->last_key, sizeof p->last_key, "%s", name);
    if (!*section)
        return fail(p, p->line, "\"%s\" comes before any section; the file must start with [scenario]", name);
    if (!known_section(section)) {
        char all[256] = "";
        size_t o = 0;
        for (int i = 0; run_sections[i]; i++) o += (size_t)snprintf(all + o, sizeof all - o, "[%s] ", run_sections[i]);
        snprintf(all + o, sizeof all - o, "[compare] [lesson]");
        return fail(p, p->section_line, "unknown section [%s]; valid sections: %s", section, all);
    }
    if (!strcmp(section, "scenario") && !strcmp(name, "description") && cont) {
        size_t l = strlen(s->description);
        snprintf(s->description + l, sizeof s->description - l, " %s", value);
        return 1;
    }
    if (cont) return fail(p, p->line, "%s: a continuation line is only for description", name);
    if (!strcmp(section, "scenario") && (!strcmp(name, "title") || !strcmp(name, "description") ||
                                         !strcmp(name, "engine"))) {
        if (!strcmp(name, "title")) {
            if (s->title[0]) return fail(p, p->line, "duplicate key \"title\" in [scenario]");
            copy_text(s->title, sizeof s->title, value);
        } else if (!strcmp(name, "description")) {
            if (s->description[0]) return fail(p, p->line, "duplicate key \"description\" in [scenario]");
            copy_text(s->description, sizeof s->description, value);
        } else {
            if (p->have_engine) return fail(p, p->line, "duplicate key \"engine\" in [scenario]");
            if (!strcmp(value, "real")) s->engine = RUN_REAL;
            else if (!strcmp(value, "local")) s->engine = RUN_REAL, s->local = 1;
            else if (!strcmp(value, "sim")) s->engine = RUN_SIM;
            else return fail(p, p->line, "engine: \"%s\" is not real, local or sim", value);
            if (s->n_entries || s->n_vary)
                return fail(p, p->line, "engine must come before the run's keys");
            p->have_engine = 1;
        }
        p->have_scenario = 1;
        return 1;
    }
    if (!strcmp(section, "scenario")) p->have_scenario = 1;
    if (!strcmp(section, "lesson")) return parse_lesson(p, name, value);
    if (!strcmp(section, "compare")) {
        if (!strcmp(name, "vary")) return parse_vary(p, value);
        if (!strcmp(name, "label")) {
            if (s->label[0]) return fail(p, p->line, "duplicate key \"label\" in [compare]");
            copy_text(s->label, sizeof s->label, value);
            return 1;
        }
        return fail(p, p->line, "unknown key \"%s\" in [compare]; valid keys: vary, label", name);
    }
    const run_key *k = run_key_find(name);
    char valid[512];
    section_keys(section, valid, sizeof valid);
    if (!k || !k->section || strchr(name, '-')) {
        const run_key *near = run_key_suggest(name, section);
        if (!near) near = run_key_suggest(name, NULL);
        if (near && near->section && strcmp(near->section, section))
            return fail(p, p->line, "unknown key \"%s\" in [%s] (did you mean \"%s\" in [%s]?); valid keys: %s",
                        name, section, near->name, near->section, valid);
        if (near && near->section)
            return fail(p, p->line, "unknown key \"%s\" in [%s] (did you mean \"%s\"?); valid keys: %s", name,
                        section, near->name, valid);
        return fail(p, p->line, "unknown key \"%s\" in [%s]; valid keys: %s", name, section, valid);
    }
    if (strcmp(k->section, section))
        return fail(p, p->line, "key \"%s\" belongs in [%s], not [%s]", name, k->section, section);
    if (!p->have_engine && s->n_entries == 0 && !p->have_scenario)
        return fail(p, p->line, "the file must start with [scenario] (title, engine = real | sim)");
    if (!(run_key_engines(k) & s->engine))
        return fail(p, p->line, "\"%s\" is used by the %s only, and this scenario's engine is %s", name,
                    s->engine == RUN_SIM ? "real runtime" : "simulator", s->engine == RUN_SIM ? "sim" : "real");
    /* A repeatable key (fail, straggler) may be given again: each adds, as the flag does. */
    for (int i = 0; i < s->n_entries && !k->repeatable; i++)
        if (s->entries[i].key == k)
            return fail(p, p->line, "duplicate key \"%s\" in [%s] (first at line %d)", name, section,
                        s->entries[i].line);
    if (s->n_entries == SCN_MAX_ENTRIES) return fail(p, p->line, "too many keys (at most %d)", SCN_MAX_ENTRIES);
    char msg[DP_ERRLEN];
    run_value rv;
    if (run_value_parse(k, value, k->name, &rv, msg)) return fail(p, p->line, "%s", msg);
    scn_entry *e = &s->entries[s->n_entries++];
    e->key = k;
    e->line = p->line;
    copy_text(e->value, sizeof e->value, value);
    return 1;
}

int scenario_parse(scenario *s, const char *path, const char *text, char *err)
{
    memset(s, 0, sizeof *s);
    copy_text(s->path, sizeof s->path, path);
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    copy_text(s->name, sizeof s->name, base);
    size_t bl = strlen(s->name);
    if (bl > 4 && !strcmp(s->name + bl - 4, ".ini")) s->name[bl - 4] = 0;
    s->engine = RUN_REAL;
    /* lines longer than inih's buffer would be split: refuse them first */
    int line = 1;
    size_t col = 0;
    int blank = 1;
    for (const char *c = text; *c; c++) {
        if (*c == '\n') {
            line++;
            col = 0;
            continue;
        }
        if (++col > INI_MAX_LINE - 2)
            return dp_fail(err, DP_EINVAL, "%s:%d: line longer than %d characters", path, line, INI_MAX_LINE - 2);
        if (!isspace((unsigned char)*c)) blank = 0;
    }
    if (blank) return dp_fail(err, DP_EINVAL, "%s:1: empty file (a scenario starts with [scenario])", path);
    parse_ctx p = {.s = s, .text = text, .pos = text, .err = err};
    int rc = ini_parse_stream(reader, &p, handler, &p);
    if (rc > 0 && (!p.failed || rc < p.failed_line))
        return dp_fail(err, DP_EINVAL, "%s:%d: not INI: expected [section] or key = value", path, rc);
    if (p.failed) return DP_EINVAL;
    if (rc < 0) return dp_fail(err, DP_EINVAL, "%s: cannot be parsed (%d)", path, rc);
    if (!p.have_scenario) return dp_fail(err, DP_EINVAL, "%s:1: missing [scenario] section", path);
    if (!s->title[0]) return dp_fail(err, DP_EINVAL, "%s:1: [scenario] needs a title", path);
    return DP_OK;
}

int scenario_key_line(const scenario *s, const char *name)
{
    const run_key *k = run_key_find(name);
    if (!k) return 0;
    for (int i = 0; i < s->n_entries; i++)
        if (s->entries[i].key == k) return s->entries[i].line;
    for (int i = 0; i < s->n_vary; i++)
        if (s->vary[i].key == k) return s->vary[i].line;
    return 0;
}

int scenario_variants(const scenario *s)
{
    int n = 1;
    for (int i = 0; i < s->n_vary; i++) n *= s->vary[i].n_values;
    return n;
}

/* The value index of vary line `line` in variant v (the last line varies fastest). */
static int value_index(const scenario *s, int v, int line)
{
    for (int i = s->n_vary - 1; i > line; i--) v /= s->vary[i].n_values;
    return v % s->vary[line].n_values;
}

void scenario_variant_label(const scenario *s, int variant, char *buf, size_t n)
{
    size_t o = 0;
    buf[0] = 0;
    if (s->n_vary == 0) {
        snprintf(buf, n, "run");
        return;
    }
    for (int i = 0; i < s->n_vary && o + 1 < n; i++) {
        const scn_vary *v = &s->vary[i];
        o += (size_t)snprintf(buf + o, n - o, "%s%s-", i ? "+" : "", v->key->name);
        for (const char *c = v->values[value_index(s, variant, i)]; *c && o + 1 < n; c++)
            buf[o++] = (isalnum((unsigned char)*c) || *c == '.' || *c == '-') ? *c : '_';
        buf[o] = 0;
    }
}

int scenario_apply(const scenario *s, int engine, int variant, scn_set_fn set, void *ctx,
                   char *skipped, size_t n, char *err)
{
    size_t o = 0;
    if (skipped && n) skipped[0] = 0;
    char what[640];
    for (int i = 0; i < s->n_entries; i++) {
        const scn_entry *e = &s->entries[i];
        if (!(run_key_engines(e->key) & engine)) {
            if (skipped && o + 2 < n)
                o += (size_t)snprintf(skipped + o, n - o, "%s%s", o ? ", " : "", e->key->name);
            continue;
        }
        snprintf(what, sizeof what, "%s:%d: %s", s->path, e->line, e->key->name);
        int rc = set(ctx, e->key->name, e->value, what, err);
        if (rc) return rc;
    }
    for (int i = 0; i < s->n_vary; i++) {
        const scn_vary *v = &s->vary[i];
        if (!(run_key_engines(v->key) & engine)) continue;
        snprintf(what, sizeof what, "%s:%d: vary %s", s->path, v->line, v->key->name);
        int rc = set(ctx, v->key->name, v->values[value_index(s, variant, i)], what, err);
        if (rc) return rc;
    }
    return DP_OK;
}

char *scenario_lesson_json(const scenario *s)
{
    const scn_lesson *l = &s->lesson;
    if (!l->present) return NULL;
    json_t *o = json_object();
    json_object_set_new(o, "title", json_string(s->title));
    if (l->number) json_object_set_new(o, "number", json_integer(l->number));
    json_t *caps = json_array(), *pauses = json_array(), *qs = json_array();
    for (int i = 0; i < l->n_captions; i++) {
        json_t *c = json_object();
        json_object_set_new(c, "step", json_integer(l->captions[i].step));
        json_object_set_new(c, "text", json_string(l->captions[i].text));
        json_array_append_new(caps, c);
    }
    for (int i = 0; i < l->n_pauses; i++) json_array_append_new(pauses, json_integer(l->pauses[i]));
    for (int i = 0; i < l->n_questions; i++) {
        const scn_question *q = &l->questions[i];
        json_t *j = json_object(), *ch = json_array();
        json_object_set_new(j, "step", json_integer(q->step));
        json_object_set_new(j, "question", json_string(q->question));
        for (int k = 0; k < q->n_choices; k++) json_array_append_new(ch, json_string(q->choices[k]));
        json_object_set_new(j, "choices", ch);
        json_object_set_new(j, "answer", json_integer(q->answer));
        json_array_append_new(qs, j);
    }
    json_object_set_new(o, "captions", caps);
    json_object_set_new(o, "pauses", pauses);
    json_object_set_new(o, "questions", qs);
    char *out = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return out;
}
