/* test_device.c — the device layer and the strategies on virtual CPU devices: device
 * names and specifications, placement rules (the hard error in TensorFlow's words, the
 * soft fallback), towers over 4 CPU devices against one device with the full batch,
 * split against single, a plain net against a placed one bit for bit, and the placement
 * log of a fixed model line by line. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/optim.h"
#include "common/dp.h"
#include "runtime/data.h"
#include "runtime/device.h"
#include "runtime/nn.h"
#include "runtime/towers.h"
#include "tests/check.h"

#define DEV(k) "/job:localhost/replica:0/task:0/device:CPU:" #k

static void test_names(void)
{
    char err[DP_ERRLEN], canon[128];
    dev_set *s = dev_set_new("localhost", 0, 3, 0, err);
    CHECK(s && dev_count(s) == 3);
    CHECK(!strcmp(dev_name(s, 2), DEV(2)));
    CHECK(dev_find(s, "/cpu:1", canon, sizeof canon, err) == 1 && !strcmp(canon, "/device:CPU:1"));
    CHECK(dev_find(s, "/device:CPU:2", NULL, 0, err) == 2);
    CHECK(dev_find(s, "CPU:0", NULL, 0, err) == 0);
    CHECK(dev_find(s, DEV(1), NULL, 0, err) == 1);
    CHECK(dev_find(s, "/job:worker/replica:0/task:0/device:CPU:1", NULL, 0, err) == -1);
    CHECK(dev_find(s, "/gpu:0", canon, sizeof canon, err) == -1 && !strcmp(canon, "/device:GPU:0"));
    CHECK(dev_find(s, "/cpu:3", NULL, 0, err) == -1);
    CHECK(dev_find(s, "/tpu:0", NULL, 0, err) == DP_EINVAL && strstr(err, "\"/tpu:0\" is not a device"));
    dev_rule r;
    CHECK(dev_rule_parse("hidden/*=/gpu:1", &r, "--device-for", err) == 0 && !strcmp(r.pattern, "hidden/*") &&
          !strcmp(r.device, "/gpu:1"));
    CHECK(dev_rule_parse("hidden/*", &r, "--device-for", err) == DP_EINVAL && strstr(err, "--device-for:"));
    CHECK(dev_rule_parse("x=/cpu:z", &r, "--device-for", err) == DP_EINVAL);
    /* a pattern or a device longer than its field is refused, each on its own */
    char longer[400];
    snprintf(longer, sizeof longer, "%0*d=/cpu:0", (int)sizeof r.pattern, 0);
    CHECK_MSG(dev_rule_parse(longer, &r, "--device-for", err) == DP_EINVAL && strstr(err, "is too long"),
              "a %zu-character pattern is too long", sizeof r.pattern);
    snprintf(longer, sizeof longer, "hidden/*=/job:localhost/replica:0/task:0/device:CPU:%0*d", (int)sizeof r.device, 0);
    CHECK_MSG(dev_rule_parse(longer, &r, "--device-for", err) == DP_EINVAL && strstr(err, "is too long"),
              "a device name over %zu characters is too long", sizeof r.device);
    snprintf(longer, sizeof longer, "%0*d=/cpu:0", (int)sizeof r.pattern - 1, 0);
    CHECK_MSG(dev_rule_parse(longer, &r, "--device-for", err) == 0 && strlen(r.pattern) == sizeof r.pattern - 1,
              "a %zu-character pattern fits", sizeof r.pattern - 1);
    /* placement: first matching rule, the hard error, the soft fallback */
    dev_rule rules[4];
    int n = 0;
    CHECK(dev_rules_parse("hidden/*=/cpu:2; softmax/MatMul=/gpu:2", rules, &n, 4, "x", err) == 0 && n == 2);
    CHECK(dev_place(s, rules, n, "hidden/MatMul", 0, 0, NULL, err) == 2);
    CHECK(dev_place(s, rules, n, "softmax/add", 1, 0, NULL, err) == 1);
    CHECK(dev_place(s, rules, n, "softmax/MatMul", 0, 0, NULL, err) == DP_EINVAL);
    CHECK_MSG(!strcmp(err, "Cannot assign a device for operation 'softmax/MatMul': Could not satisfy explicit "
                           "device specification '/device:GPU:2' because no devices matching that "
                           "specification are registered in this process; available devices: "
                           DEV(0) ", " DEV(1) ", " DEV(2)), "got: %s", err);
    int fell = 0;
    CHECK(dev_place(s, rules, n, "softmax/MatMul", 1, 1, &fell, err) == 1 && fell == 1);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    dev_log_mapping(f, s);
    fclose(f);
    CHECK_MSG(!strcmp(buf, "Device mapping: no known devices.\n"), "got: %s", buf);
    free(buf);
    dev_set_free(s);
    CHECK(dev_set_new("localhost", 0, 0, 0, err) == NULL && strstr(err, "1..64 CPU devices"));
    dev_set_free(NULL);
}

typedef struct model {
    int n;
    float *p[4], *g[4];
    size_t size[4];
} model;

