/* layout.h — the viewer's geometry, kept apart from drawing so that it can be tested
 * without pixels: where the top bar, cluster, side panels and timeline go for a frame
 * size, where each ps box (or compact ps cell), variable bar and worker box (or the dense
 * worker grid) sits, and where packets travel. Pure: the same input gives the same rectangles. Sizes are
 * in pixels; `s` is the scale that keeps fonts readable on a projector. */
#ifndef VIZ_LAYOUT_H
#define VIZ_LAYOUT_H

#include <stdint.h>

typedef struct viz_rect { double x, y, w, h; } viz_rect;
typedef struct viz_point { double x, y; } viz_point;

/* Beyond this many workers, workers become a dense grid of cells and traffic becomes
 * bands (no per-worker boxes or packets). */
#define VIZ_DENSE_WORKERS 64
#define VIZ_N_PANELS 5   /* loss, accuracy, throughput, staleness, ps traffic */
/* Variable bars shown per ps box before the rest are summed into one "+N more" bar. */
#define VIZ_MAX_BARS 8
/* Beyond this many ps, or when a ps box would be narrower than VIZ_PS_MIN_BOX_W * s (or
 * 8 small-font ems, whichever is wider), ps become compact cells (index, load strip of
 * their variables, traffic) in a few rows. */
#define VIZ_COMPACT_PS 8
#define VIZ_PS_MIN_BOX_W 120

typedef struct viz_layout_input {
    int width, height;
    double dpr;              /* HiDPI ratio: raises the minimum font size */
    int n_ps, n_workers;
    int n_vars;
    const int *var_ps;       /* [n_vars]: ps task of each variable, -1 unplaced */
    const int64_t *var_bytes;/* [n_vars] */
    int side_panels;         /* 1: right-hand panels; 0 (compare halves): none */
    int timeline_lanes;      /* lanes wanted in the timeline (tasks + aggregate) */
    int machine_devices;     /* one machine (`downpour local`: no ps, one task): its device
                              * count, drawn as boxes inside one large task box; 0 otherwise */
} viz_layout_input;

/* One machine's devices drawn as boxes, at most this many (the rest are not drawn). */
#define VIZ_MACHINE_DEVICES 8

/* Projector mode: no text below this many pixels, whatever the frame size. */
#define VIZ_PROJECTOR_FONT 18.0

typedef struct viz_layout {
    int width, height;
    double s;                /* scale factor (1 at 1280x720, dpr 1) */
    double font;             /* body font size, px (never below 15 * dpr) */
    double font_small;       /* labels, px (never below 12 * dpr) */
    int projector;           /* projector mode (viz_layout_compute_mode) */
    double font_min;         /* the smallest size any text may take (viz_layout_min_font) */
    viz_rect top;            /* top bar */
    viz_rect cluster;        /* cluster picture (or placement table) */
    viz_rect panels[VIZ_N_PANELS];   /* w = 0: panel not shown (projector mode drops
                                      * accuracy and throughput) */
    viz_rect timeline;       /* lanes + scrubber */
    viz_rect lanes;          /* lane area inside the timeline (after the label column) */
    viz_rect scrub;          /* scrubber track */
    int n_lanes;
    double lane_h;
    int n_ps, n_workers, n_vars;
    viz_rect *ps_box;        /* [n_ps]: a box, or (compact_ps) a cell */
    viz_rect *var_bar;       /* [n_vars]; w = 0 when folded into the "+N more" bar; compact:
                              * a segment of its ps's load strip (width ~ bytes) */
    viz_rect *more_bar;      /* [n_ps]; w = 0 when not needed (always in compact mode) */
    viz_rect ps_area;        /* the ps row(s), full cluster width; compact: caption line first */
    int compact_ps;          /* ps as small cells rather than boxes */
    int ps_cols, ps_rows;    /* compact: the cell grid, filled row by row */
    int ps_label_every;      /* compact: cells whose index is a multiple of this are labelled */
    int dense;               /* 1: grid instead of worker boxes */
    viz_rect *worker_box;    /* [n_workers] (not dense) */
    int compact_workers;     /* worker boxes too small for more than a number */
    viz_rect grid;           /* dense: the grid area */
    int grid_cols, grid_rows;
    double cell;             /* dense: cell size (cells are square, gap included) */
    double barrier_y;        /* y of the barrier line above the workers */
    /* One machine (machine_devices > 0): worker_box[0] is the task's box, large and
     * centred; its devices are boxes in one row along its lower part, under the band where
     * copies between them arc (copy_band), and above a legend line (legend_y baseline). */
    int machine, n_device_boxes;
    viz_rect device_box[VIZ_MACHINE_DEVICES];
    viz_rect copy_band;
    double legend_y;
} viz_layout;

