/* run.c — a scenario's run (see lab.h): load and check a file, build the engine's
 * configuration from it (file keys, then the variant, then --set overrides), run it into
 * an output folder, and draw its summary sheet. The real runtime's launcher prints its
 * own progress and summary; the simulator's progress bar and summary are printed here. */
#include "lab/internal.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/dp.h"
#include "runtime/config.h"
#include "runtime/data.h"
#include "runtime/launcher.h"
#include "runtime/local.h"
#include "sim/sim.h"
#include "viz/viz.h"

void lab_options_init(lab_options *o)
{
    memset(o, 0, sizeof *o);
}

int lab_load(scenario *s, const char *path, char *err)
{
    char *text = dp_read_file(path, 1 << 20, NULL, err);
    if (!text) return DP_EIO;
    int rc = scenario_parse(s, path, text, err);
    free(text);
    return rc;
}

static int set_real(void *ctx, const char *key, const char *value, const char *what, char *err)
{
    return rt_config_set(ctx, key, value, what, err);
}

static int set_sim(void *ctx, const char *key, const char *value, const char *what, char *err)
{
    return sim_options_set(ctx, key, value, what, err);
}

/* The keys no --set may give: where a run's events and summary go is run's, compare's
 * and fork's own (--out DIR, --out FORK, --no-view). */
static const char *const owned_keys[] = {"trace", "summary", "hub", "view"};

int lab_apply_sets(const lab_options *o, int engine, void *ctx, char *err)
{
    scn_set_fn set = engine == RUN_SIM ? set_sim : set_real;
    for (int i = 0; i < o->n_sets; i++) {
        const char *eq = strchr(o->sets[i], '=');
        char key[64], what[96];
        size_t kl = eq ? (size_t)(eq - o->sets[i]) : 0;
        if (!eq || kl == 0 || kl >= sizeof key)
            return dp_fail(err, DP_EINVAL, "--set: \"%s\" is not KEY=VALUE", o->sets[i]);
        memcpy(key, o->sets[i], kl);
        key[kl] = 0;
        if (!run_key_find(key)) {
            const run_key *near = run_key_suggest(key, NULL);
            if (near) return dp_fail(err, DP_EINVAL, "--set: unknown key \"%s\" (did you mean \"%s\"?)", key, near->name);
            return dp_fail(err, DP_EINVAL, "--set: unknown key \"%s\" (see downpour keys)", key);
        }
        for (size_t k = 0; k < DP_ARRAY_LEN(owned_keys); k++)
            if (!strcmp(key, owned_keys[k]))
                return dp_fail(err, DP_EINVAL, "--set %s: run, compare and fork choose where their output goes "
                               "(--out; run's --no-view)", key);
        snprintf(what, sizeof what, "--set %s", key);
        int rc = set(ctx, key, eq + 1, what, err);
        if (rc) return rc;
    }
    return DP_OK;
}

/* A check across keys names its flag ("--backup-workers: ..."): say where the key is
 * in the file ("x.ini:9: backup_workers: ..."), or at least name the file. */
static void name_file(const scenario *s, char *err)
{
    if (!strncmp(err, s->path, strlen(s->path))) return;
    char msg[DP_ERRLEN], key[64] = "";
    snprintf(msg, sizeof msg, "%s", err);
    const char *colon = strchr(msg, ':');
    if (!strncmp(msg, "--", 2) && colon && (size_t)(colon - msg - 2) < sizeof key) {
        memcpy(key, msg + 2, (size_t)(colon - msg - 2));
        key[colon - msg - 2] = 0;
    }
    int line = key[0] ? scenario_key_line(s, key) : 0;
    const run_key *k = key[0] ? run_key_find(key) : NULL;
    if (line && k) dp_fail(err, DP_EINVAL, "%s:%d: %s%s", s->path, line, k->name, colon);
    else dp_fail(err, DP_EINVAL, "%s: %s", s->path, msg);
}

int lab_config_real(const scenario *s, int variant, const lab_options *o, rt_config *cfg, char *skipped,
                    size_t n, char *err)
{
    rt_config_init(cfg);
    int rc = scenario_apply(s, RUN_REAL, variant, set_real, cfg, skipped, n, err);
    if (!rc && o) rc = lab_apply_sets(o, RUN_REAL, cfg, err);
    if (!rc) rc = rt_config_check(cfg, err);
    if (!rc) rc = dataset_check(cfg->data, err);
    if (rc) name_file(s, err);
    return rc;
}

int lab_config_sim(const scenario *s, int variant, const lab_options *o, sim_options *so, char *skipped,
                   size_t n, char *err)
{
    sim_options_init(so);
    int rc = scenario_apply(s, RUN_SIM, variant, set_sim, so, skipped, n, err);
    if (!rc && o) rc = lab_apply_sets(o, RUN_SIM, so, err);
    if (!rc) rc = sim_config_check(&so->c, err);
    if (rc) name_file(s, err);
    return rc;
}

