/* test_vars.c — the variable catalogue (shapes, creation order, fixed-size partitions),
 * round-robin and greedy placement on ps tasks, and the log_device_placement listing. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/vars.h"
#include "common/dp.h"
#include "tests/check.h"

#define PS(i) "/job:ps/replica:0/task:" #i "/device:CPU:0"
#define WK(i) "/job:worker/replica:0/task:" #i "/device:CPU:0"

static void test_mlp(void)
{
    var_catalog c;
    char err[DP_ERRLEN] = "";
    CHECK_MSG(catalog_build(&c, MODEL_MLP, 128, 1, err) == 0, "%s", err);
    CHECK(c.n == 5 && c.model == MODEL_MLP && c.hidden == 128);
    const char *names[] = { "global_step", "hidden/weights", "hidden/biases",
                            "softmax/weights", "softmax/biases" };
    for (int i = 0; i < 5; i++) {
        CHECK_MSG(!strcmp(c.v[i].name, names[i]), "%d: %s", i, c.v[i].name);
        CHECK(!strcmp(c.v[i].base, names[i]));
        CHECK(c.v[i].base_index == i - 1 && c.v[i].part == 0 && c.v[i].n_parts == 1);
        CHECK(c.v[i].ps == -1 && c.v[i].row_offset == 0);
    }
    const var_def *g = &c.v[0];
    CHECK(g->ndim == 0 && g->count == 0 && g->bytes == 8 && !g->trainable && g->rows == 1);
    const var_def *hw = &c.v[1], *hb = &c.v[2], *sw = &c.v[3], *sb = &c.v[4];
    CHECK(hw->ndim == 2 && hw->rows == 784 && hw->cols == 128 && hw->count == 100352 &&
          hw->bytes == 401408 && hw->trainable);
    CHECK(hb->ndim == 1 && hb->rows == 128 && hb->cols == 1 && hb->count == 128 && hb->bytes == 512);
    CHECK(sw->ndim == 2 && sw->rows == 128 && sw->cols == 10 && sw->count == 1280);
    CHECK(sb->ndim == 1 && sb->rows == 10 && sb->count == 10 && sb->bytes == 40);
    CHECK(catalog_find(&c, "softmax/weights") == 3);
    CHECK(catalog_find(&c, "global_step") == 0);
    CHECK(catalog_find(&c, "nope") == -1);

    /* TensorFlow's replica_device_setter example: v1->ps0, v2->ps1, v3->ps0 ... */
    CHECK(catalog_place(&c, 2, PLACE_ROUND_ROBIN, err) == 0);
    int rr[] = { 0, 1, 0, 1, 0 };
    for (int i = 0; i < 5; i++) CHECK_MSG(c.v[i].ps == rr[i], "%s on ps %d", c.v[i].name, c.v[i].ps);
    CHECK(catalog_ps_bytes(&c, 0) == 8 + 512 + 40);
    CHECK(catalog_ps_bytes(&c, 1) == 401408 + 5120);

    /* greedy by bytes: the big hidden/weights fills ps1, everything else goes to ps0 */
    CHECK(catalog_place(&c, 2, PLACE_GREEDY, err) == 0);
    int gr[] = { 0, 1, 0, 0, 0 };
    for (int i = 0; i < 5; i++) CHECK_MSG(c.v[i].ps == gr[i], "%s on ps %d", c.v[i].name, c.v[i].ps);
    CHECK(catalog_ps_bytes(&c, 0) == 8 + 512 + 5120 + 40);
    CHECK(catalog_ps_bytes(&c, 1) == 401408);
    /* three ps: gs->0, hw->1, hb->2, sw->0 (8 < 512), sb->0 (5128 vs 512 -> 2) */
    CHECK(catalog_place(&c, 3, PLACE_GREEDY, err) == 0);
    CHECK(c.v[0].ps == 0 && c.v[1].ps == 1 && c.v[2].ps == 2 && c.v[3].ps == 0 && c.v[4].ps == 2);

    CHECK(catalog_place(&c, 0, PLACE_ROUND_ROBIN, err) == DP_EINVAL && strstr(err, "0 ps tasks"));
    catalog_release(&c);
    CHECK(c.n == 0 && c.v == NULL);
    catalog_release(&c);
}

