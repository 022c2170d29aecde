/* draw_util.c — the palette and the small cairo helpers every part of a frame uses.
 * Colours are colour-blind safe: worker phases use Okabe-Ito, variables Paul Tol's
 * "muted" set, devices Tol's "light" set; text is near-black on an off-white page, which
 * survives washed-out classroom projectors better than a dark theme. Text uses cairo's
 * toy API with DejaVu Sans (Debian fonts-dejavu-core). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dp.h"
#include "viz/internal.h"

#define RGB(h) {((h) >> 16 & 255) / 255.0, ((h) >> 8 & 255) / 255.0, ((h) & 255) / 255.0}

const viz_rgb VIZ_BG = RGB(0xF6F5F1), VIZ_INK = RGB(0x1E1E24), VIZ_MUTED = RGB(0x6B6B76),
              VIZ_PANEL = RGB(0xFFFFFF), VIZ_LINE = RGB(0xC9C8C2), VIZ_ACCENT = RGB(0x0072B2);

static const viz_rgb phase_colors[VIZ_N_PHASES] = {
    RGB(0xD9D9D9), /* idle */
    RGB(0x56B4E9), /* pulling: sky blue */
    RGB(0x009E73), /* computing: bluish green */
    RGB(0xE69F00), /* pushing: orange */
    RGB(0xF0E442), /* barrier: yellow */
    RGB(0xCC79A7), /* ssp blocked: reddish purple */
    RGB(0xD55E00), /* dead: vermillion */
    RGB(0x8C8C8C), /* stopped */
    RGB(0x7E76B6), /* paced (--pace): muted lavender, away from sky blue and purple for
                    * protan/deutan eyes too */
    RGB(0x0072B2), /* evaluating (the chief, viewer-only): Okabe-Ito blue, the colour of the
                    * evaluation markers and the accuracy curve */
};

static const viz_rgb var_colors[] = {
    RGB(0x332288), RGB(0x44AA99), RGB(0xCC6677), RGB(0x117733), RGB(0x882255),
    RGB(0x88CCEE), RGB(0x999933), RGB(0xAA4499), RGB(0xDDCC77),
};

static const viz_rgb device_colors[] = {
    RGB(0x77AADD), RGB(0xEE8866), RGB(0xEEDD88), RGB(0xFFAABB), RGB(0x99DDFF),
    RGB(0x44BB99), RGB(0xBBCC33), RGB(0xAAAA00),
};

viz_rgb viz_phase_color(int phase)
{
    return phase >= 0 && phase < VIZ_N_PHASES ? phase_colors[phase] : phase_colors[0];
}

viz_rgb viz_var_color(int i)
{
    return i < 0 ? VIZ_MUTED : var_colors[i % (int)DP_ARRAY_LEN(var_colors)];
}

viz_rgb viz_device_color(int i)
{
    return i < 0 ? VIZ_LINE : device_colors[i % (int)DP_ARRAY_LEN(device_colors)];
}

viz_rgb viz_act_color(int act)
{
    static const int phase_of[VIZ_N_ACT] = {EVT_PHASE_PULLING, EVT_PHASE_COMPUTING,
                                            EVT_PHASE_PUSHING, EVT_PHASE_BARRIER,
                                            EVT_PHASE_PACED, VIZ_PHASE_EVALUATING};
    return viz_phase_color(phase_of[act]);
}

const char *viz_phase_name(int phase)
{
    return phase == VIZ_PHASE_EVALUATING ? "evaluating" : evt_phase_name(phase);
}

void viz_set(cairo_t *cr, viz_rgb c) { cairo_set_source_rgb(cr, c.r, c.g, c.b); }
void viz_seta(cairo_t *cr, viz_rgb c, double a) { cairo_set_source_rgba(cr, c.r, c.g, c.b, a); }

void viz_round_rect(cairo_t *cr, viz_rect r, double rad)
{
    if (rad * 2 > r.w) rad = r.w / 2;
    if (rad * 2 > r.h) rad = r.h / 2;
    cairo_new_sub_path(cr);
    cairo_arc(cr, r.x + r.w - rad, r.y + rad, rad, -M_PI / 2, 0);
    cairo_arc(cr, r.x + r.w - rad, r.y + r.h - rad, rad, 0, M_PI / 2);
    cairo_arc(cr, r.x + rad, r.y + r.h - rad, rad, M_PI / 2, M_PI);
    cairo_arc(cr, r.x + rad, r.y + rad, rad, M_PI, 3 * M_PI / 2);
    cairo_close_path(cr);
}

void viz_font(cairo_t *cr, double size, int bold)
{
    cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL,
                           bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, size);
}

double viz_text_width(cairo_t *cr, const char *s)
{
    cairo_text_extents_t ex;
    cairo_text_extents(cr, s, &ex);
    return ex.x_advance;
}

