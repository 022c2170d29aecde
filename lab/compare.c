/* compare.c — `downpour compare` (see lab.h): placeholder until the report lands. */
#include "lab/internal.h"

#include "common/dp.h"

int lab_compare(const char *path, const lab_options *o, char *err)
{
    DP_UNUSED(o);
    return dp_fail(err, DP_ERR, "%s: compare is not built yet", path);
}
