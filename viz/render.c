/* render.c — headless output of one frame with the same drawing code as the window:
 * PNG (an ARGB32 image surface, encoded by viz/png.h), PDF and SVG (vector surfaces). Deterministic: the PDF's
 * dates are pinned, so the same trace, time and size give the same bytes. */
#include <cairo-pdf.h>
#include <cairo-svg.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/dp.h"
#include "viz/internal.h"
#include "viz/png.h"

cairo_surface_t *viz_render_image(viz_source *s, const viz_view *v)
{
    cairo_surface_t *img = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, v->width, v->height);
    cairo_t *cr = cairo_create(img);
    viz_draw(cr, s, v);
    cairo_destroy(cr);
    cairo_surface_flush(img);
    return img;
}

static const char *ext_of(const char *path)
{
    const char *dot = strrchr(path, '.');
    return dot ? dot + 1 : "";
}

int viz_render_file(viz_source *s, const viz_view *v, const char *path, char *err)
{
    const char *ext = ext_of(path);
    if (!strcasecmp(ext, "png")) {
        cairo_surface_t *img = viz_render_image(s, v);
        int rc = viz_png_save(img, path, err);
        cairo_surface_destroy(img);
        return rc;
    }
    if (strcasecmp(ext, "pdf") && strcasecmp(ext, "svg"))
        return dp_fail(err, DP_EINVAL, "%s: unknown image format '.%s' (use .png, .pdf or .svg)",
                       path, ext);
    int pdf = !strcasecmp(ext, "pdf");
    cairo_surface_t *surf = pdf ? cairo_pdf_surface_create(path, v->width, v->height)
                                : cairo_svg_surface_create(path, v->width, v->height);
    if (pdf) {
        cairo_pdf_surface_set_metadata(surf, CAIRO_PDF_METADATA_CREATE_DATE, "2000-01-01T00:00:00");
        cairo_pdf_surface_set_metadata(surf, CAIRO_PDF_METADATA_MOD_DATE, "2000-01-01T00:00:00");
        cairo_pdf_surface_set_metadata(surf, CAIRO_PDF_METADATA_CREATOR, "downpour render");
    }
    cairo_t *cr = cairo_create(surf);
    viz_draw(cr, s, v);
    cairo_show_page(cr);
    cairo_destroy(cr);
    cairo_surface_finish(surf);
    cairo_status_t st = cairo_surface_status(surf);
    cairo_surface_destroy(surf);
    if (st != CAIRO_STATUS_SUCCESS)
        return dp_fail(err, DP_EIO, "%s: %s", path,
                       st == CAIRO_STATUS_WRITE_ERROR && errno ? strerror(errno)
                                                               : cairo_status_to_string(st));
    return 0;
}
