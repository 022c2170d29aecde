/* compare.c — `downpour compare` (see lab.h): every variant of a scenario run one after
 * another (never concurrently: they would compete for cores and the comparison would
 * lie), then a report folder. Every number in the report and every plotted point comes
 * from the variants' summaries (summary.json) and traces (lab/series.c); nothing is
 * typed in. */
#include "lab/internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/dp.h"
#include "events/trace_tool.h"
#include "lab/series.h"
#include "viz/plot.h"

#define LAB_MAX_VARIANTS PLOT_MAX_SERIES
#define PLOT_W 1200
#define PLOT_H 700

typedef struct variant {
    char label[256];
    char dir[1100];
    json_t *summary;
    lab_series *series;
    trace_tool_phases phases;   /* its workers' time by phase (trace stats) */
} variant;

static double jnum(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return v && json_is_number(v) ? json_number_value(v) : NAN;
}

static const char *jstr(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return v && json_is_string(v) ? json_string_value(v) : "";
}

/* "1.23", "-" for a missing number. */
static const char *fmt(char *buf, size_t n, const char *f, double v)
{
    if (!isfinite(v)) snprintf(buf, n, "-");
    else snprintf(buf, n, f, v);
    return buf;
}

static int read_variant(variant *v, char *err)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/summary.json", v->dir);
    json_error_t je;
    v->summary = json_load_file(path, 0, &je);
    if (!v->summary) return dp_fail(err, DP_EINVAL, "%s:%d: %s", path, je.line, je.text);
    snprintf(path, sizeof path, "%s/trace.dptrace", v->dir);
    v->series = xcalloc(1, sizeof *v->series);
    int rc = lab_series_read(path, v->series, err);
    return rc ? rc : trace_tool_phases_read(path, &v->phases, err);
}

/* "Where the workers' time went": a row per variant, its workers together, the phases
 * any variant spent time in. */
static void write_phases(FILE *f, const variant *v, int n)
{
    const int *shown = trace_tool_phase_order;
    int cols[TRACE_TOOL_PHASES] = {0};
    for (int i = 0; i < n; i++)
        for (int k = 0; k < TRACE_TOOL_PHASES; k++) cols[k] |= v[i].phases.phase_s[shown[k]] > 0;
    fprintf(f, "## Where the workers' time went\n\n"
               "Each variant's workers together, from their first event until they stopped, by what "
               "the viewer shows them doing (one phase at a time: a push during the compute counts as "
               "computing; idle is the rest, start-up included). \"Computing most\" is the worker "
               "computing the largest share of its time, against the median worker. \"Last to push\" "
               "is the worker whose gradients came last at the most global steps: in sync without "
               "backup workers, the one the barrier waited for. `downpour trace stats TRACE` gives it "
               "worker by worker.\n\n| variant |");
    for (int k = 0; k < TRACE_TOOL_PHASES; k++)
        if (cols[k]) fprintf(f, " %s |", trace_tool_phase_label(shown[k]));
    fprintf(f, " computing most | last to push (sync) |\n| --- |");
    for (int k = 0; k < TRACE_TOOL_PHASES; k++)
        if (cols[k]) fprintf(f, " ---: |");
    fprintf(f, " --- | --- |\n");
    for (int i = 0; i < n; i++) {
        const trace_tool_phases *p = &v[i].phases;
        fprintf(f, "| %s |", v[i].label);
        for (int k = 0; k < TRACE_TOOL_PHASES; k++)
            if (cols[k]) fprintf(f, " %.1f %% |", p->time_s > 0 ? p->phase_s[shown[k]] / p->time_s * 100 : 0.0);
        if (p->most_computing >= 0)
            fprintf(f, " worker %d: %.1f %% (median %.1f %%) |", p->most_computing,
                    p->most_computing_share * 100, p->median_computing_share * 100);
        else
            fprintf(f, " - |");
        if (p->last_to_push >= 0)
            fprintf(f, " worker %d: %lld of %lld steps |\n", p->last_to_push, (long long)p->last_to_push_steps,
                    (long long)p->push_steps);
        else
            fprintf(f, " - |\n");
    }
    fputc('\n', f);
}

/* The report's table columns, shared by report.md and summary.csv. */
enum { COLS = 16 };
static const char *const col_names[COLS] = {
    "variant", "engine", "mode", "workers", "wall_s", "global_step", "samples_per_s",
    "time_to_common_step_s", "final_loss", "test_accuracy", "mean_staleness", "max_staleness",
    "dropped_gradients", "bytes_pulled_per_ps", "bytes_pushed_per_ps", "trace"};