/* The smallest font size, in pixels, that any text of a frame with layout l may use:
 * VIZ_PROJECTOR_FONT in projector mode, 0 (no floor beyond the fonts') otherwise. Every
 * label drawn at a fraction of font_small, or fitted to a cell, goes through
 * viz_layout_font() and so stays at or above it. */
double viz_layout_min_font(const viz_layout *l);
/* size, raised to the layout's smallest font size. */
double viz_layout_font(const viz_layout *l, double size);

/* Computes the layout; release with viz_layout_release(). */
void viz_layout_compute(const viz_layout_input *in, viz_layout *out);
enum { VIZ_LAYOUT_NORMAL = 0, VIZ_LAYOUT_PROJECTOR = 1 };
/* The same in a mode: VIZ_LAYOUT_PROJECTOR keeps every text at or above
 * VIZ_PROJECTOR_FONT px, shows fewer and taller side panels (loss, staleness, ps traffic)
 * and wider worker boxes (a bold phase word fits whole). */
void viz_layout_compute_mode(const viz_layout_input *in, int mode, viz_layout *out);
void viz_layout_release(viz_layout *l);

/* Where edges attach: bottom centre of a ps box (spread by worker so edges fan out;
 * compact: below its cell's column, on the bottom edge of the ps area), top centre of a worker box (or of its grid cell). */
viz_point viz_layout_ps_anchor(const viz_layout *l, int ps, int worker);
viz_point viz_layout_worker_anchor(const viz_layout *l, int worker);
/* Dense grid: the cell of worker w. */
viz_rect viz_layout_cell(const viz_layout *l, int worker);

/* Position of a packet travelling between a ps and a worker: frac 0 = at the
 * sender, 1 = at the receiver; pulls travel ps -> worker, pushes worker -> ps, on
 * slightly offset lanes so that both directions stay visible. */
viz_point viz_layout_packet_pos(const viz_layout *l, int ps, int worker, int is_push,
                                double frac);

/* Compare mode in a width x height frame: A's half (left) and B's (right), each a frame
 * of its own without side panels, over a strip holding both loss curves: its title line,
 * then the chart area (plot) with the y axis on its left edge and the time axis on its
 * bottom edge, tick labels outside. Sizes scale like the frame's (s, fonts). */
typedef struct viz_compare_layout {
    int half_w, top_h;       /* A: (0, 0, half_w, top_h); B: (half_w, 0, width - half_w, top_h) */
    viz_rect strip, plot;
    /* The diff strip under the chart's time labels, as wide as the plot and on its time
     * axis: a legend line (diff_legend_y its baseline), then one row per difference
     * (VIZ_DIFF_ROWS: waits, drops, staleness), labelled in the margin left of the plot. */
    viz_rect diff;
    double diff_legend_y, diff_row_h;
} viz_compare_layout;
#define VIZ_DIFF_ROWS 3
void viz_layout_compare(int width, int height, double dpr, viz_compare_layout *out);

/* One machine: a point on the arc that carries a copy from device box src to device box
 * dst at frac (0 at src, 1 at dst): forward copies (is_push 0) leave and land left of a
 * box's centre on a higher arc, gradients right of it on a lower one, so both directions
 * between two devices stay apart. */
viz_point viz_layout_copy_pos(const viz_layout *l, int src, int dst, int is_push, double frac);

int viz_rect_contains(viz_rect r, double x, double y);

#endif
