/* tool_caption.c — the viewer's caption bar text, for tests/it_web.sh: what the window's
 * caption bar says at each given moment of a trace (viz_caption_text, the function the
 * bar draws from), one line per moment: "T_NS GSTEP caption text" ("-" for none).
 *   tool_caption TRACE T_NS...
 * Each moment is looked up on a freshly opened source, as a page's first frame is. */
#include <stdio.h>
#include <stdlib.h>

#include "common/dp.h"
#include "viz/viz.h"

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: tool_caption TRACE T_NS...\n");
        return 2;
    }
    char err[DP_ERRLEN];
    for (int i = 2; i < argc; i++) {
        long long t;
        if (dp_parse_int(argv[i], &t) || t < 0) {
            fprintf(stderr, "tool_caption: '%s' is not a time in ns\n", argv[i]);
            return 2;
        }
        viz_source *s = viz_source_open(argv[1], err);
        if (!s) {
            fprintf(stderr, "tool_caption: %s\n", err);
            return 1;
        }
        const char *c = viz_caption_text(s, t);
        printf("%lld %lld %s\n", t, (long long)viz_source_state_at(s, t)->global_step, c && *c ? c : "-");
        viz_source_free(s);
    }
    return 0;
}
