/* overlay.c — what is drawn over or instead of the cluster: the placement view
 * (the seed's roles — client, the chief's master duties, each task's master and worker
 * services — over TensorFlow's log_device_placement lines, each op / variable coloured by
 * its device, with a device legend), the help card listing every key, the inspector card for a
 * clicked task or packet, and the short toast message ("saved frame-0001.png"). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/dp.h"
#include "viz/internal.h"

static viz_rect card(viz_ctx *c, viz_rect r, const char *title)
{
    cairo_t *cr = c->cr;
    double s = c->lay.s;
    viz_seta(cr, VIZ_INK, 0.18);
    viz_round_rect(cr, (viz_rect){r.x + 4 * s, r.y + 5 * s, r.w, r.h}, 10 * s);
    cairo_fill(cr);
    viz_set(cr, VIZ_PANEL);
    viz_round_rect(cr, r, 10 * s);
    cairo_fill_preserve(cr);
    viz_set(cr, VIZ_INK);
    cairo_set_line_width(cr, 2 * s);
    cairo_stroke(cr);
    viz_font(cr, c->lay.font, 1);
    viz_text(cr, r.x + 14 * s, r.y + c->lay.font * 1.5, title, 0, r.w - 28 * s);
    return (viz_rect){r.x + 14 * s, r.y + c->lay.font * 2.0, r.w - 28 * s, r.h - c->lay.font * 2.4};
}

/* A chip at (x, baseline y) with text: filled in col when on, outlined in ink when not.
 * Returns its width. */
static double role_chip(cairo_t *cr, double x, double y, double fs, const char *text, int on, viz_rgb col)
{
    double w = viz_text_width(cr, text) + fs * 0.9;
    viz_rect r = {x, y - fs * 1.0, w, fs * 1.35};
    if (on) {
        viz_set(cr, col);
        viz_round_rect(cr, r, fs * 0.3);
        cairo_fill(cr);
    } else {
        viz_set(cr, VIZ_LINE);
        cairo_set_line_width(cr, 1);
        viz_round_rect(cr, r, fs * 0.3);
        cairo_stroke(cr);
    }
    viz_set(cr, on ? (viz_rgb){1, 1, 1} : VIZ_INK);
    viz_text(cr, x + fs * 0.45, y, text, 0, 0);
    return w;
}

/* The seed's roles, above the placement log: the client (the launcher, or the simulator,
 * that started the cluster), then each task with its two services — every TensorFlow
 * server offers a master service and a worker service — and the chief's master duties
 * (initialise, global step, evaluation, checkpoints), the one under way filled: evaluating
 * while the chief evaluates, checkpoints as one is written. Returns the y below it. */
