/* machine.c — one machine (`downpour local`: no ps, one task with its devices): the task
 * drawn large and centred under its own name (/job:localhost/replica:0/task:0), its phase
 * taken from the devices (computing while any computes), and each device a box of its own
 * (its colour as a header, lit in the computing colour while a compute run is open on it,
 * with the op the run starts with when the trace names it, else what is placed there).
 * Copies between devices arc from box to box above the row, forward copies (variables,
 * activations) in the pull colour, gradients in the push colour, each with an arrowhead
 * the way it goes: a disc while in flight, a faded arc for a moment after it landed. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/dp.h"
#include "viz/internal.h"

/* Position of device string id dev among the task's devices, -1 when not drawn. */
static int box_of(const uint32_t *ids, int n, uint32_t dev)
{
    for (int i = 0; i < n; i++)
        if (ids[i] == dev) return i;
    return -1;
}

/* "/job:localhost/replica:0/task:0" from a device's full name (its part before
 * "/device:"), or the worker's short name when the devices carry none. */
static void machine_name(const viz_ctx *c, uint32_t dev, char *buf, size_t n)
{
    const char *full = dev ? viz_source_string(c->src, dev) : "";
    const char *cut = strstr(full, "/device:");
    if (cut && cut > full) snprintf(buf, n, "%.*s", (int)(cut - full), full);
    else viz_task_name(buf, n, EVT_JOB_WORKER, 0);
}

static int device_busy(const viz_ctx *c, uint32_t dev)
{
    for (int d = 0; d < c->st->n_devices; d++) {
        const evt_device_state *ds = &c->st->devices[d];
        if (ds->job == EVT_JOB_WORKER && ds->task == 0 && ds->name == dev) return ds->busy > 0;
    }
    return 0;
}

/* Ops placed on dev, and the first of them that computes (not an input or a variable). */
static int placed_ops(const viz_model *m, const viz_source *s, uint32_t dev, uint32_t *first)
{
    int n = 0;
    *first = 0;
    for (size_t i = 0; i < m->n_ops; i++) {
        const viz_op *op = &m->ops[i];
        if (op->device != dev || op->is_var) continue;
        n++;
        if (!*first && op->type && strcmp(viz_source_string(s, op->type), "Placeholder"))
            *first = op->name;
    }
    return n;
}

static void draw_device(viz_ctx *c, int i, uint32_t dev)
{
    cairo_t *cr = c->cr;
    const viz_layout *l = &c->lay;
    const viz_model *m = &c->src->m;
    double s = l->s, fs = l->font_small;
    viz_rect r = l->device_box[i];
    int busy = device_busy(c, dev);
    viz_set(cr, busy ? viz_phase_color(EVT_PHASE_COMPUTING) : VIZ_PANEL);
    viz_round_rect(cr, r, 6 * s);
    cairo_fill(cr);
    double head = fs * 1.6;
    viz_set(cr, viz_device_color(viz_model_device_index(m, dev)));
    cairo_rectangle(cr, r.x + 3 * s, r.y + 3 * s, r.w - 6 * s, head);
    cairo_fill(cr);
    viz_set(cr, VIZ_INK);
    cairo_set_line_width(cr, 1.5 * s);
    viz_round_rect(cr, r, 6 * s);
    cairo_stroke(cr);
    viz_font(cr, fs, 1);
    viz_text(cr, r.x + r.w / 2, r.y + 3 * s + head * 0.72,
             viz_device_short(viz_source_string(c->src, dev)), 1, r.w - 10 * s);
    double x = r.x + 7 * s, y = r.y + head + fs * 2.0, w = r.w - 14 * s;
    viz_rgb text = busy ? (viz_rgb){1, 1, 1} : VIZ_INK;
    viz_set(cr, text);
    viz_font(cr, l->font, 1);
    if (y < r.y + r.h) viz_text(cr, x, y, busy ? "computing" : "idle", 0, w);
    /* the op the open run starts with, when the trace names it; else what is placed here */
    uint32_t op = 0, first = 0;
    for (int k = 0; busy && k < c->fr.n_run; k++)
        if (c->fr.run_dev[k] == dev) op = c->fr.run_op[k];
    int n_ops = placed_ops(m, c->src, dev, &first);
    double fsm = viz_layout_font(l, fs * 0.9);
    viz_font(cr, fsm, op ? 1 : 0);
    y += fs * 1.5;
    if (op && y < r.y + r.h - 4 * s) {
        viz_text(cr, x, y, viz_source_string(c->src, op), 0, w);
        y += fsm * 1.4;
    }
    viz_font(cr, fsm, 0);
    viz_seta(cr, text, 0.8);
    char buf[64];
    snprintf(buf, sizeof buf, "%d op%s placed", n_ops, n_ops == 1 ? "" : "s");
    if (y < r.y + r.h - 4 * s) viz_text(cr, x, y, buf, 0, w);
    y += fsm * 1.4;
    if (!op && first && y < r.y + r.h - 4 * s) viz_text(cr, x, y, viz_source_string(c->src, first), 0, w);
}