/* report.md shows bytes in MB; summary.csv keeps them exact */
static void row_cells(const variant *v, int64_t common, int mb, char cells[COLS][1200])
{
    json_t *s = v->summary;
    double ps = jnum(s, "ps");
    snprintf(cells[0], 1200, "%s", v->label);
    snprintf(cells[1], 1200, "%s", jstr(s, "engine"));
    snprintf(cells[2], 1200, "%s", jstr(s, "mode"));
    fmt(cells[3], 1200, "%.0f", jnum(s, "workers"));
    fmt(cells[4], 1200, "%.2f", jnum(s, "wall_s"));
    fmt(cells[5], 1200, "%.0f", jnum(s, "global_step"));
    fmt(cells[6], 1200, "%.0f", jnum(s, "samples_per_s"));
    fmt(cells[7], 1200, "%.3f", lab_series_time_to_step(v->series, common));
    fmt(cells[8], 1200, "%.4f", jnum(s, "final_loss"));
    fmt(cells[9], 1200, "%.4f", jnum(s, "test_accuracy"));
    fmt(cells[10], 1200, "%.2f", jnum(s, "mean_staleness"));
    fmt(cells[11], 1200, "%.0f", jnum(s, "max_staleness"));
    fmt(cells[12], 1200, "%.0f", jnum(s, "dropped_gradients"));
    double unit = mb ? 1e6 : 1;
    fmt(cells[13], 1200, mb ? "%.1f" : "%.0f", jnum(s, "bytes_pulled") / ps / unit);
    fmt(cells[14], 1200, mb ? "%.1f" : "%.0f", jnum(s, "bytes_pushed") / ps / unit);
    snprintf(cells[15], 1200, "%s/trace.dptrace", v->dir);
}

static int write_csv(const char *path, const variant *v, int n, int64_t common, char *err)
{
    FILE *f = fopen(path, "w");
    if (!f) return dp_fail(err, DP_EIO, "%s: %s", path, strerror(errno));
    for (int c = 0; c < COLS; c++) fprintf(f, "%s%s", c ? "," : "", col_names[c]);
    fputc('\n', f);
    static char cells[COLS][1200];
    for (int i = 0; i < n; i++) {
        row_cells(&v[i], common, 0, cells);
        for (int c = 0; c < COLS; c++) fprintf(f, "%s%s", c ? "," : "", cells[c]);
        fputc('\n', f);
    }
    if (fclose(f) != 0) return dp_fail(err, DP_EIO, "%s: %s", path, strerror(errno));
    return DP_OK;
}

static int write_report(const char *path, const scenario *s, int engine, const variant *v, int n,
                        int64_t common, char *err)
{
    FILE *f = fopen(path, "w");
    if (!f) return dp_fail(err, DP_EIO, "%s: %s", path, strerror(errno));
    fprintf(f, "# %s\n\n", s->label[0] ? s->label : s->title);
    if (s->label[0]) fprintf(f, "%s\n\n", s->title);
    if (s->description[0]) fprintf(f, "%s\n\n", s->description);
    fprintf(f, "Compared, with the %s engine, the same seed and the same data:", engine == RUN_SIM ? "simulator's" : "real");
    for (int i = 0; i < s->n_vary; i++) {
        fprintf(f, "%s `%s` = ", i ? ";" : "", s->vary[i].key->name);
        for (int k = 0; k < s->vary[i].n_values; k++)
            fprintf(f, "%s%s", k ? ", " : "", s->vary[i].values[k]);
    }
    fprintf(f, ". Produced by `downpour compare %s`; every number below comes from the variants' "
               "summaries and traces in `variants/`.\n\n", s->path);
    if (engine == RUN_SIM)
        fprintf(f, "*Simulated*: times are simulated seconds, and the loss is the simulator's noisy "
                   "quadratic surrogate, not the real model's.\n\n");
    static const char *const head[COLS - 1] = {
        "variant", "engine", "mode", "workers", "wall s", "global steps", "samples/s",
        "time to step %lld (s)", "final loss", "test accuracy", "mean staleness", "max staleness",
        "dropped gradients", "MB pulled per ps", "MB pushed per ps"};
    fputc('|', f);
    for (int c = 0; c < COLS - 1; c++) {
        fputc(' ', f);
        fprintf(f, head[c], (long long)common);
        fprintf(f, " |");
    }
    fprintf(f, "\n|");
    for (int c = 0; c < COLS - 1; c++) fprintf(f, c < 3 ? " --- |" : " ---: |");
    fputc('\n', f);
    static char cells[COLS][1200];
    for (int i = 0; i < n; i++) {
        row_cells(&v[i], common, 1, cells);
        fputc('|', f);
        for (int c = 0; c < COLS - 1; c++) fprintf(f, " %s |", cells[c]);
        fputc('\n', f);
    }
    fprintf(f, "\n\"Time to step %lld\" is when the global step first reached %lld, the last global step "
               "every variant reached (from each trace's global_step events).\n\n",
            (long long)common, (long long)common);
    static const char *const plots[][2] = {
        {"loss_vs_step.png", "Loss by global step"}, {"loss_vs_time.png", "Loss over time"},
        {"accuracy_vs_time.png", "Test accuracy over time"}, {"throughput.png", "Throughput"},
        {"staleness.png", "Staleness of applied gradients"}, {"ps_traffic.png", "Traffic per ps"}};
    write_phases(f, v, n);
    fprintf(f, "## Plots\n\nEach plot's points are in the `.csv` beside it.\n\n");
    for (size_t i = 0; i < DP_ARRAY_LEN(plots); i++) fprintf(f, "![%s](%s)\n\n", plots[i][1], plots[i][0]);
    fprintf(f, "## Watch them\n\n");
    for (int i = 1; i < n; i++)
        fprintf(f, "```sh\ndownpour view %s/trace.dptrace --compare %s/trace.dptrace\n```\n\n", v[0].dir, v[i].dir);
    if (n == 1) fprintf(f, "```sh\ndownpour view %s/trace.dptrace\n```\n\n", v[0].dir);
    if (fclose(f) != 0) return dp_fail(err, DP_EIO, "%s: %s", path, strerror(errno));
    return DP_OK;
}