static void test_partition(void)
{
    var_catalog c;
    char err[DP_ERRLEN] = "";
    CHECK_MSG(catalog_build(&c, MODEL_MLP, 128, 3, err) == 0, "%s", err);
    CHECK(c.n == 9);
    const char *names[] = { "global_step", "hidden/weights/part_0", "hidden/weights/part_1",
                            "hidden/weights/part_2", "hidden/biases", "softmax/weights/part_0",
                            "softmax/weights/part_1", "softmax/weights/part_2", "softmax/biases" };
    for (int i = 0; i < 9; i++) CHECK_MSG(!strcmp(c.v[i].name, names[i]), "%d: %s", i, c.v[i].name);
    /* 784 rows in 3: 262, 261, 261 (first 784 % 3 = 1 part one row larger) */
    int rows[] = { 262, 261, 261 }, offs[] = { 0, 262, 523 };
    for (int p = 0; p < 3; p++) {
        const var_def *d = &c.v[1 + p];
        CHECK(!strcmp(d->base, "hidden/weights") && d->base_index == 0);
        CHECK(d->part == p && d->n_parts == 3 && d->ndim == 2 && d->cols == 128);
        CHECK_MSG(d->rows == rows[p] && d->row_offset == offs[p], "part %d: rows %d off %d",
                  p, d->rows, d->row_offset);
        CHECK(d->count == (size_t)rows[p] * 128 && d->bytes == d->count * 4);
    }
    /* 128 rows in 3: 43, 43, 42 */
    CHECK(c.v[5].rows == 43 && c.v[6].rows == 43 && c.v[7].rows == 42);
    CHECK(c.v[5].row_offset == 0 && c.v[6].row_offset == 43 && c.v[7].row_offset == 86);
    CHECK(c.v[5].base_index == 2 && c.v[8].base_index == 3 && c.v[8].n_parts == 1);
    CHECK(c.v[4].n_parts == 1 && !strcmp(c.v[4].name, "hidden/biases"));
    /* round-robin counts every part as one variable */
    CHECK(catalog_place(&c, 2, PLACE_ROUND_ROBIN, err) == 0);
    for (int i = 0; i < 9; i++) CHECK(c.v[i].ps == i % 2);
    catalog_release(&c);

    /* more parts than rows: one part per row */
    CHECK(catalog_build(&c, MODEL_MLP, 4, 7, err) == 0);
    CHECK(catalog_find(&c, "softmax/weights/part_3") >= 0 &&
          catalog_find(&c, "softmax/weights/part_4") < 0);
    CHECK(catalog_find(&c, "hidden/weights/part_6") >= 0);
    catalog_release(&c);
    CHECK(catalog_build(&c, MODEL_SOFTMAX, 0, 1024, err) == 0);
    CHECK(c.n == 1 + 784 + 1 && c.v[784].row_offset == 783 && c.v[784].rows == 1);
    catalog_release(&c);
}

static void test_softmax_and_errors(void)
{
    var_catalog c;
    char err[DP_ERRLEN] = "";
    CHECK(catalog_build(&c, MODEL_SOFTMAX, 128, 1, err) == 0);
    CHECK(c.n == 3 && !strcmp(c.v[1].name, "softmax/weights") && c.v[1].rows == 784 &&
          c.v[1].cols == 10 && c.v[1].count == 7840 && c.v[1].base_index == 0);
    CHECK(!strcmp(c.v[2].name, "softmax/biases") && c.v[2].base_index == 1);
    catalog_release(&c);

    CHECK(catalog_build(&c, MODEL_MLP, 0, 1, err) == DP_EINVAL && strstr(err, "--hidden: 0 out of range"));
    CHECK(catalog_build(&c, MODEL_MLP, 65537, 1, err) == DP_EINVAL && strstr(err, "1..65536"));
    CHECK(catalog_build(&c, MODEL_MLP, 8, 0, err) == DP_EINVAL && strstr(err, "--partition: 0 out of range"));
    CHECK(catalog_build(&c, MODEL_MLP, 8, 1025, err) == DP_EINVAL && strstr(err, "1..1024"));
    CHECK(c.n == 0 && c.v == NULL);

    model_kind m;
    placement_kind p;
    CHECK(model_parse("mlp", &m) == 0 && m == MODEL_MLP);
    CHECK(model_parse("softmax", &m) == 0 && m == MODEL_SOFTMAX);
    CHECK(model_parse("cnn", &m) == DP_EINVAL);
    CHECK(placement_parse("greedy", &p) == 0 && p == PLACE_GREEDY);
    CHECK(placement_parse("round-robin", &p) == 0 && p == PLACE_ROUND_ROBIN);
    CHECK(placement_parse("random", &p) == DP_EINVAL);
    CHECK(!strcmp(model_name(MODEL_MLP), "mlp") && !strcmp(placement_name(PLACE_GREEDY), "greedy"));
}

