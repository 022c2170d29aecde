/* captions.h — drawing the caption engine's lines (events/caption.h): the one-line
 * caption bar and the scrollable history of captions, in the viewer's fonts and palette
 * (viz/internal.h). Pure drawing onto a caller's cairo context: no state, nothing kept,
 * everything clipped to the rectangle given. Same input, same pixels. */
#ifndef VIZ_CAPTIONS_H
#define VIZ_CAPTIONS_H

#include <cairo.h>

#include "events/caption.h"
#include "viz/layout.h"

/* Draws the caption bar into r: a white panel with a thin border and an accent mark, and
 * text (NULL or "" for none) on one line, cut with an ellipsis when too long. The font
 * follows r's height; projector = 1 draws it larger and bold, for a washed-out projector.
 * Draws nothing outside r. cr's state is saved and restored; text is borrowed. */
void viz_draw_caption_bar(cairo_t *cr, viz_rect r, const char *text, int projector);

/* Draws c's kept captions into r as a list, newest at the bottom, each line a dot in its
 * rule's colour, "step N" and the text; when the oldest kept line shows and captions were
 * dropped, the top line says how many. scroll = lines scrolled back from the newest,
 * clamped to what there is. Returns the scroll used. Draws nothing outside r; cr's state
 * is saved and restored; c is borrowed (not changed). */
int viz_draw_caption_history(cairo_t *cr, viz_rect r, const evt_captioner *c, int scroll);

#endif