static int write_plot(plot_chart *c, const char *dir, const char *name, char *err)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int rc = plot_write_png(c, path, PLOT_W, PLOT_H, err);
    plot_free(c);
    return rc;
}

static int write_plots(const char *dir, int engine, const variant *v, int n, char *err)
{
    const char *tl = engine == RUN_SIM ? "time (s, simulated)" : "time (s)";
    const char *ll = engine == RUN_SIM ? "loss (surrogate)" : "training loss (mean over workers)";
    plot_chart *c = plot_new("Loss by global step", "global step", ll);
    for (int i = 0; i < n; i++)
        plot_add_line(c, v[i].label, v[i].series->loss_by_step.x, v[i].series->loss_by_step.y,
                      v[i].series->loss_by_step.n);
    int rc = write_plot(c, dir, "loss_vs_step.png", err);
    if (!rc) {
        c = plot_new("Loss over time", tl, ll);
        for (int i = 0; i < n; i++)
            plot_add_line(c, v[i].label, v[i].series->loss_by_time.x, v[i].series->loss_by_time.y,
                          v[i].series->loss_by_time.n);
        rc = write_plot(c, dir, "loss_vs_time.png", err);
    }
    if (!rc) {
        c = plot_new(engine == RUN_SIM ? "Test accuracy over time (the simulator has none)"
                                       : "Test accuracy over time (chief's evaluations)",
                     tl, "test accuracy");
        for (int i = 0; i < n; i++)
            plot_add_line(c, v[i].label, v[i].series->accuracy.x, v[i].series->accuracy.y,
                          v[i].series->accuracy.n);
        rc = write_plot(c, dir, "accuracy_vs_time.png", err);
    }
    if (!rc) {
        c = plot_new("Throughput", "", "samples/s");
        for (int i = 0; i < n; i++) {
            const char *cats[2] = {"samples/s", "samples/s without --pace"};
            double vals[2] = {jnum(v[i].summary, "samples_per_s"), jnum(v[i].summary, "samples_per_s_unpaced")};
            plot_add_bars(c, v[i].label, cats, vals, isfinite(vals[1]) && jnum(v[i].summary, "pace_s") > 0 ? 2 : 1);
        }
        rc = write_plot(c, dir, "throughput.png", err);
    }
    if (!rc) {
        c = plot_new("Staleness of applied gradients (and dropped ones)", "staleness (global steps)",
                     "gradients");
        const char *cats[LAB_STALE_BINS + 1] = {"0", "1", "2", "3", "4", "5", "6", "7", "8+", "dropped"};
        for (int i = 0; i < n; i++) {
            double vals[LAB_STALE_BINS + 1];
            memcpy(vals, v[i].series->stale, sizeof v[i].series->stale);
            vals[LAB_STALE_BINS] = v[i].series->dropped;
            plot_add_bars(c, v[i].label, cats, vals, LAB_STALE_BINS + 1);
        }
        rc = write_plot(c, dir, "staleness.png", err);
    }
    if (!rc) {
        /* the trace's per-ps shares, scaled to the summary's totals (a sampled simulator
         * trace holds some workers' transfers only; every worker moves the same bytes) */
        c = plot_new("Traffic per ps (pulled + pushed)", "", "bytes");
        for (int i = 0; i < n; i++) {
            lab_series *s = v[i].series;
            int np = s->n_ps_seen;
            if (np > 64) np = 64;
            char names[64][16];
            const char *cats[64];
            double vals[64], seen = 0;
            for (int p = 0; p < np; p++) seen += s->ps_pulled[p] + s->ps_pushed[p];
            double total = jnum(v[i].summary, "bytes_pulled") + jnum(v[i].summary, "bytes_pushed");
            double scale = seen > 0 && isfinite(total) ? total / seen : 1;
            for (int p = 0; p < np; p++) {
                snprintf(names[p], sizeof names[p], "ps %d", p);
                cats[p] = names[p];
                vals[p] = (s->ps_pulled[p] + s->ps_pushed[p]) * scale;
            }
            plot_add_bars(c, v[i].label, cats, vals, (size_t)np);
        }
        rc = write_plot(c, dir, "ps_traffic.png", err);
    }
    return rc;
}