/* The test hook rides on the cairo context as user data, so that no global is needed. */
typedef struct text_hook { viz_text_hook fn; void *ctx; } text_hook;
static const cairo_user_data_key_t text_hook_key;

static void text_hook_free(void *p) { free(p); }

void viz_text_hook_set(cairo_t *cr, viz_text_hook fn, void *ctx)
{
    text_hook *h = NULL;
    if (fn) {
        h = xmalloc(sizeof *h);
        h->fn = fn;
        h->ctx = ctx;
    }
    cairo_set_user_data(cr, &text_hook_key, h, h ? text_hook_free : NULL);
}

static void text_hook_call(cairo_t *cr, const char *full, const char *shown, int cut, double x0, double y,
                           double w)
{
    text_hook *h = cairo_get_user_data(cr, &text_hook_key);
    if (!h) return;
    cairo_matrix_t fm, ctm;
    cairo_get_font_matrix(cr, &fm);
    cairo_get_matrix(cr, &ctm);
    cairo_font_extents_t fe;
    cairo_font_extents(cr, &fe);
    double ax = x0, ay = y - fe.ascent, bx = x0 + w, by = y + fe.descent;
    cairo_user_to_device(cr, &ax, &ay);
    cairo_user_to_device(cr, &bx, &by);
    viz_rect box = {fmin(ax, bx), fmin(ay, by), fabs(bx - ax), fabs(by - ay)};
    h->fn(h->ctx, full, shown, fabs(fm.yy * ctm.yy), cut, box);
}

double viz_text(cairo_t *cr, double x, double y, const char *s, int align, double max_w)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", s);
    double w = viz_text_width(cr, buf);
    if (max_w > 0 && w > max_w) {
        size_t n = strlen(buf);
        while (n > 0 && w > max_w) {
            n--;
            while (n > 0 && ((unsigned char)buf[n] & 0xC0) == 0x80) n--;   /* UTF-8 boundary */
            snprintf(buf + n, sizeof buf - n, "\xe2\x80\xa6");
            w = viz_text_width(cr, buf);
        }
    }
    double x0 = align == 1 ? x - w / 2 : align == 2 ? x - w : x;
    text_hook_call(cr, s, buf, strcmp(s, buf) != 0, x0, y, w);
    cairo_move_to(cr, x0, y);
    cairo_show_text(cr, buf);
    cairo_new_path(cr);   /* no current point: a later arc must not draw a line from here */
    return w;
}

void viz_fmt_bytes(char *buf, size_t n, double b)
{
    if (b >= 1e9) snprintf(buf, n, "%.1f GB", b / 1e9);
    else if (b >= 1e6) snprintf(buf, n, "%.1f MB", b / 1e6);
    else if (b >= 1e3) snprintf(buf, n, "%.1f kB", b / 1e3);
    else snprintf(buf, n, "%.0f B", b);
}

void viz_fmt_count(char *buf, size_t n, long long v)
{
    char digits[32];
    int len = snprintf(digits, sizeof digits, "%lld", v < 0 ? -v : v), o = 0;
    char out[48];
    if (v < 0) out[o++] = '-';
    for (int i = 0; i < len; i++) {
        if (i > 0 && (len - i) % 3 == 0) out[o++] = ',';
        out[o++] = digits[i];
    }
    out[o] = 0;
    snprintf(buf, n, "%s", out);
}

void viz_fmt_time(char *buf, size_t n, int64_t ns)
{
    double s = (double)ns / 1e9;
    if (s >= 60) snprintf(buf, n, "%d:%06.3f", (int)(s / 60), fmod(s, 60));
    else if (s >= 1) snprintf(buf, n, "%.3f s", s);
    else snprintf(buf, n, "%.3f ms", s * 1e3);
}

void viz_task_name(char *buf, size_t n, int job, int task)
{
    snprintf(buf, n, "/job:%s/task:%d", job == EVT_JOB_PS ? "ps" : job == EVT_JOB_WORKER ? "worker"
                                                                                      : "client",
             task);
}

const char *viz_device_short(const char *full)
{
    const char *p = strstr(full, "device:");
    return p ? p + 7 : full;
}

void viz_band(cairo_t *cr, double x0, double y0, double gx, double y1, double wt, double wb, int d)
{
    double sx = d ? 1 : -1;
    cairo_move_to(cr, x0, y0);
    cairo_line_to(cr, x0 + sx * wt, y0);
    cairo_line_to(cr, gx + sx * wb, y1);
    cairo_line_to(cr, gx, y1);
    cairo_close_path(cr);
    viz_seta(cr, viz_phase_color(d ? EVT_PHASE_PUSHING : EVT_PHASE_PULLING), 0.7);
    cairo_fill(cr);
}
