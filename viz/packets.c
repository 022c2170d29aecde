/* packets.c — what travels on the edges: every pull (ps -> worker) and push (worker -> ps)
 * in flight, a disc of its variable's colour sized by bytes, placed by interpolating
 * between its begin and end times, with an arrowhead in its direction's colour (pull sky
 * blue, push orange: the timeline's and the traffic panel's) pointing the way it travels
 * and a short bar across the edge where it will land, so a still frame says which way
 * each transfer goes; a label ("pull hidden/weights 401 kB") where there is room; and a
 * legend line naming the two colours. Gradients dropped as stale die greyed and crossed
 * under their ps. Past VIZ_BATCH_PACKETS in flight: smaller discs, one fill per colour,
 * no arrows or labels (thousands would cost more than a frame). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dp.h"
#include "viz/internal.h"

/* Past this many packets in flight (many ps, each variable its own message) they are
 * drawn smaller, in one fill per variable colour and without outlines: thousands of
 * separate arcs would cost more than a frame, and full-size ones hide everything. */
#define VIZ_BATCH_PACKETS 512
/* Labels only while this few packets are in flight (beyond, they would be a wall). */
#define VIZ_LABEL_PACKETS 24
#define VIZ_MAX_LABELS 64

static double packet_radius(const viz_packet *p, double s)
{
    return fmin(13, fmax(6, 3 + sqrt((double)(p->bytes > 0 ? p->bytes : 0)) / 60)) * s;
}

static double packet_frac(const viz_ctx *c, const viz_packet *p)
{
    double frac = p->t1 > p->t0 ? (double)(c->t - p->t0) / (double)(p->t1 - p->t0) : 1;
    if (frac > 0.97 && viz_source_is_live(c->src)) frac = 0.97;
    return frac;
}

/* The unit vector of travel: from the sender's end of the edge to the receiver's. */
static viz_point travel_dir(const viz_layout *l, const viz_packet *p)
{
    viz_point a = viz_layout_packet_pos(l, p->ps, p->worker, p->is_push, 0);
    viz_point b = viz_layout_packet_pos(l, p->ps, p->worker, p->is_push, 1);
    double dx = b.x - a.x, dy = b.y - a.y, len = hypot(dx, dy);
    return len > 0 ? (viz_point){dx / len, dy / len} : (viz_point){0, p->is_push ? -1 : 1};
}

static viz_rgb dir_color(int is_push)
{
    return viz_phase_color(is_push ? EVT_PHASE_PUSHING : EVT_PHASE_PULLING);
}

/* An arrowhead whose base sits just outside the disc (clear of its outline ring) and whose
 * tip points along u. */
static void arrowhead(cairo_t *cr, viz_point q, viz_point u, double rad, double s)
{
    double gap = rad + 3 * s, len = fmax(8 * s, rad * 1.1), half = len * 0.72;
    double bx = q.x + u.x * gap, by = q.y + u.y * gap;
    cairo_move_to(cr, bx + u.x * len, by + u.y * len);
    cairo_line_to(cr, bx - u.y * half, by + u.x * half);
    cairo_line_to(cr, bx + u.y * half, by - u.x * half);
    cairo_close_path(cr);
    cairo_fill(cr);
}

/* A short bar across the edge at the receiver's end: where this transfer lands. */
static void landing_mark(cairo_t *cr, const viz_layout *l, const viz_packet *p, viz_point u)
{
    double s = l->s, half = 6 * s;
    viz_point d = viz_layout_packet_pos(l, p->ps, p->worker, p->is_push, 1);
    d.x -= u.x * 4 * s;
    d.y -= u.y * 4 * s;
    cairo_set_line_width(cr, 3 * s);
    cairo_move_to(cr, d.x - u.y * half, d.y + u.x * half);
    cairo_line_to(cr, d.x + u.y * half, d.y - u.x * half);
    cairo_stroke(cr);
}

static void draw_dropped(viz_ctx *c, const viz_packet *p)
{
    cairo_t *cr = c->cr;
    const viz_layout *l = &c->lay;
    double s = l->s, rad = packet_radius(p, s);
    double age = (double)(c->t - p->t0);
    double span = (double)(c->src->m.dur_n[1] ? c->src->m.dur_sum[1] / (double)c->src->m.dur_n[1]
                                              : (double)c->src->m.bw);
    double a = fmax(0.15, 1 - age / fmax(span, 1));
    viz_point q = viz_layout_packet_pos(l, p->ps, p->worker, 1, 1.0);
    q.y += rad * 1.6 + (p->worker % 3) * rad * 0.8;   /* just under the ps, falling */
    cairo_new_sub_path(cr);
    cairo_arc(cr, q.x, q.y, rad, 0, 2 * M_PI);
    viz_seta(cr, VIZ_MUTED, 0.55 * a);
    cairo_fill(cr);
    viz_seta(cr, viz_phase_color(EVT_PHASE_DEAD), a);
    cairo_set_line_width(cr, 3 * s);
    cairo_move_to(cr, q.x - rad, q.y - rad);
    cairo_line_to(cr, q.x + rad, q.y + rad);
    cairo_move_to(cr, q.x + rad, q.y - rad);
    cairo_line_to(cr, q.x - rad, q.y + rad);
    cairo_stroke(cr);
}