#define VIZ_ROLE_TASKS 4
static double draw_roles(viz_ctx *c, viz_rect in, double y)
{
    cairo_t *cr = c->cr;
    const viz_layout *l = &c->lay;
    const viz_model *m = &c->src->m;
    double fs = l->font_small * 0.9, rh = fs * 1.6, x;
    char buf[160];
    int sim = !strcmp(m->engine, "sim");
    viz_font(cr, fs, 1);
    viz_set(cr, VIZ_INK);
    x = in.x + viz_text(cr, in.x, y, "client", 0, 0) + fs;
    viz_font(cr, fs, 0);
    viz_text(cr, x, y, sim ? "the simulator (downpour sim) that started the cluster and drives its tasks"
                           : "the launcher (downpour cluster) that started the cluster: it builds the job and "
                             "starts every task", 0, in.x + in.w - x);
    /* the chief's duty under way */
    int evaluating = viz_model_eval_at(m, c->t) != NULL, ckpt = 0;
    for (size_t i = 0; i < m->n_marks; i++) {   /* a checkpoint written in the last 250 ms, long enough to see */
        const viz_mark *k = &m->marks[i];
        if (k->t > c->t) break;
        if (k->kind == EVT_CHECKPOINT_WRITE && c->t - k->t <= 250000000) ckpt = 1;
    }
    int64_t gs = c->st->global_step;
    /* the chief first (it carries the master duties), then the ps, then the other workers */
    int jobs[VIZ_ROLE_TASKS], tasks[VIZ_ROLE_TASKS], n = 0, n_tasks = m->n_ps + m->n_workers;
    if (m->n_workers > m->chief) jobs[n] = EVT_JOB_WORKER, tasks[n++] = m->chief;
    for (int p = 0; p < m->n_ps && n < VIZ_ROLE_TASKS; p++) jobs[n] = EVT_JOB_PS, tasks[n++] = p;
    for (int w = 0; w < m->n_workers && n < VIZ_ROLE_TASKS; w++)
        if (w != m->chief) jobs[n] = EVT_JOB_WORKER, tasks[n++] = w;
    int shown = n;
    for (int k = 0; k < n; k++) {
        int job = jobs[k], task = tasks[k];
        y += rh;
        viz_font(cr, fs, 1);
        viz_set(cr, VIZ_INK);
        viz_task_name(buf, sizeof buf, job, task);
        int chief = job == EVT_JOB_WORKER && task == m->chief;
        if (chief) strncat(buf, " \xe2\x98\x85 chief", sizeof buf - strlen(buf) - 1);
        x = in.x + viz_text(cr, in.x, y, buf, 0, in.w * 0.3) + fs;
        viz_font(cr, fs, 0);
        if (chief) {   /* master service: its duties, the one under way filled */
            x += viz_text(cr, x, y, "master service:", 0, 0) + fs * 0.5;
            x += role_chip(cr, x, y, fs, "initialise", gs == 0 && c->st->workers_len > 0, VIZ_ACCENT) + fs * 0.4;
            snprintf(buf, sizeof buf, "global step %lld", (long long)gs);
            x += role_chip(cr, x, y, fs, buf, 0, VIZ_ACCENT) + fs * 0.4;
            x += role_chip(cr, x, y, fs, evaluating ? "evaluating" : "evaluation", evaluating,
                           viz_phase_color(VIZ_PHASE_EVALUATING)) + fs * 0.4;
            x += role_chip(cr, x, y, fs, ckpt ? "checkpointing" : "checkpoints", ckpt,
                           viz_phase_color(EVT_PHASE_COMPUTING)) + fs;
            viz_set(cr, VIZ_INK);
            viz_text(cr, x, y, "\xc2\xb7 worker service", 0, in.x + in.w - x);
        } else if (job == EVT_JOB_PS) {
            viz_text(cr, x, y, "master service (unused: the chief's coordinates) \xc2\xb7 worker service: "
                               "holds variables, applies gradients", 0, in.x + in.w - x);
        } else {
            viz_text(cr, x, y, "master service (unused: the chief's coordinates) \xc2\xb7 worker service: "
                               "pull, compute, push", 0, in.x + in.w - x);
        }
    }
    if (n_tasks > shown) {
        y += rh;
        viz_set(cr, VIZ_MUTED);
        snprintf(buf, sizeof buf, "\xe2\x80\xa6 %d more tasks, each a server with both services", n_tasks - shown);
        viz_text(cr, in.x, y, buf, 0, in.w);
    }
    return y;
}