int lab_compare(const char *path, const lab_options *o, char *err)
{
    scenario *s = xmalloc(sizeof *s);
    variant *v = NULL;
    int n = 0, rc = lab_load(s, path, err);
    if (rc) goto fail;
    int engine = o->engine ? o->engine : s->engine;
    n = scenario_variants(s);
    if (s->n_vary == 0) {
        rc = dp_fail(err, DP_EINVAL, "%s: no [compare] section (vary = KEY: V1, V2, ...)", path);
        goto fail;
    }
    for (int i = 0; i < o->n_sets; i++)   /* every variant the same: no comparison left */
        for (int j = 0; j < s->n_vary; j++) {
            size_t kl = strcspn(o->sets[i], "=");
            if (strlen(s->vary[j].key->name) == kl && !strncmp(o->sets[i], s->vary[j].key->name, kl)) {
                rc = dp_fail(err, DP_EINVAL, "--set %s: %s:%d varies %s itself; edit that line to compare other "
                             "values, or `downpour run` one variant with --set", s->vary[j].key->name, path,
                             s->vary[j].line, s->vary[j].key->name);
                goto fail;
            }
        }
    if (n > LAB_MAX_VARIANTS) {
        rc = dp_fail(err, DP_EINVAL, "%s: %d variants; a report compares at most %d", path, n, LAB_MAX_VARIANTS);
        n = 0;
        goto fail;
    }
    char dir[1024];
    if (o->out_dir) snprintf(dir, sizeof dir, "%s", o->out_dir);
    else snprintf(dir, sizeof dir, "out/%s", s->name);
    v = xcalloc((size_t)n, sizeof *v);
    for (int i = 0; i < n; i++) {
        scenario_variant_label(s, i, v[i].label, sizeof v[i].label);
        snprintf(v[i].dir, sizeof v[i].dir, "%s/variants/%s", dir, v[i].label);
        rc = lab_config_ok(s, engine, i, o, err);   /* every variant's, before the first runs */
        if (rc) goto fail;
    }
    for (int i = 0; i < n; i++) {
        fprintf(stderr, "downpour: compare: variant %d of %d: %s\n", i + 1, n, v[i].label);
        rc = lab_run_variant(s, engine, i, o, v[i].dir, 0, err);
        if (!rc) rc = read_variant(&v[i], err);
        if (rc) goto fail;
    }
    int64_t common = INT64_MAX;
    for (int i = 0; i < n; i++) {
        double gs = jnum(v[i].summary, "global_step");
        if (isfinite(gs) && (int64_t)gs < common) common = (int64_t)gs;
    }
    char file[1200];
    snprintf(file, sizeof file, "%s/summary.csv", dir);
    rc = write_csv(file, v, n, common, err);
    if (!rc) {
        snprintf(file, sizeof file, "%s/report.md", dir);
        rc = write_report(file, s, engine, v, n, common, err);
    }
    if (!rc) rc = write_plots(dir, engine, v, n, err);
    if (!rc)
        fprintf(stderr, "downpour: compare: wrote %s/report.md, summary.csv and 6 plots (%d variants in "
                        "%s/variants/)\n", dir, n, dir);
fail:
    for (int i = 0; v && i < n; i++) {
        if (v[i].summary) json_decref(v[i].summary);
        if (v[i].series) lab_series_release(v[i].series);
        free(v[i].series);
    }
    free(v);
    free(s);
    return rc;
}