static void model_init(model *m, const rt_config *cfg)
{
    nn_net *probe = nn_new(cfg->model, cfg->hidden, 1);
    m->n = nn_tensors(probe);
    for (int i = 0; i < m->n; i++) {
        m->size[i] = nn_tensor_size(probe, i);
        m->p[i] = xcalloc(m->size[i], sizeof(float));
        m->g[i] = xcalloc(m->size[i], sizeof(float));
    }
    nn_init_params(probe, m->p, 5);
    nn_free(probe);
}

static void model_free(model *m)
{
    for (int i = 0; i < m->n; i++) {
        free(m->p[i]);
        free(m->g[i]);
    }
}

/* Trains `steps` SGD steps of strategy on n_cpu devices; losses[s] gets each step's loss. */
static int train(const rt_config *cfg, int strategy, int n_cpu, int steps, model *m, float *losses, char *err)
{
    dev_set *s = dev_set_new("localhost", 0, n_cpu, 0, err);
    tw_set *t = s ? tw_new(cfg, s, strategy, NULL, err) : NULL;
    if (!t) {
        dev_set_free(s);
        return DP_EINVAL;
    }
    dataset ds;
    dataset_synthetic(&ds, 1000, 3, 1);
    optim_conf oc;
    optim_conf_init(&oc, OPT_SGD, (float)cfg->lr);
    model_init(m, cfg);
    for (int k = 0; k < steps; k++) {
        int off = (k * cfg->batch) % (1000 - cfg->batch);
        losses[k] = tw_step(t, m->p, m->g, ds.x + (size_t)off * DATA_FEATURES, ds.y + off, cfg->batch, k, err);
        for (int i = 0; i < m->n; i++) optim_apply(&oc, m->p[i], NULL, m->g[i], m->size[i]);
    }
    dataset_release(&ds);
    tw_free(t);
    dev_set_free(s);
    return DP_OK;
}

static double max_diff(const model *a, const model *b)
{
    double d = 0;
    for (int i = 0; i < a->n; i++)
        for (size_t k = 0; k < a->size[i]; k++) {
            double x = fabs((double)a->p[i][k] - (double)b->p[i][k]);
            if (x > d) d = x;
        }
    return d;
}

static void test_strategies(void)
{
    char err[DP_ERRLEN];
    rt_config cfg;
    rt_config_init(&cfg);
    cfg.model = MODEL_MLP;
    cfg.hidden = 32;
    cfg.batch = 64;
    cfg.lr = 0.1;
    model one, four, split, plain;
    float l1[50], l4[50], ls[50], lp[50];
    CHECK(train(&cfg, RT_STRATEGY_SINGLE, 1, 50, &one, l1, err) == 0);
    CHECK(train(&cfg, RT_STRATEGY_TOWERS, 4, 50, &four, l4, err) == 0);
    CHECK(train(&cfg, RT_STRATEGY_SPLIT, 2, 50, &split, ls, err) == 0);
    double d = max_diff(&one, &four);
    CHECK_MSG(d <= 1e-5, "towers over 4 CPU devices vs one device, full batch: max |dparam| %g after 50 steps", d);
    CHECK_MSG(l1[49] < l1[0] - 0.1, "the model learns (%g -> %g)", l1[0], l1[49]);
    int same = 1;
    for (int k = 0; k < 50; k++) same &= fabsf(l1[k] - ls[k]) <= 1e-5f;
    CHECK_MSG(same, "split's loss trajectory is single's (step 49: %g vs %g)", ls[49], l1[49]);
    /* a plain net (worker, tests) and a placed one on a device thread: the same bits */
    nn_net *net = nn_new(cfg.model, cfg.hidden, cfg.batch);
    model_init(&plain, &cfg);
    dataset ds;
    dataset_synthetic(&ds, 1000, 3, 1);
    optim_conf oc;
    optim_conf_init(&oc, OPT_SGD, (float)cfg.lr);
    for (int k = 0; k < 50; k++) {
        int off = (k * cfg.batch) % (1000 - cfg.batch);
        lp[k] = nn_train_step(net, plain.p, plain.g, ds.x + (size_t)off * DATA_FEATURES, ds.y + off, cfg.batch);
        for (int i = 0; i < plain.n; i++) optim_apply(&oc, plain.p[i], NULL, plain.g[i], plain.size[i]);
    }
    CHECK_MSG(max_diff(&plain, &one) == 0 && memcmp(lp, l1, sizeof lp) == 0,
              "single on a device thread is bit for bit the plain net (max |dparam| %g)", max_diff(&plain, &one));
    nn_free(net);
    dataset_release(&ds);
    model_free(&one);
    model_free(&four);
    model_free(&split);
    model_free(&plain);
    /* a batch smaller than the towers */
    cfg.batch = 3;
    CHECK(train(&cfg, RT_STRATEGY_TOWERS, 4, 1, &one, l1, err) == DP_EINVAL &&
          strstr(err, "--batch: 3 is smaller than the 4 towers"));
}

