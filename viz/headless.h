/* headless.h — what `downpour render` does, as one library call: a frame of a recorded
 * trace to PNG / PDF / SVG, a numbered PNG sequence for slides and video (with progress
 * while the diagnostics stream is a terminal), a one-page summary sheet, or a synthetic
 * run written to a trace (viz/synth.h). Same trace, time and size give the same image.
 * One call at a time per options struct; the call owns every source it opens. */
#ifndef VIZ_HEADLESS_H
#define VIZ_HEADLESS_H

#include <stdint.h>
#include <stdio.h>

/* What to draw. Embedded by the caller; viz_headless_opts_init() gives the defaults
 * noted here. Strings are borrowed for the call. */
typedef struct viz_headless_opts {
    const char *write_synthetic; /* write a synthetic sync run here, and nothing else */
    int synth_ps, synth_workers, synth_vars, synth_steps, synth_backup;  /* 2 8 4 100 1 */
    const char *trace;           /* the trace to draw (required unless write_synthetic) */
    const char *compare;         /* a second trace beside it on one clock, or NULL */
    int compare_by_step;         /* compare by global step rather than time */
    const char *out;             /* exactly one of: one frame to this file (.png/.pdf/.svg), */
    const char *frames;          /*   DIR/frame-00001.png ... (DIR created), */
    const char *sheet;           /*   the one-page PNG summary sheet */
    const char *title;           /* the sheet's heading, or NULL */
    double at_s;                 /* --out: time of the frame; < 0 (default) the end */
    long long at_step;           /* --out: >= 0 draws when the global step first reached it (-1) */
    double fps;                  /* --frames: frames per trace second (30) */
    double from_s, to_s;         /* --frames: range; to_s < 0 (default) the end (0, -1) */
    int width, height;           /* frame size; 0 (default): 1280x720, 1920x1080 in projector mode */
    int placement;               /* draw the placement view instead of the cluster */
    int projector;               /* projector mode (viz_view.projector) */
    int describe;                /* --out: also write where each device's box went, one
                                  * "device CPU:1 X,Y,W,H #RRGGBB" line each (one machine;
                                  * viz_machine_describe); `render` sets it from the
                                  * environment's DOWNPOUR_RENDER_LAYOUT=1, a test hook */
} viz_headless_opts;

/* Fills o with the defaults above (describe from DOWNPOUR_RENDER_LAYOUT). */
void viz_headless_opts_init(viz_headless_opts *o);

/* Does what o asks. Results go to out: "wrote N events to PATH" (synthetic), "wrote N
 * frames to DIR/frame-%05d.png" (frames); nothing for one frame or a sheet. Warnings go
 * to diag as "downpour: render: ..." lines (a damaged trace, --at past the end, which then
 * draws the end), and so does the frame progress when diag is a terminal. Returns 0, or
 * a dp_err with err filled (unreadable trace, unwritable output, too many frames); the
 * caller prints err. out and diag are borrowed for the call. */
int viz_headless_run(const viz_headless_opts *o, FILE *out, FILE *diag, char *err);

#endif
