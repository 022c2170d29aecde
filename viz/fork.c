/* fork.c — "fork from here" on the viewer's side: the small chooser that key `f` opens
 * over a paused replay (which one key to change: add a backup worker, switch to async or
 * sync, slow a worker, add a ps), built from the run's own metadata so each choice is a
 * concrete KEY=VALUE. The viewer only asks for the fork: the window hands the choice to
 * the callback in its options (viz_app_options.fork), which the command layer wires to
 * the simulator, and shows what comes back beside the replay (compare.c). Pure drawing
 * and string building; no I/O. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/dp.h"
#include "viz/internal.h"

int viz_fork_choices(const viz_source *s, viz_fork_choice *out)
{
    const viz_model *m = &s->m;
    int n = 0, sync = !m->run_mode[0] || !strcmp(m->run_mode, "sync");
    int workers = m->meta_workers > m->n_workers ? m->meta_workers : m->n_workers;
    if (sync) {
        snprintf(out[n].set, sizeof out[n].set, "backup_workers=%d", m->run_backup + 1);
        snprintf(out[n].label, sizeof out[n].label, "add a backup worker");
        n++;
    }
    snprintf(out[n].set, sizeof out[n].set, "mode=%s", sync ? "async" : "sync");
    snprintf(out[n].label, sizeof out[n].label, "switch to %s", sync ? "async" : "sync");
    n++;
    if (workers > 0) {   /* the last worker: never the chief when there are two or more */
        snprintf(out[n].set, sizeof out[n].set, "straggler=worker:%dx4", workers - 1);
        snprintf(out[n].label, sizeof out[n].label, "slow worker %d \xc3\x97" "4", workers - 1);
        n++;
    }
    int ps = m->meta_ps > m->n_ps ? m->meta_ps : m->n_ps;
    snprintf(out[n].set, sizeof out[n].set, "ps=%d", (ps > 0 ? ps : 1) + 1);
    snprintf(out[n].label, sizeof out[n].label, "add a ps");
    n++;
    dp_assert("viz: fork choices overflow", n <= VIZ_FORK_CHOICES);
    return n;
}

void viz_fork_menu_layout(const viz_layout *l, int n, viz_rect *card, viz_rect *rows)
{
    double s = l->s, rh = l->font * 1.9, pad = 16 * s;
    double w = fmin(l->cluster.w * 0.8, 720 * s), h = pad + l->font * 2.2 + rh * n + l->font_small * 2.2 + pad;
    *card = (viz_rect){l->cluster.x + (l->cluster.w - w) / 2,
                       fmax(l->top.y + l->top.h + 6 * s, l->cluster.y + (l->cluster.h - h) / 2), w, h};
    for (int i = 0; i < n; i++)
        rows[i] = (viz_rect){card->x + pad, card->y + pad + l->font * 2.2 + rh * i, w - 2 * pad, rh * 0.86};
}

void viz_draw_fork_menu(viz_ctx *c)
{
    cairo_t *cr = c->cr;
    const viz_layout *l = &c->lay;
    const viz_view *v = c->view;
    double s = l->s, pad = 16 * s;
    viz_fork_choice ch[VIZ_FORK_CHOICES];
    viz_rect card, rows[VIZ_FORK_CHOICES];
    int n = viz_fork_choices(c->src, ch);
    viz_fork_menu_layout(l, n, &card, rows);
    viz_seta(cr, VIZ_INK, 0.18);
    viz_round_rect(cr, (viz_rect){card.x + 4 * s, card.y + 5 * s, card.w, card.h}, 10 * s);
    cairo_fill(cr);
    viz_set(cr, VIZ_PANEL);
    viz_round_rect(cr, card, 10 * s);
    cairo_fill_preserve(cr);
    viz_set(cr, VIZ_INK);
    cairo_set_line_width(cr, 2 * s);
    cairo_stroke(cr);
    char buf[200];
    snprintf(buf, sizeof buf, "Fork at global step %lld: change one key",
             (long long)c->st->global_step);
    viz_font(cr, l->font, 1);
    viz_text(cr, card.x + pad, card.y + pad + l->font, buf, 0, card.w - 2 * pad);
    for (int i = 0; i < n; i++) {
        int on = v->fork_menu == i + 1;
        viz_rect r = rows[i];
        if (on) {
            viz_set(cr, VIZ_ACCENT);
            viz_round_rect(cr, r, 6 * s);
            cairo_fill(cr);
        }
        viz_rgb fg = on ? (viz_rgb){1, 1, 1} : VIZ_INK;
        double y = r.y + r.h * 0.68;
        viz_font(cr, l->font, 1);
        viz_set(cr, on ? fg : VIZ_ACCENT);
        snprintf(buf, sizeof buf, "%d", i + 1);
        viz_text(cr, r.x + 10 * s, y, buf, 0, 0);
        viz_set(cr, fg);
        viz_text(cr, r.x + 36 * s, y, ch[i].label, 0, r.w * 0.5);
        viz_font(cr, l->font_small, 0);
        viz_text(cr, r.x + r.w - 10 * s, y, ch[i].set, 2, r.w * 0.42);
    }
    viz_font(cr, l->font_small, 0);
    viz_set(cr, VIZ_MUTED);
    viz_text(cr, card.x + pad, card.y + card.h - pad, "f or \xe2\x86\x91 \xe2\x86\x93 choose \xc2\xb7 "
             "Enter: the simulator continues from here, beside this run \xc2\xb7 Esc cancel", 0, card.w - 2 * pad);
}