static viz_rgb copy_color(int is_push)
{
    return viz_phase_color(is_push ? EVT_PHASE_PUSHING : EVT_PHASE_PULLING);
}

/* An arrowhead at p pointing along the arc's tangent at frac. */
static void copy_arrow(cairo_t *cr, const viz_layout *l, int a, int b, int push, double frac, double size)
{
    viz_point p = viz_layout_copy_pos(l, a, b, push, frac);
    viz_point q = viz_layout_copy_pos(l, a, b, push, fmax(0, frac - 0.02));
    double dx = p.x - q.x, dy = p.y - q.y, len = hypot(dx, dy);
    if (len <= 0) return;
    dx /= len;
    dy /= len;
    double half = size * 0.65;
    cairo_move_to(cr, p.x, p.y);
    cairo_line_to(cr, p.x - dx * size - dy * half, p.y - dy * size + dx * half);
    cairo_line_to(cr, p.x - dx * size + dy * half, p.y - dy * size - dx * half);
    cairo_close_path(cr);
    cairo_fill(cr);
}

static void draw_copies(viz_ctx *c, const uint32_t *ids, int n)
{
    cairo_t *cr = c->cr;
    const viz_layout *l = &c->lay;
    double s = l->s;
    /* arcs first (landed ones faded, one per source, destination and direction), then discs */
    int drawn[VIZ_MACHINE_DEVICES][VIZ_MACHINE_DEVICES][2] = {{{0}}};
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < c->fr.n_cp; i++) {
            const viz_copy *p = &c->fr.cp[i];
            int a = box_of(ids, n, p->src), b = box_of(ids, n, p->dst);
            if (a < 0 || b < 0 || a == b) continue;
            int flying = p->t1 > c->t;
            if (pass == 0) {
                if (drawn[a][b][p->is_push] == (flying ? 2 : 1) || drawn[a][b][p->is_push] == 2) continue;
                drawn[a][b][p->is_push] = flying ? 2 : 1;
                viz_seta(cr, copy_color(p->is_push), flying ? 1 : 0.45);
                cairo_set_line_width(cr, (flying ? 3 : 2) * s);
                for (int k = 0; k <= 24; k++) {
                    viz_point q = viz_layout_copy_pos(l, a, b, p->is_push, k / 24.0);
                    if (k) cairo_line_to(cr, q.x, q.y);
                    else cairo_move_to(cr, q.x, q.y);
                }
                cairo_stroke(cr);
                copy_arrow(cr, l, a, b, p->is_push, 1, 11 * s);
                continue;
            }
            if (!flying) continue;
            double frac = p->t1 > p->t0 ? (double)(c->t - p->t0) / (double)(p->t1 - p->t0) : 1;
            viz_point q = viz_layout_copy_pos(l, a, b, p->is_push, frac);
            double rad = fmin(12, fmax(5, 3 + sqrt((double)(p->bytes > 0 ? p->bytes : 0)) / 60)) * s;
            cairo_new_sub_path(cr);
            cairo_arc(cr, q.x, q.y, rad, 0, 2 * M_PI);
            viz_set(cr, copy_color(p->is_push));
            cairo_fill_preserve(cr);
            viz_set(cr, VIZ_INK);
            cairo_set_line_width(cr, 1.5 * s);
            cairo_stroke(cr);
        }
}

/* The key under the devices: "▶ copy: variables, activations  ▶ gradient copy". */
static void draw_copy_legend(viz_ctx *c)
{
    cairo_t *cr = c->cr;
    const viz_layout *l = &c->lay;
    static const char *names[2] = {"copy: variables, activations", "gradient copy"};
    double fs = viz_layout_font(l, l->font_small * 0.85), aw = fs * 0.8;
    double x = l->worker_box[0].x + 12 * l->s, y = l->legend_y;
    viz_font(cr, fs, 0);
    for (int d = 0; d < 2; d++) {
        viz_set(cr, copy_color(d));
        cairo_move_to(cr, x + aw, y - fs * 0.35);
        cairo_line_to(cr, x, y - fs * 0.35 - aw * 0.6);
        cairo_line_to(cr, x, y - fs * 0.35 + aw * 0.6);
        cairo_close_path(cr);
        cairo_fill(cr);
        x += aw + fs * 0.5;
        viz_set(cr, VIZ_INK);
        x += viz_text(cr, x, y, names[d], 0, 0) + fs * 1.2;
    }
    viz_set(cr, VIZ_MUTED);
    viz_text(cr, x, y, "faded: just landed", 0, 0);
}