static char *log_of(const rt_config *cfg, int strategy, int n_cpu, char *err)
{
    dev_set *s = dev_set_new("localhost", 0, n_cpu, 0, err);
    tw_set *t = tw_new(cfg, s, strategy, NULL, err);
    char *buf = NULL;
    size_t len = 0;
    if (t) {
        FILE *f = open_memstream(&buf, &len);
        tw_log_ops(f, t);
        fclose(f);
    }
    tw_free(t);
    dev_set_free(s);
    return buf;
}

static void test_log(void)
{
    char err[DP_ERRLEN];
    rt_config cfg;
    rt_config_init(&cfg);
    cfg.model = MODEL_SOFTMAX;
    char *s = log_of(&cfg, RT_STRATEGY_TOWERS, 2, err);
    const char *want =
        "tower_0/x: (Placeholder): " DEV(0) "\n"
        "tower_0/y: (Placeholder): " DEV(0) "\n"
        "tower_0/softmax/MatMul: (MatMul): " DEV(0) "\n"
        "tower_0/softmax/add: (Add): " DEV(0) "\n"
        "tower_0/loss/SparseSoftmaxCrossEntropyWithLogits: (SparseSoftmaxCrossEntropyWithLogits): " DEV(0) "\n"
        "tower_0/loss/Mean: (Mean): " DEV(0) "\n"
        "tower_0/gradients/loss/Mean_grad/truediv: (RealDiv): " DEV(0) "\n"
        "tower_0/gradients/loss/SparseSoftmaxCrossEntropyWithLogits_grad/mul: (Mul): " DEV(0) "\n"
        "tower_0/gradients/softmax/add_grad/Sum_1: (Sum): " DEV(0) "\n"
        "tower_0/gradients/softmax/MatMul_grad/MatMul_1: (MatMul): " DEV(0) "\n"
        "tower_1/x: (Placeholder): " DEV(1) "\n"
        "tower_1/y: (Placeholder): " DEV(1) "\n"
        "tower_1/softmax/MatMul: (MatMul): " DEV(1) "\n"
        "tower_1/softmax/add: (Add): " DEV(1) "\n"
        "tower_1/loss/SparseSoftmaxCrossEntropyWithLogits: (SparseSoftmaxCrossEntropyWithLogits): " DEV(1) "\n"
        "tower_1/loss/Mean: (Mean): " DEV(1) "\n"
        "tower_1/gradients/loss/Mean_grad/truediv: (RealDiv): " DEV(1) "\n"
        "tower_1/gradients/loss/SparseSoftmaxCrossEntropyWithLogits_grad/mul: (Mul): " DEV(1) "\n"
        "tower_1/gradients/softmax/add_grad/Sum_1: (Sum): " DEV(1) "\n"
        "tower_1/gradients/softmax/MatMul_grad/MatMul_1: (MatMul): " DEV(1) "\n"
        "average_gradients/softmax/weights/Mean: (Mean): " DEV(0) "\n"
        "average_gradients/softmax/biases/Mean: (Mean): " DEV(0) "\n";
    CHECK_MSG(s && !strcmp(s, want), "got:\n%s", s ? s : err);
    free(s);
    /* split: the hidden layer on CPU:0, the output layer and the loss on CPU:1 */
    cfg.model = MODEL_MLP;
    s = log_of(&cfg, RT_STRATEGY_SPLIT, 2, err);
    CHECK_MSG(s && strstr(s, "\nhidden/Relu: (Relu): " DEV(0) "\nsoftmax/MatMul: (MatMul): " DEV(1) "\n") &&
              strstr(s, "\ngradients/softmax/MatMul_grad/MatMul: (MatMul): " DEV(1) "\n"
                        "gradients/hidden/Relu_grad/ReluGrad: (ReluGrad): " DEV(0) "\n"), "got:\n%s", s);
    free(s);
    /* a rule: gradient ops follow their forward op */
    snprintf(cfg.device_for, sizeof cfg.device_for, "softmax/MatMul=/cpu:1");
    s = log_of(&cfg, RT_STRATEGY_SINGLE, 2, err);
    CHECK_MSG(s && strstr(s, "\nsoftmax/MatMul: (MatMul): " DEV(1) "\nsoftmax/add: (Add): " DEV(0) "\n") &&
              strstr(s, "\ngradients/softmax/MatMul_grad/MatMul_1: (MatMul): " DEV(1) "\n"), "got:\n%s", s);
    free(s);
    /* the hard error, and the soft fallback logged where it went */
    snprintf(cfg.device_for, sizeof cfg.device_for, "hidden/*=/gpu:1");
    s = log_of(&cfg, RT_STRATEGY_SINGLE, 1, err);
    CHECK_MSG(!s && !strcmp(err, "Cannot assign a device for operation 'hidden/MatMul': Could not satisfy explicit "
                                 "device specification '/device:GPU:1' because no devices matching that "
                                 "specification are registered in this process; available devices: " DEV(0)),
              "got: %s", err);
    cfg.allow_soft = 1;
    s = log_of(&cfg, RT_STRATEGY_SINGLE, 1, err);
    CHECK_MSG(s && strstr(s, "\nhidden/MatMul: (MatMul): " DEV(0) "\n"), "got:\n%s", s ? s : err);
    free(s);
}

int main(void)
{
    test_names();
    test_strategies();
    test_log();
    return CHECK_DONE();
}