/* Runs catalog_log_placement into a string (caller frees). */
static char *log_to_string(const var_catalog *c, int worker)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    catalog_log_placement(f, c, worker);
    fclose(f);
    return buf;
}

static void test_log(void)
{
    var_catalog c;
    char err[DP_ERRLEN];
    catalog_build(&c, MODEL_SOFTMAX, 0, 1, err);
    catalog_place(&c, 1, PLACE_ROUND_ROBIN, err);
    char *s = log_to_string(&c, 0);
    const char *want =
        "Device mapping: no known devices.\n"
        "global_step: (VariableV2): " PS(0) "\n"
        "softmax/weights: (VariableV2): " PS(0) "\n"
        "softmax/biases: (VariableV2): " PS(0) "\n"
        "x: (Placeholder): " WK(0) "\n"
        "y: (Placeholder): " WK(0) "\n"
        "softmax/MatMul: (MatMul): " WK(0) "\n"
        "softmax/add: (Add): " WK(0) "\n"
        "loss/SparseSoftmaxCrossEntropyWithLogits: (SparseSoftmaxCrossEntropyWithLogits): " WK(0) "\n"
        "loss/Mean: (Mean): " WK(0) "\n"
        "gradients/loss/Mean_grad/truediv: (RealDiv): " WK(0) "\n"
        "gradients/loss/SparseSoftmaxCrossEntropyWithLogits_grad/mul: (Mul): " WK(0) "\n"
        "gradients/softmax/add_grad/Sum_1: (Sum): " WK(0) "\n"
        "gradients/softmax/MatMul_grad/MatMul_1: (MatMul): " WK(0) "\n";
    CHECK_MSG(!strcmp(s, want), "got:\n%s", s);
    free(s);
    catalog_release(&c);

    catalog_build(&c, MODEL_MLP, 128, 2, err);
    catalog_place(&c, 2, PLACE_ROUND_ROBIN, err);
    s = log_to_string(&c, 0);
    const char *lines[] = {
        "Device mapping: no known devices.\n"
        "global_step: (VariableV2): " PS(0) "\n",
        "\nhidden/weights/part_0: (VariableV2): " PS(1) "\n"
        "hidden/weights/part_1: (VariableV2): " PS(0) "\n"
        "hidden/biases: (VariableV2): " PS(1) "\n",
        "\nhidden/weights/ConcatPartitions/concat: (ConcatV2): " WK(0) "\n"
        "hidden/MatMul: (MatMul): " WK(0) "\n"
        "hidden/add: (Add): " WK(0) "\n"
        "hidden/Relu: (Relu): " WK(0) "\n",
        "\nsoftmax/MatMul: (MatMul): " WK(0) "\n",
        "\nsoftmax/add: (Add): " WK(0) "\n",
        "\nloss/SparseSoftmaxCrossEntropyWithLogits: (SparseSoftmaxCrossEntropyWithLogits): " WK(0) "\n",
        "\ngradients/hidden/Relu_grad/ReluGrad: (ReluGrad): " WK(0) "\n",
        "\ngradients/hidden/MatMul_grad/MatMul_1: (MatMul): " WK(0) "\n",
    };
    for (size_t i = 0; i < DP_ARRAY_LEN(lines); i++)
        CHECK_MSG(strstr(s, lines[i]) != NULL, "missing: %s", lines[i]);
    /* the ops listed are worker 0's own: worker 1 does not appear */
    CHECK(strstr(s, WK(1)) == NULL);
    free(s);
    /* worker 1 logs its own ops on its own task */
    s = log_to_string(&c, 1);
    CHECK_MSG(strstr(s, "\nhidden/MatMul: (MatMul): " WK(1) "\n") && !strstr(s, WK(0)), "got:\n%s", s);
    free(s);
    catalog_release(&c);
}

int main(void)
{
    test_mlp();
    test_partition();
    test_softmax_and_errors();
    test_log();
    return CHECK_DONE();
}