void viz_draw_placement(viz_ctx *c)
{
    cairo_t *cr = c->cr;
    const viz_layout *l = &c->lay;
    const viz_model *m = &c->src->m;
    double s = l->s;
    viz_rect in = card(c, l->cluster, "Device placement  (log_device_placement)");
    /* legend: one chip per device */
    double x = in.x, y = in.y + l->font_small * 1.1, fs = l->font_small;
    viz_font(cr, fs, 0);
    for (int d = 0; d < m->n_devs; d++) {
        const char *name = viz_source_string(c->src, m->devs[d].device);
        double w = viz_text_width(cr, name) + fs * 1.6;
        if (x + w > in.x + in.w) {
            x = in.x;
            y += fs * 1.5;
            if (y > in.y + in.h * 0.4) break;
        }
        viz_set(cr, viz_device_color(d));
        cairo_rectangle(cr, x, y - fs * 0.85, fs, fs);
        cairo_fill(cr);
        viz_set(cr, VIZ_INK);
        viz_text(cr, x + fs * 1.3, y, name, 0, 0);
        x += w + fs;
    }
    y = draw_roles(c, in, y + fs * 1.9);
    y += fs * 1.2;
    if (m->n_ops == 0) {
        viz_set(cr, VIZ_MUTED);
        viz_text(cr, in.x, y, "no placement events in this run", 0, 0);
        return;
    }
    /* the table: rows "name: (Type): device" in columns as wide as fit */
    cairo_select_font_face(cr, "DejaVu Sans Mono", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    double rs = fs * 0.95, rh = rs * 1.45;
    cairo_set_font_size(cr, rs);
    int rows = (int)((in.y + in.h - y) / rh);
    if (rows < 1) rows = 1;
    double colw = viz_text_width(cr, "hidden/weights: (VariableV2): /job:ps/replica:0/task:0/device:CPU:0") + 3 * rs;
    int cols = (int)fmax(1, floor(in.w / colw));
    colw = in.w / cols;
    size_t cap = (size_t)rows * (size_t)cols;
    char line[400];
    for (size_t i = 0; i < m->n_ops && i < cap; i++) {
        const viz_op *op = &m->ops[i];
        double cx = in.x + (double)(i / (size_t)rows) * colw, cy = y + (double)(i % (size_t)rows) * rh;
        if (i + 1 == cap && m->n_ops > cap) {
            viz_set(cr, VIZ_MUTED);
            snprintf(line, sizeof line, "… %zu more", m->n_ops - cap + 1);
            viz_text(cr, cx, cy, line, 0, colw);
            break;
        }
        int d = viz_model_device_index(m, op->device);
        viz_set(cr, viz_device_color(d));
        viz_round_rect(cr, (viz_rect){cx, cy - rs * 1.02, colw - 6 * s, rh * 0.92}, 3 * s);
        cairo_fill(cr);
        viz_set(cr, VIZ_INK);
        snprintf(line, sizeof line, "%s: (%s): %s", viz_source_string(c->src, op->name),
                 op->is_var ? "VariableV2" : op->type ? viz_source_string(c->src, op->type) : "Op",
                 viz_source_string(c->src, op->device));
        viz_text(cr, cx + 4 * s, cy, line, 0, colw - 12 * s);
    }
}

void viz_draw_help(viz_ctx *c)
{
    static const char *keys[][2] = {
        {"space", "play / pause"},
        {"\xe2\x86\x90  \xe2\x86\x92", "previous / next event"},
        {",  .", "previous / next global step"},
        {"[  ]", "slower / faster (1/100\xc3\x97 .. 100\xc3\x97)"},
        {"drag", "scrub the timeline"},
        {"click", "inspect a task or packet (pauses)"},
        {"p", "placement view"},
        {"s", "save this frame as PNG"},
        {"c / End", "catch up with the live run"},
        {"e", "captions on / off"},
        {"E", "caption history (\xe2\x86\x91 \xe2\x86\x93 scroll)"},
        {"f", "fork from here: change a key, simulate on"},
        {"t", "compare: follow by time / by global step"},
        {"h", "this help"},
        {"F11", "fullscreen"},
        {"q / Esc", "quit"},
    };
    const viz_layout *l = &c->lay;
    double s = l->s, rh = l->font * 1.45;
    double h = l->font * 2.6 + rh * (double)DP_ARRAY_LEN(keys), w = fmin(l->width * 0.8, 620 * s);
    viz_rect r = {(l->width - w) / 2, fmax(l->top.h + 10 * s, (l->height - h) / 2), w, h};
    viz_rect in = card(c, r, "Keys");
    viz_font(c->cr, l->font, 0);
    for (size_t i = 0; i < DP_ARRAY_LEN(keys); i++) {
        double y = in.y + rh * ((double)i + 0.8);
        viz_font(c->cr, l->font, 1);
        viz_set(c->cr, VIZ_ACCENT);
        viz_text(c->cr, in.x, y, keys[i][0], 0, in.w * 0.3);
        viz_font(c->cr, l->font, 0);
        viz_set(c->cr, VIZ_INK);
        viz_text(c->cr, in.x + in.w * 0.32, y, keys[i][1], 0, in.w * 0.68);
    }
}

static void lines_card(viz_ctx *c, const char *title, char lines[][VIZ_INSPECT_WIDTH], int n)
{
    const viz_layout *l = &c->lay;
    double s = l->s, rh = l->font_small * 1.45;
    double w = fmin(l->cluster.w * 0.6, 420 * s), h = l->font * 2.6 + rh * n;
    viz_rect r = {l->cluster.x + l->cluster.w - w - 6 * s, l->cluster.y + 6 * s, w, h};
    viz_rect in = card(c, r, title);
    viz_font(c->cr, l->font_small, 0);
    viz_set(c->cr, VIZ_INK);
    for (int i = 0; i < n; i++) viz_text(c->cr, in.x, in.y + rh * (i + 0.8), lines[i], 0, in.w);
}

int viz_inspector_text(viz_ctx *c, char title[VIZ_INSPECT_WIDTH], char lines[VIZ_INSPECT_LINES][VIZ_INSPECT_WIDTH])
{
    const viz_selection *sel = &c->view->sel;
    char tb[48], tb2[48];
    int n = 0;
    if (sel->kind == VIZ_SEL_TASK) {
        const evt_task_state *tk = evt_state_task(c->st, sel->job, sel->task);
        viz_task_name(title, VIZ_INSPECT_WIDTH, sel->job, sel->task);
        if (!tk) {
            snprintf(lines[n++], VIZ_INSPECT_WIDTH, "not seen yet");
        } else {
            viz_fmt_time(tb, sizeof tb, c->t - tk->phase_since);
            int ph = sel->job == EVT_JOB_WORKER ? viz_worker_phase(c, sel->task) : tk->phase;
            snprintf(lines[n++], VIZ_INSPECT_WIDTH, "phase: %s (for %s)", viz_phase_name(ph), tb);
            snprintf(lines[n++], VIZ_INSPECT_WIDTH, "host %s · pid %lld", viz_source_string(c->src, tk->host),
                     (long long)tk->pid);
            if (sel->job == EVT_JOB_WORKER) {
                snprintf(lines[n++], VIZ_INSPECT_WIDTH, "local step %lld · %lld steps done", (long long)tk->step,
                         (long long)tk->steps_done);
                double slow = viz_model_slow(&c->src->m, sel->task);
                if (slow > 0) snprintf(lines[n++], VIZ_INSPECT_WIDTH, "a straggler: computes %g\xc3\x97 slower", slow);
                if (isfinite(tk->loss)) snprintf(lines[n++], VIZ_INSPECT_WIDTH, "last loss %.4f", tk->loss);
                viz_fmt_bytes(tb, sizeof tb, (double)tk->bytes_pulled);
                viz_fmt_bytes(tb2, sizeof tb2, (double)tk->bytes_pushed);
                snprintf(lines[n++], VIZ_INSPECT_WIDTH, "pulled %s · pushed %s", tb, tb2);
                snprintf(lines[n++], VIZ_INSPECT_WIDTH, "in flight: %d pulls, %d pushes", tk->pulls_in_flight,
                         tk->pushes_in_flight);
            } else {
                snprintf(lines[n++], VIZ_INSPECT_WIDTH, "gradients applied %lld · dropped %lld",
                         (long long)tk->applies, (long long)tk->drops);
                char note[96];
                if (viz_model_sample_note(&c->src->m, note, sizeof note))
                    snprintf(lines[n++], VIZ_INSPECT_WIDTH, "  (from the %s workers)", note);
                int nv = 0;
                for (int v = 0; v < c->src->m.n_vars; v++) nv += c->src->m.vars[v].ps == sel->task;
                snprintf(lines[n++], VIZ_INSPECT_WIDTH, "holds %d variables", nv);
            }
            if (tk->fail_reason)
                snprintf(lines[n++], VIZ_INSPECT_WIDTH, "failed: %s", viz_source_string(c->src, tk->fail_reason));
        }
    } else if (sel->kind == VIZ_SEL_PACKET) {
        const viz_packet *p = NULL;
        for (int i = 0; i < c->fr.n_pk; i++)
            if (c->fr.pk[i].worker == sel->task && c->fr.pk[i].id == sel->id && !c->fr.pk[i].dropped &&
                c->fr.pk[i].is_push == (sel->packet_kind == EVT_PUSH_BEGIN))
                p = &c->fr.pk[i];
        snprintf(title, VIZ_INSPECT_WIDTH, "%s #%llu from worker %d",
                 sel->packet_kind == EVT_PUSH_BEGIN ? "push" : "pull", (unsigned long long)sel->id,
                 sel->task);
        if (!p) {
            snprintf(lines[n++], VIZ_INSPECT_WIDTH, "delivered (no longer in flight)");
        } else {
            const viz_model *m = &c->src->m;
            snprintf(lines[n++], VIZ_INSPECT_WIDTH, "variable %s", p->var >= 0 ? viz_source_string(c->src, m->vars[p->var].name) : "?");
            snprintf(lines[n++], VIZ_INSPECT_WIDTH, "%s ps %d · local step %lld", p->is_push ? "worker ->" : "<- ",
                     p->ps, (long long)p->step);
            viz_fmt_bytes(tb, sizeof tb, (double)p->bytes);
            snprintf(lines[n++], VIZ_INSPECT_WIDTH, "%s", tb);
            viz_fmt_time(tb, sizeof tb, p->t0);
            viz_fmt_time(tb2, sizeof tb2, p->t1);
            snprintf(lines[n++], VIZ_INSPECT_WIDTH, "sent %s · arrives %s", tb, tb2);
            snprintf(lines[n++], VIZ_INSPECT_WIDTH, "%.0f%% of the way",
                     100.0 * (double)(c->t - p->t0) / (double)(p->t1 > p->t0 ? p->t1 - p->t0 : 1));
        }
    } else {
        return -1;
    }
    return n;
}

void viz_draw_inspector(viz_ctx *c)
{
    char title[VIZ_INSPECT_WIDTH], lines[VIZ_INSPECT_LINES][VIZ_INSPECT_WIDTH];
    int n = viz_inspector_text(c, title, lines);
    if (n >= 0) lines_card(c, title, lines, n);
}

void viz_draw_toast(viz_ctx *c, const char *msg)
{
    cairo_t *cr = c->cr;
    const viz_layout *l = &c->lay;
    double s = l->s;
    viz_font(cr, l->font_small, 0);
    double w = viz_text_width(cr, msg) + 24 * s, h = l->font_small * 2;
    viz_rect r = {l->cluster.x + 6 * s, l->timeline.y - h - 8 * s, w, h};
    viz_seta(cr, VIZ_INK, 0.88);
    viz_round_rect(cr, r, 6 * s);
    cairo_fill(cr);
    viz_set(cr, ((viz_rgb){1, 1, 1}));
    viz_text(cr, r.x + 12 * s, r.y + h * 0.68, msg, 0, 0);
}
