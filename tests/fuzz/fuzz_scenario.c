/* fuzz_scenario.c — libFuzzer target: scenario files (cluster/scenario.c). The input is
 * the file's text (up to its first NUL, as a file read by the CLI would be taken); a
 * parsed scenario is then applied for both engines and every variant, and its lesson
 * turned into JSON, so that whatever the parser accepts is also safe to use. */
#include "tests/fuzz/fuzz_util.h"

#include <string.h>

#include "cluster/scenario.h"

static int accept_key(void *ctx, const char *key, const char *value, const char *what,
                      char *err)
{
    (void)ctx; (void)key; (void)value; (void)what; (void)err;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet();
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = 0;
    scenario *s = calloc(1, sizeof *s);
    char err[DP_ERRLEN];
    if (scenario_parse(s, "fuzz.ini", text, err) == 0) {
        int nv = scenario_variants(s);
        char label[512], skipped[1024];
        for (int v = 0; v < nv && v < 64; v++) {
            scenario_variant_label(s, v, label, sizeof label);
            scenario_apply(s, RUN_REAL, v, accept_key, NULL, skipped, sizeof skipped, err);
            scenario_apply(s, RUN_SIM, v, accept_key, NULL, skipped, sizeof skipped, err);
        }
        scenario_key_line(s, "workers");
        free(scenario_lesson_json(s));
    }
    free(s);
    free(text);
    return 0;
}