static void draw_packet(viz_ctx *c, const viz_packet *p)
{
    cairo_t *cr = c->cr;
    const viz_layout *l = &c->lay;
    double s = l->s, rad = packet_radius(p, s);
    if (p->dropped) {
        draw_dropped(c, p);
        return;
    }
    viz_point q = viz_layout_packet_pos(l, p->ps, p->worker, p->is_push, packet_frac(c, p));
    viz_point u = travel_dir(l, p);
    viz_set(cr, dir_color(p->is_push));
    landing_mark(cr, l, p, u);
    arrowhead(cr, q, u, rad, s);
    cairo_new_sub_path(cr);
    cairo_arc(cr, q.x, q.y, rad, 0, 2 * M_PI);
    viz_set(cr, viz_var_color(p->var));
    cairo_fill_preserve(cr);
    int sel = c->view->sel.kind == VIZ_SEL_PACKET && c->view->sel.task == p->worker &&
              c->view->sel.id == p->id;
    viz_set(cr, sel ? VIZ_ACCENT : p->is_push ? VIZ_INK : VIZ_PANEL);
    cairo_set_line_width(cr, (sel ? 4 : 2) * s);
    cairo_stroke(cr);
}

static void draw_packets_batched(viz_ctx *c)
{
    cairo_t *cr = c->cr;
    const viz_layout *l = &c->lay;
    int n = c->fr.n_pk, nv = c->src->m.n_vars + 1;
    double shrink = fmax(0.35, sqrt((double)VIZ_BATCH_PACKETS / n));   /* a stream, not confetti */
    int *start = xcalloc((size_t)nv + 1, sizeof *start), *order = xmalloc((size_t)n * sizeof *order);
    for (int i = 0; i < n; i++) start[c->fr.pk[i].var + 1]++;   /* var -1 (unknown) first */
    for (int v = 1; v <= nv; v++) start[v] += start[v - 1];
    for (int v = nv; v > 0; v--) start[v] = start[v - 1];
    start[0] = 0;
    for (int i = 0; i < n; i++) order[start[c->fr.pk[i].var + 1]++] = i;
    for (int k = 0; k < n;) {
        int var = c->fr.pk[order[k]].var;
        for (; k < n && c->fr.pk[order[k]].var == var; k++) {
            const viz_packet *p = &c->fr.pk[order[k]];
            if (p->dropped) continue;
            double frac = p->t1 > p->t0 ? (double)(c->t - p->t0) / (double)(p->t1 - p->t0) : 1;
            viz_point q = viz_layout_packet_pos(l, p->ps, p->worker, p->is_push, frac);
            cairo_new_sub_path(cr);
            cairo_arc(cr, q.x, q.y, packet_radius(p, l->s) * shrink, 0, 2 * M_PI);
        }
        viz_set(cr, viz_var_color(var));
        cairo_fill(cr);
    }
    free(order);
    free(start);
}

/* Bytes in three significant figures: "401 kB", "5.12 kB", "512 B". */
static void short_bytes(char *buf, size_t n, double b)
{
    if (b >= 1e9) snprintf(buf, n, "%.3g GB", b / 1e9);
    else if (b >= 1e6) snprintf(buf, n, "%.3g MB", b / 1e6);
    else if (b >= 1e3) snprintf(buf, n, "%.3g kB", b / 1e3);
    else snprintf(buf, n, "%.0f B", b);
}

static int overlaps(viz_rect a, viz_rect b)
{
    return a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
}

/* Whether r is free: inside the cluster, off every box, every packet in flight (disc and
 * arrowhead) and every label placed so far. */
static int label_room(const viz_ctx *c, viz_rect r, int self, const viz_rect *placed, int n)
{
    const viz_layout *l = &c->lay;
    for (int i = 0; i < c->fr.n_pk; i++) {
        const viz_packet *p = &c->fr.pk[i];
        if (p->dropped || i == self) continue;
        viz_point q = viz_layout_packet_pos(l, p->ps, p->worker, p->is_push, packet_frac(c, p));
        double reach = packet_radius(p, l->s) * 2.2 + 12 * l->s;   /* disc, gap and arrowhead */
        if (overlaps(r, (viz_rect){q.x - reach, q.y - reach, 2 * reach, 2 * reach})) return 0;
    }
    if (r.x < l->cluster.x || r.y < l->cluster.y || r.x + r.w > l->cluster.x + l->cluster.w ||
        r.y + r.h > l->cluster.y + l->cluster.h)
        return 0;
    for (int p = 0; p < l->n_ps; p++)
        if (overlaps(r, l->ps_box[p])) return 0;
    for (int w = 0; w < l->n_workers && l->worker_box; w++)
        if (overlaps(r, l->worker_box[w])) return 0;
    for (int i = 0; i < n; i++)
        if (overlaps(r, placed[i])) return 0;
    return 1;
}