int lab_check(const char *path, char *err)
{
    scenario s;
    int rc = lab_load(&s, path, err);
    if (rc) return rc;
    for (int v = 0; v < scenario_variants(&s); v++) {
        if (s.engine == RUN_REAL) {
            rt_config cfg;
            rc = lab_config_real(&s, v, NULL, &cfg, NULL, 0, err);
        } else {
            sim_options *so = xmalloc(sizeof *so);
            rc = lab_config_sim(&s, v, NULL, so, NULL, 0, err);
            if (!rc && so->calibrate[0] && access(so->calibrate, R_OK) != 0)
                rc = dp_fail(err, DP_EINVAL, "%s:%d: calibrate_from: %s: %s", s.path,
                             scenario_key_line(&s, "calibrate_from"), so->calibrate, strerror(errno));
            free(so);
        }
        if (rc) return rc;
    }
    return DP_OK;
}

static int write_text(const char *path, const char *text, char *err)
{
    FILE *f = fopen(path, "w");
    if (!f) return dp_fail(err, DP_EIO, "%s: %s", path, strerror(errno));
    fputs(text, f);
    if (fclose(f) != 0) return dp_fail(err, DP_EIO, "%s: %s", path, strerror(errno));
    return DP_OK;
}

int lab_sheet(const char *trace, const char *png, const char *title, char *err)
{
    viz_source *src = viz_source_open(trace, err);
    if (!src) return DP_EINVAL;
    int rc = viz_render_sheet(src, png, title, err);
    viz_source_free(src);
    return rc;
}

/* A scenario with save_checkpoint_steps and no --checkpoint-dir: the variant's own
 * checkpoints/ folder, emptied first (a checkpoint left by the last run would make this one
 * a resume with nothing to do). */
static int variant_checkpoints(rt_config *cfg, const char *dir, char *err)
{
    if (cfg->save_ckpt_steps <= 0 && cfg->save_ckpt_secs <= 0) return DP_OK;
    if (cfg->checkpoint_dir[0]) return DP_OK;
    if (snprintf(cfg->checkpoint_dir, sizeof cfg->checkpoint_dir, "%s/checkpoints", dir) >=
        (int)sizeof cfg->checkpoint_dir)
        return dp_fail(err, DP_EINVAL, "%s: output folder name too long", dir);
    int rc = dp_mkdirs(cfg->checkpoint_dir, err);
    if (rc) return rc;
    DIR *d = opendir(cfg->checkpoint_dir);
    if (!d) return dp_fail(err, DP_EIO, "%s: %s", cfg->checkpoint_dir, strerror(errno));
    struct dirent *de;
    char path[RT_PATH_MAX + 300];
    while ((de = readdir(d))) {
        if (strncmp(de->d_name, "model.ckpt-", 11) && strcmp(de->d_name, "checkpoint")) continue;
        snprintf(path, sizeof path, "%s/%s", cfg->checkpoint_dir, de->d_name);
        unlink(path);
    }
    closedir(d);
    return DP_OK;
}

/* The variant's folder, made and rid of the last run's trace only once its configuration
 * has been accepted: a refused --set loses nothing. */
static int fresh_output(const char *dir, const char *trace, char *err)
{
    int rc = dp_mkdirs(dir, err);
    if (!rc) unlink(trace);
    return rc;
}

int lab_config_ok(const scenario *s, int engine, int variant, const lab_options *o, char *err)
{
    char skipped[8];
    if (engine == RUN_REAL) {
        rt_config cfg;
        return lab_config_real(s, variant, o, &cfg, skipped, sizeof skipped, err);
    }
    sim_options *so = xmalloc(sizeof *so);
    int rc = lab_config_sim(s, variant, o, so, skipped, sizeof skipped, err);
    free(so);
    return rc;
}