void viz_draw_machine(viz_ctx *c)
{
    cairo_t *cr = c->cr;
    const viz_layout *l = &c->lay;
    double s = l->s;
    viz_rect b = l->worker_box[0];
    const evt_task_state *tk = evt_state_task(c->st, EVT_JOB_WORKER, 0);
    uint32_t ids[VIZ_MACHINE_DEVICES];
    int n = viz_model_task_devices(&c->src->m, EVT_JOB_WORKER, 0, ids, VIZ_MACHINE_DEVICES);
    if (n > l->n_device_boxes) n = l->n_device_boxes;
    int busy = 0;
    for (int i = 0; i < n; i++) busy += device_busy(c, ids[i]);
    /* the phase from the devices: computing while any computes; otherwise a transfer in
     * flight on one machine is a copy between its devices */
    int phase = viz_worker_phase(c, 0);
    if (busy && (phase == EVT_PHASE_IDLE || phase == EVT_PHASE_PULLING || phase == EVT_PHASE_PUSHING))
        phase = EVT_PHASE_COMPUTING;
    const char *pn = phase == EVT_PHASE_PULLING || phase == EVT_PHASE_PUSHING ? "copying"
                     : tk && !tk->started ? "not started" : viz_phase_name(phase);
    viz_set(cr, viz_phase_color(phase));
    viz_round_rect(cr, b, 10 * s);
    cairo_fill(cr);
    viz_rect inner = {b.x + 6 * s, b.y + 6 * s, b.w - 12 * s, b.h - 12 * s};
    viz_set(cr, VIZ_BG);
    viz_round_rect(cr, inner, 7 * s);
    cairo_fill(cr);
    int sel = c->view->sel.kind == VIZ_SEL_TASK && c->view->sel.job == EVT_JOB_WORKER && c->view->sel.task == 0;
    viz_set(cr, sel ? VIZ_ACCENT : VIZ_INK);
    cairo_set_line_width(cr, (sel ? 4 : 1.5) * s);
    viz_round_rect(cr, b, 10 * s);
    cairo_stroke(cr);
    char buf[200];
    machine_name(c, n ? ids[0] : 0, buf, sizeof buf);
    double x = inner.x + 10 * s;
    viz_set(cr, VIZ_INK);
    viz_font(cr, l->font, 1);
    viz_text(cr, x, inner.y + l->font * 1.25, buf, 0, inner.w - 20 * s);
    double pw = viz_text(cr, x, inner.y + l->font * 2.6, pn, 0, 0);
    viz_font(cr, l->font_small, 0);
    char step[96] = "";
    if (tk && isfinite(tk->loss)) snprintf(step, sizeof step, "step %lld · loss %.3f", (long long)tk->step, tk->loss);
    else if (tk) snprintf(step, sizeof step, "step %lld", (long long)tk->step);
    if (n > 1) snprintf(buf, sizeof buf, "%d of %d devices computing%s%s", busy, n, step[0] ? "  ·  " : "", step);
    else snprintf(buf, sizeof buf, "%s", step);
    viz_text(cr, x + pw + 12 * s, inner.y + l->font * 2.6, buf, 0, inner.w - pw - 30 * s);
    draw_copies(c, ids, n);
    for (int i = 0; i < n; i++) draw_device(c, i, ids[i]);
    draw_copy_legend(c);
}

int viz_machine_describe(viz_source *s, const viz_view *v, char *buf, size_t n)
{
    viz_ctx c;
    int k = 0;
    size_t len = 0;
    viz_ctx_begin(&c, NULL, s, v, v->t, v->width, v->height, 1);
    uint32_t ids[VIZ_MACHINE_DEVICES];
    int nd = c.lay.machine ? viz_model_task_devices(&s->m, EVT_JOB_WORKER, 0, ids, VIZ_MACHINE_DEVICES) : 0;
    if (nd > c.lay.n_device_boxes) nd = c.lay.n_device_boxes;
    if (n) buf[0] = 0;
    for (; k < nd && len < n; k++) {
        viz_rect r = c.lay.device_box[k];
        viz_rgb col = viz_device_color(viz_model_device_index(&s->m, ids[k]));
        int w = snprintf(buf + len, n - len, "device %s %.0f,%.0f,%.0f,%.0f #%02x%02x%02x\n",
                         viz_device_short(viz_source_string(s, ids[k])), r.x, r.y, r.w, r.h,
                         (int)lround(col.r * 255), (int)lround(col.g * 255), (int)lround(col.b * 255));
        if (w < 0) break;
        len += (size_t)w;
    }
    viz_ctx_end(&c);
    return k;
}