/* "pull hidden/weights 401 kB" beside each packet, on the side away from its arrow's
 * travel (to its right, or left when the right is taken), when it fits. */
static void draw_labels(viz_ctx *c)
{
    cairo_t *cr = c->cr;
    const viz_layout *l = &c->lay;
    const viz_model *m = &c->src->m;
    double s = l->s, fs = viz_layout_font(l, l->font_small * 0.85);
    viz_rect placed[VIZ_MAX_LABELS];
    int n = 0, live = 0;
    for (int i = 0; i < c->fr.n_pk; i++) live += !c->fr.pk[i].dropped;
    if (live == 0 || live > VIZ_LABEL_PACKETS) return;
    viz_font(cr, fs, 0);
    for (int i = 0; i < c->fr.n_pk && n < VIZ_MAX_LABELS; i++) {
        const viz_packet *p = &c->fr.pk[i];
        if (p->dropped) continue;
        char sz[32], text[256];
        short_bytes(sz, sizeof sz, (double)p->bytes);
        const char *name = p->var >= 0 && p->var < m->n_vars ? viz_source_string(c->src, m->vars[p->var].name) : "";
        snprintf(text, sizeof text, "%s%s%s %s", p->is_push ? "push" : "pull", name[0] ? " " : "", name, sz);
        double rad = packet_radius(p, s), w = viz_text_width(cr, text) + 8 * s, h = fs * 1.35;
        viz_point q = viz_layout_packet_pos(l, p->ps, p->worker, p->is_push, packet_frac(c, p));
        viz_rect r = {q.x + rad + 7 * s, q.y - h / 2, w, h};
        if (!label_room(c, r, i, placed, n)) r.x = q.x - rad - 7 * s - w;
        if (!label_room(c, r, i, placed, n)) continue;
        placed[n++] = r;
        viz_seta(cr, VIZ_BG, 0.88);
        viz_round_rect(cr, r, 3 * s);
        cairo_fill(cr);
        viz_set(cr, VIZ_INK);
        viz_text(cr, r.x + 4 * s, r.y + h * 0.74, text, 0, 0);
    }
}

/* The key to the arrows, right-aligned under the ps row: "▶ pull ps → worker  ▶ push
 * worker → ps  · disc: variable, size: bytes". */
static void draw_legend(viz_ctx *c)
{
    cairo_t *cr = c->cr;
    const viz_layout *l = &c->lay;
    double s = l->s, fs = viz_layout_font(l, l->font_small * 0.85);
    static const char *names[2] = {"pull ps \xe2\x86\x92 worker", "push worker \xe2\x86\x92 ps"};
    const char *tail = "disc: variable, size: bytes";
    viz_font(cr, fs, 0);
    double aw = fs * 0.8, gap = fs * 0.5, w = 0;
    for (int d = 0; d < 2; d++) w += aw + gap + viz_text_width(cr, names[d]) + fs;
    double tw = viz_text_width(cr, tail);
    double avail = l->cluster.w - 8 * s;
    if (w + tw > avail) tail = "";
    else w += tw;
    if (w > avail) return;
    double x = l->cluster.x + l->cluster.w - 4 * s - w, y = l->ps_area.y + l->ps_area.h + fs * 1.6;
    viz_seta(cr, VIZ_BG, 0.9);
    viz_round_rect(cr, (viz_rect){x - 4 * s, y - fs * 1.05, w + 8 * s, fs * 1.45}, 3 * s);
    cairo_fill(cr);
    for (int d = 0; d < 2; d++) {
        viz_set(cr, dir_color(d));
        double cy = y - fs * 0.35;
        cairo_move_to(cr, x + aw, cy);
        cairo_line_to(cr, x, cy - aw * 0.6);
        cairo_line_to(cr, x, cy + aw * 0.6);
        cairo_close_path(cr);
        cairo_fill(cr);
        x += aw + gap;
        viz_set(cr, VIZ_INK);
        x += viz_text(cr, x, y, names[d], 0, 0) + fs;
    }
    if (tail[0]) {
        viz_set(cr, VIZ_MUTED);
        viz_text(cr, x, y, tail, 0, 0);
    }
}

void viz_draw_packets(viz_ctx *c)
{
    const viz_layout *l = &c->lay;
    if (l->dense) return;
    if (l->n_ps > 0 && l->n_workers > 0) draw_legend(c);
    if (c->fr.n_pk > VIZ_BATCH_PACKETS) {
        draw_packets_batched(c);
        for (int i = 0; i < c->fr.n_pk; i++)   /* dying gradients and the selection on top */
            if (c->fr.pk[i].dropped || (c->view->sel.kind == VIZ_SEL_PACKET &&
                                        c->view->sel.task == c->fr.pk[i].worker &&
                                        c->view->sel.id == c->fr.pk[i].id))
                draw_packet(c, &c->fr.pk[i]);
        return;
    }
    for (int i = 0; i < c->fr.n_pk; i++) draw_packet(c, &c->fr.pk[i]);
    draw_labels(c);
}