int lab_run_variant(const scenario *s, int engine, int variant, const lab_options *o, const char *dir,
                    int view, char *err)
{
    char trace[1024], summary[1024], skipped[512];
    if (snprintf(trace, sizeof trace, "%s/trace.dptrace", dir) >= (int)sizeof trace)
        return dp_fail(err, DP_EINVAL, "%s: output folder name too long", dir);
    snprintf(summary, sizeof summary, "%s/summary.json", dir);
    int rc;
    char *lesson = scenario_lesson_json(s);   /* rides in the trace's metadata */
    if (engine == RUN_REAL) {
        rt_config cfg;
        rc = lab_config_real(s, variant, o, &cfg, skipped, sizeof skipped, err);
        if (!rc) rc = variant_checkpoints(&cfg, dir, err);   /* local saves as the chief does */
        if (!rc) rc = fresh_output(dir, trace, err);
        if (rc) {
            free(lesson);
            return rc;
        }
        snprintf(cfg.trace, sizeof cfg.trace, "%s", trace);
        snprintf(cfg.summary, sizeof cfg.summary, "%s", summary);
        cfg.view = view;
        cfg.lesson_json = lesson;
        if (!o->self) rc = dp_fail(err, DP_EINVAL, "the real runtime needs the downpour binary's path");
        else if (s->local) rc = local_run(&cfg, o->self, err);
        else rc = launcher_run(&cfg, o->self, err);
        free(lesson);
        if (rc) return rc;
    } else {
        sim_options *so = xmalloc(sizeof *so);
        rc = lab_config_sim(s, variant, o, so, skipped, sizeof skipped, err);
        if (rc) {
            free(so);
            free(lesson);
            return rc;
        }
        so->c.lesson_json = lesson;
        if (skipped[0])
            fprintf(stderr, "downpour: %s: the simulator ignores the real runtime's keys: %s\n", s->name, skipped);
        snprintf(so->c.trace, sizeof so->c.trace, "%s", trace);
        sim_calibration cal;
        memset(&cal, 0, sizeof cal);
        if (so->calibrate[0]) {
            rc = sim_calibrate(so->calibrate, &cal, err);
            if (rc) {
                free(so);
                free(lesson);
                return rc;
            }
            sim_options_calibrate(so, &cal);
            fprintf(stderr, "downpour: %s: calibrated from %s (mean step %.6g s)\n", s->name, so->calibrate,
                    cal.mean_step_s);
        }
        rc = fresh_output(dir, trace, err);
        if (rc) {
            sim_calibration_release(&cal);
            free(so);
            free(lesson);
            return rc;
        }
        sim_bar bar;
        sim_bar_init(&bar, isatty(2));
        so->c.progress = sim_bar_progress;
        so->c.progress_ctx = &bar;
        fprintf(stderr, "downpour: sim: simulated; not modelled: %s (docs/simulator.md)\n", SIM_NOT_MODELLED);
        sim_result r;
        uint64_t t0 = dp_now_ns();
        rc = sim_run(&so->c, &r, err);
        double wall = (double)(dp_now_ns() - t0) / 1e9;
        if (bar.tty) fputc('\n', stderr);
        if (!rc) {
            char *line = sim_summary_line(&so->c, &r, wall);
            printf("%s\n", line);
            fflush(stdout);
            size_t l = strlen(line);
            line = xrealloc(line, l + 2);
            line[l] = '\n';
            line[l + 1] = 0;
            rc = write_text(summary, line, err);
            free(line);
        }
        sim_calibration_release(&cal);
        free(so);
        free(lesson);
        if (rc) return rc;
    }
    return DP_OK;
}

/* --quiz: the lesson's questions on the terminal (before), or their answers (after). */
static void print_quiz(const scenario *s, int answers)
{
    const scn_lesson *l = &s->lesson;
    if (l->n_questions == 0) {
        if (!answers) printf("quiz: %s has no questions\n", s->path);
        return;
    }
    printf(answers ? "\nquiz: the answers\n" : "quiz: predict, then watch (%d questions)\n", l->n_questions);
    for (int i = 0; i < l->n_questions; i++) {
        const scn_question *q = &l->questions[i];
        if (answers) {
            printf("  %d. at global step %lld: %c) %s\n", i + 1, q->step, 'A' + q->answer, q->choices[q->answer]);
            continue;
        }
        printf("  %d. at global step %lld: %s\n", i + 1, q->step, q->question);
        for (int k = 0; k < q->n_choices; k++) printf("       %c) %s\n", 'A' + k, q->choices[k]);
    }
    fflush(stdout);
}

int lab_run(const char *path, const lab_options *o, char *err)
{
    scenario s;
    int rc = lab_load(&s, path, err);
    if (rc) return rc;
    int engine = o->engine ? o->engine : s.engine;
    rc = lab_config_ok(&s, engine, 0, o, err);   /* a refused --set says nothing else first */
    if (rc) return rc;
    char dir[1024];
    if (o->out_dir) snprintf(dir, sizeof dir, "%s", o->out_dir);
    else snprintf(dir, sizeof dir, "out/%s", s.name);
    int n = scenario_variants(&s);
    char label[256] = "";
    if (n > 1) {
        scenario_variant_label(&s, 0, label, sizeof label);
        fprintf(stderr, "downpour: run: %s has %d variants; running the first (%s) — `downpour compare "
                        "%s` runs them all\n", path, n, label, path);
    }
    fprintf(stderr, "downpour: run: %s (%s engine) into %s/\n", s.title,
            engine == RUN_SIM ? "sim" : s.local ? "local" : "real", dir);
    int view = !o->no_view && dp_have_display();
    if (o->quiz) print_quiz(&s, 0);
    rc = lab_run_variant(&s, engine, 0, o, dir, view && engine == RUN_REAL, err);
    if (rc) return rc;
    if (o->quiz) print_quiz(&s, 1);
    char trace[1100], png[1100], title[512];
    snprintf(trace, sizeof trace, "%s/trace.dptrace", dir);
    snprintf(png, sizeof png, "%s/sheet.png", dir);
    snprintf(title, sizeof title, "%s%s%s", s.title, label[0] ? ": " : "", label);
    rc = lab_sheet(trace, png, title, err);
    if (rc) return rc;
    fprintf(stderr, "downpour: run: wrote %s/trace.dptrace, summary.json and sheet.png "
                    "(replay: downpour view %s)\n", dir, trace);
    if (view && engine == RUN_SIM) {
        viz_app_options vo;
        viz_app_options_init(&vo);
        vo.trace = trace;
        if (viz_app_run(&vo) != 0) return dp_fail(err, DP_ERR, "the viewer failed");
    }
    return DP_OK;
}
