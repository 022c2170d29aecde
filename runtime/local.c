/* local.c — `downpour local` (see local.h): open the task's devices, place the graph,
 * print the placement log when asked, then loop { gather the batch, run the towers,
 * apply the averaged gradient on the variables' device } to --steps, evaluate, and print
 * the summary. Events go to our own in-process hub (--trace, --view) or to --hub, as
 * one worker task (job worker, task 0) whose devices are /job:localhost/... . With
 * --checkpoint-dir it resumes from the latest checkpoint there and saves as the cluster's
 * chief does (the same files: either resumes the other's). */
#include "runtime/local.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cblas.h>
#include <jansson.h>

#include "cluster/optim.h"
#include "common/dp.h"
#include "hub/hub.h"
#include "runtime/ckpt.h"
#include "runtime/data.h"
#include "runtime/device.h"
#include "runtime/gpu/gpu.h"
#include "runtime/instr.h"
#include "runtime/nn.h"
#include "runtime/task.h"
#include "runtime/towers.h"

#define LC_LOSS_WINDOW 20

typedef struct lc_run {
    const rt_config *cfg;
    dev_set *devs;
    tw_set *tw;
    var_catalog cat;
    evt_hub *hub;
    rt_instr *in;
    pid_t viewer;
    int n_tensors;
    float *params[4], *grads[4], *slots[4];
    size_t sizes[4];
    const char *names[4];            /* the model's tensors (nn_tensor_name: static) */
    char slot_names[4][96];          /* their optimizer slots', TensorFlow's names */
    int64_t ckpt_step;               /* the last checkpoint saved or restored, and when */
    uint64_t ckpt_ns;
    char hub_addr[RT_PATH_MAX];
    char *meta;
    uint64_t events, events_dropped;
    optim_conf oc;
    dataset train, test;
    batch_order order;
} lc_run;

static const char *const apply_type[] = {"ApplyGradientDescent", "ApplyMomentum", "ApplyAdagrad"};
static const char *const apply_scope[] = {"GradientDescent", "Momentum", "Adagrad"};

/* The whole placement log: mapping, variables, the replicas' ops, the updates. */
static void log_placement(FILE *f, lc_run *r)
{
    dev_log_mapping(f, r->devs);
    const char *cpu0 = dev_name(r->devs, 0);
    graph_log_op(f, NULL, "global_step", "VariableV2", cpu0);
    nn_net *probe = nn_new(r->cfg->model, r->cfg->hidden, 1);
    for (int k = 0; k < r->n_tensors; k++)
        graph_log_op(f, NULL, nn_tensor_name(probe, k), "VariableV2", dev_name(r->devs, tw_tensor_device(r->tw, k)));
    tw_log_ops(f, r->tw);
    for (int k = 0; k < r->n_tensors; k++) {
        char nm[128];
        snprintf(nm, sizeof nm, "%s/update_%s/%s", apply_scope[r->cfg->optimizer], nn_tensor_name(probe, k),
                 apply_type[r->cfg->optimizer]);
        graph_log_op(f, NULL, nm, apply_type[r->cfg->optimizer], dev_name(r->devs, tw_tensor_device(r->tw, k)));
    }
    nn_free(probe);
}

/* TASK_START, DEVICE per device, the variables and their places, the ops. */
static void announce(lc_run *r)
{
    rt_instr *in = r->in;
    if (!in) return;
    evt_record e = rt_instr_record(in, EVT_TASK_START);
    e.str = rt_instr_str(in, "localhost");
    e.bytes = getpid();
    rt_instr_emit(in, &e);
    for (int d = 0; d < dev_count(r->devs); d++) {
        e = rt_instr_record(in, EVT_DEVICE);
        e.device = rt_instr_str(in, dev_name(r->devs, d));
        rt_instr_emit(in, &e);
    }
    for (int v = 0; v < r->cat.n; v++) {
        const var_def *d = &r->cat.v[v];
        rt_instr_define_var(in, v, d);
        e = rt_instr_record(in, EVT_VAR_PLACE);
        e.var = rt_instr_var(in, v);
        int dev = d->base_index >= 0 ? tw_tensor_device(r->tw, d->base_index) : 0;
        e.device = rt_instr_str(in, dev_name(r->devs, dev));
        rt_instr_emit(in, &e);
    }
    tw_announce(r->tw);
}

static void apply_on(void *p)
{
    lc_run *r = p;
    for (int k = 0; k < r->n_tensors; k++)
        optim_apply(&r->oc, r->params[k], r->slots[k], r->grads[k], r->sizes[k]);
}

static void emit(lc_run *r, evt_kind kind, int64_t step, double value, double value2)
{
    if (!r->in) return;
    evt_record e = rt_instr_record(r->in, kind);
    e.step = step;
    e.value = value;
    e.value2 = value2;
    rt_instr_emit(r->in, &e);
}

/* Our own hub with --trace or --view (else --hub's, or none); starts the viewer. */
static int start_events(lc_run *r, const char *self, char *err)
{
    const rt_config *cfg = r->cfg;
    int view = cfg->view && self && dp_have_display();
    if (cfg->view && !view) dp_log(DP_LOG_WARN, "local", "no display for --view: running headless");
    snprintf(r->hub_addr, sizeof r->hub_addr, "%s", cfg->hub);
    if (cfg->trace[0] || (view && !cfg->hub[0])) {
        json_t *o = run_desc_json(&cfg->run, "local");
        json_object_set_new(o, "data", json_string(cfg->data));
        json_object_set_new(o, "strategy", json_string(local_strategy_name(cfg->strategy)));
        json_object_set_new(o, "cpu_devices", json_integer(cfg->cpu_devices));
        json_object_set_new(o, "ps", json_integer(0));
        json_object_set_new(o, "workers", json_integer(1));
        json_t *lesson = cfg->lesson_json ? json_loads(cfg->lesson_json, 0, NULL) : NULL;
        if (lesson) json_object_set_new(o, "lesson", lesson);
        json_object_set_new(o, "start_unix_ns", json_integer((json_int_t)dp_wall_ns()));
        r->meta = json_dumps(o, JSON_COMPACT);
        json_decref(o);
        evt_hub_options ho;
        evt_hub_options_init(&ho);
        ho.listen = "127.0.0.1:0";
        ho.quiet = 1;
        ho.trace_path = cfg->trace[0] ? cfg->trace : NULL;
        ho.metadata_json = r->meta;
        r->hub = evt_hub_new(&ho, err);
        if (!r->hub) return DP_EIO;
        if (evt_hub_start_thread(r->hub, err)) {
            evt_hub_free(r->hub);
            r->hub = NULL;
            return DP_EIO;
        }
        snprintf(r->hub_addr, sizeof r->hub_addr, "%s", evt_hub_address(r->hub));
    }
    r->in = rt_instr_new(r->hub_addr, EVT_JOB_WORKER, 0, &r->cat);
    if (r->in && r->meta) {
        evt_record e = rt_instr_record(r->in, EVT_CLUSTER_START);
        e.str = rt_instr_str(r->in, r->meta);
        rt_instr_emit(r->in, &e);
    }
    if (view && r->hub_addr[0]) {
        pid_t pid = fork();
        if (pid == 0) {
            execl(self, self, "view", "--connect", r->hub_addr, (char *)NULL);
            _exit(127);
        }
        r->viewer = pid > 0 ? pid : 0;
    }
    return DP_OK;
}

static void stop_events(lc_run *r, double wall_s)
{
    if (r->in && r->meta) {
        evt_record e = rt_instr_record(r->in, EVT_CLUSTER_STOP);
        e.value = wall_s;
        rt_instr_emit(r->in, &e);
    }
    r->events = rt_instr_sent(r->in);
    r->events_dropped = rt_instr_dropped(r->in);
    rt_instr_free(r->in);
    r->in = NULL;
    if (r->viewer > 0) {
        dp_log(DP_LOG_INFO, "local", "training finished; close the viewer window to exit");
        waitpid(r->viewer, NULL, 0);
    }
    if (r->hub) {
        char herr[DP_ERRLEN];
        evt_hub_stop(r->hub);
        if (evt_hub_join(r->hub, herr)) dp_log(DP_LOG_ERROR, "local", "trace %s: %s", r->cfg->trace, herr);
        evt_hub_stats hs;
        evt_hub_get_stats(r->hub, &hs);
        r->events = hs.events_out;
        evt_hub_free(r->hub);
        r->hub = NULL;
    }
}

const char *local_strategy_name(int s)
{
    return s == RT_STRATEGY_TOWERS ? "towers" : s == RT_STRATEGY_SPLIT ? "split" : "single";
}

static int load_data(lc_run *r, char *err)
{
    const rt_config *cfg = r->cfg;
    if (!strcmp(cfg->data, "synthetic")) {
        dataset_synthetic(&r->train, cfg->synthetic_n, (uint64_t)cfg->seed, 1);
        dataset_synthetic(&r->test, 2000, (uint64_t)cfg->seed, 0);
        return DP_OK;
    }
    int rc = dataset_load(&r->train, cfg->data, 1, err);
    if (!rc) rc = dataset_load(&r->test, cfg->data, 0, err);
    return rc;
}

/* steps: the global step reached; trained: the steps this run took (fewer after a resume). */
static void print_summary(lc_run *r, double wall_s, double train_s, int64_t steps, int64_t trained, double loss,
                          double acc)
{
    const rt_config *cfg = r->cfg;
    run_desc d = cfg->run;
    d.n_ps = 0;
    d.n_workers = 1;
    run_result rr = {
        .engine = "local", .global_step = steps, .wall_s = wall_s,
        .mean_step_s = trained > 0 ? train_s / (double)trained : 0,
        .samples_per_s = train_s > 0 ? (double)trained * cfg->batch / train_s : 0,
        .final_loss = loss, .test_accuracy = acc, .min_variable_step = steps,
        .events = r->events, .events_dropped = r->events_dropped, .trace = cfg->trace,
    };
    json_t *o = run_summary_json(&d, &rr);
    json_object_set_new(o, "strategy", json_string(local_strategy_name(cfg->strategy)));
    json_object_set_new(o, "towers", json_integer(tw_towers(r->tw)));
    json_object_set_new(o, "blas_core", json_string(openblas_get_corename()));
    json_t *devs = json_array();
    for (int i = 0; i < dev_count(r->devs); i++) json_array_append_new(devs, json_string(dev_name(r->devs, i)));
    json_object_set_new(o, "devices", devs);
    uint64_t h = DP_FNV1A_INIT;
    for (int k = 0; k < r->n_tensors; k++) h = dp_fnv1a(h, r->params[k], r->sizes[k] * sizeof(float));
    char sum[32];
    snprintf(sum, sizeof sum, "%016llx", (unsigned long long)h);
    json_object_set_new(o, "param_checksum", json_string(sum));
    run_summary_emit(o, cfg->summary, "local");
}

/* ---- --checkpoint-dir (runtime/ckpt.h) ----------------------------------------------- */

/* The checkpoint's tensors, as the chief writes them: the model's, then each one's slot
 * (optimizers with one). Fills t (room for 8); returns their count. */
static int ckpt_tensors(lc_run *r, ckpt_tensor *t)
{
    int n = 0;
    for (int k = 0; k < r->n_tensors; k++) t[n++] = (ckpt_tensor){r->names[k], r->params[k], r->sizes[k]};
    for (int k = 0; k < r->n_tensors && r->slots[0]; k++)
        t[n++] = (ckpt_tensor){r->slot_names[k], r->slots[k], r->sizes[k]};
    return n;
}

static int save_checkpoint(lc_run *r, int64_t step, char *err)
{
    ckpt_tensor t[8];
    char path[1024];
    int rc = ckpt_save(r->cfg->checkpoint_dir, step, t, ckpt_tensors(r, t), path, err);
    if (rc) return rc;
    r->ckpt_step = step;
    r->ckpt_ns = dp_now_ns();
    dp_log(DP_LOG_INFO, "local", "saved checkpoint %s", path);
    rt_instr_checkpoint(r->in, EVT_CHECKPOINT_WRITE, path, step);
    return DP_OK;
}

/* The latest checkpoint in --checkpoint-dir, if any, into the variables and slots: *step
 * gets its global step (else 0). */
static int restore_checkpoint(lc_run *r, int64_t *step, char *err)
{
    const char *dir = r->cfg->checkpoint_dir;
    *step = 0;
    r->ckpt_ns = dp_now_ns();
    if (!dir[0]) return DP_OK;
    char path[1024];
    int rc = ckpt_latest(dir, path, err);
    if (rc <= 0) return rc;
    ckpt_tensor t[8];
    rc = ckpt_load(path, step, t, ckpt_tensors(r, t), err);
    if (rc) return rc;
    r->ckpt_step = *step;
    dp_log(DP_LOG_INFO, "local", "restored %s (global step %lld)", path, (long long)*step);
    rt_instr_checkpoint(r->in, EVT_CHECKPOINT_RESTORE, path, *step);
    return DP_OK;
}

/* The training loop from global step s0 (a restored checkpoint's, else 0); returns 0 or a
 * dp_err. */
static int train(lc_run *r, int64_t s0, int64_t *steps, double *loss_out, char *err)
{
    const rt_config *cfg = r->cfg;
    int b = cfg->batch;
    int *idx = xmalloc((size_t)b * sizeof *idx), *idx_next = xmalloc((size_t)b * sizeof *idx_next);
    float *bx = xmalloc((size_t)b * DATA_FEATURES * sizeof *bx);
    uint8_t *by = xmalloc((size_t)b);
    double losses[LC_LOSS_WINDOW];
    int n_losses = 0, rc = DP_OK;
    int64_t s = s0;
    nn_net *eval = NULL;
    for (; s < cfg->steps && !rt_stop_requested; s++) {
        if (cfg->eval_every > 0 && s > 0 && s % cfg->eval_every == 0) {
            if (!eval) eval = nn_new(cfg->model, cfg->hidden, DATA_EVAL_BATCH);
            double tl, acc = nn_evaluate_rows(eval, r->params, dataset_rows_fn, &r->test, r->test.y, r->test.n, &tl);
            dp_log(DP_LOG_INFO, "local", "evaluation at global step %lld: accuracy %.4f, loss %.4f",
                   (long long)s, acc, tl);
            emit(r, EVT_EVAL, s, acc, tl);
        }
        batch_order_indices(&r->order, 0, s, idx);
        dataset_gather(&r->train, idx, b, bx, by);
        /* the next batch's rows come in from memory while this step computes */
        batch_order_indices(&r->order, 0, s + 1, idx_next);
        dataset_prefetch(&r->train, idx_next, b);
        float loss = tw_step(r->tw, r->params, r->grads, bx, by, b, s, err);
        if (!isfinite(loss)) {
            if (!err[0] || isnan(loss))
                if (!strstr(err, ":"))
                    dp_fail(err, DP_ERR, "loss became %f at global step %lld (learning rate too high?)",
                            (double)loss, (long long)s);
            rc = DP_ERR;
            break;
        }
        int64_t t0 = rt_instr_now(r->in);
        if (r->in) {
            evt_record e = rt_instr_record(r->in, EVT_COMPUTE_BEGIN);
            e.device = rt_instr_str(r->in, dev_name(r->devs, tw_var_device(r->tw)));
            e.var = rt_instr_str(r->in, apply_scope[r->cfg->optimizer]);  /* the apply ops' scope */
            e.step = s;
            rt_instr_emit(r->in, &e);
        }
        dev_call(r->devs, tw_var_device(r->tw), apply_on, r);
        if (r->in) {
            evt_record e = rt_instr_record(r->in, EVT_COMPUTE_END);
            e.device = rt_instr_str(r->in, dev_name(r->devs, tw_var_device(r->tw)));
            e.var = rt_instr_str(r->in, apply_scope[r->cfg->optimizer]);
            e.step = s;
            e.dur = e.t - t0;
            rt_instr_emit(r->in, &e);
        }
        losses[n_losses++ % LC_LOSS_WINDOW] = loss;
        emit(r, EVT_STEP_END, s, loss, (double)s);
        emit(r, EVT_GLOBAL_STEP, s + 1, 0, 0);
        if (cfg->checkpoint_dir[0] && s + 1 < cfg->steps &&
            ckpt_due(s + 1, r->ckpt_step, r->ckpt_ns, dp_now_ns(), cfg->save_ckpt_steps, cfg->save_ckpt_secs) &&
            (rc = save_checkpoint(r, s + 1, err)))
            break;
        if (!cfg->quiet && (s + 1) % cfg->log_every == 0) {
            int n = n_losses < LC_LOSS_WINDOW ? n_losses : LC_LOSS_WINDOW;
            double m = 0;
            for (int i = 0; i < n; i++) m += losses[i];
            dp_log(DP_LOG_INFO, NULL, "local: training step %lld done, loss %.4f", (long long)(s + 1), m / n);
        }
    }
    if (!rc && rt_stop_requested) rc = dp_fail(err, DP_ECLOSED, "interrupted");
    int n = n_losses < LC_LOSS_WINDOW ? n_losses : LC_LOSS_WINDOW;
    double m = 0;
    for (int i = 0; i < n; i++) m += losses[i];
    *loss_out = n ? m / n : NAN;
    *steps = s;
    nn_free(eval);
    free(idx);
    free(idx_next);
    free(bx);
    free(by);
    return rc;
}

static int setup(lc_run *r, char *err)
{
    const rt_config *cfg = r->cfg;
    int rc = catalog_build(&r->cat, cfg->model, cfg->hidden, 1, err);
    if (rc) return rc;
    r->devs = dev_set_new("localhost", 0, cfg->cpu_devices, -1, err);
    if (!r->devs) return DP_EINVAL;
    r->tw = tw_new(cfg, r->devs, cfg->strategy, NULL, err);
    if (!r->tw) return DP_EINVAL;
    nn_net *probe = nn_new(cfg->model, cfg->hidden, 1);
    r->n_tensors = nn_tensors(probe);
    optim_conf_init(&r->oc, cfg->optimizer, (float)cfg->lr);
    for (int k = 0; k < r->n_tensors; k++) {
        r->sizes[k] = nn_tensor_size(probe, k);
        r->params[k] = xcalloc(r->sizes[k], sizeof(float));
        r->grads[k] = xcalloc(r->sizes[k], sizeof(float));
        r->names[k] = nn_tensor_name(probe, k);
        if (optim_slot_width(cfg->optimizer)) {
            r->slots[k] = xcalloc(r->sizes[k], sizeof(float));
            optim_slot_init(&r->oc, r->slots[k], r->sizes[k]);
            snprintf(r->slot_names[k], sizeof r->slot_names[k], "%s/%s", r->names[k],
                     optim_slot_name(cfg->optimizer));
        }
    }
    nn_init_params(probe, r->params, (uint64_t)cfg->seed);
    nn_free(probe);
    /* an unwritable --checkpoint-dir fails now, not after training */
    if (cfg->checkpoint_dir[0] && (rc = ckpt_dir_check(cfg->checkpoint_dir, err))) return rc;
    rc = load_data(r, err);
    if (!rc) rc = batch_order_init(&r->order, r->train.n, 1, cfg->batch, (uint64_t)cfg->seed, err);
    return rc;
}

static void teardown(lc_run *r)
{
    tw_free(r->tw);
    dev_set_free(r->devs);
    for (int k = 0; k < r->n_tensors; k++) {
        free(r->params[k]);
        free(r->grads[k]);
        free(r->slots[k]);
    }
    batch_order_release(&r->order);
    dataset_release(&r->train);
    dataset_release(&r->test);
    catalog_release(&r->cat);
    free(r->meta);
}

static void on_signal(int sig)
{
    DP_UNUSED(sig);
    rt_stop_requested = 1;
}

int local_run(const rt_config *cfg, const char *self, char *err)
{
    lc_run run_, *r = &run_;
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGPIPE, SIG_IGN);
    memset(r, 0, sizeof *r);
    r->cfg = cfg;
    err[0] = 0;
    /* Several CPU devices share the machine's cores: one BLAS thread each, or their BLAS
     * threads oversubscribe the cores (towers over 4 devices ran 18x slower on 2 cores). */
    if (cfg->cpu_devices > 1) openblas_set_num_threads(1);
    int rc = setup(r, err);
    if (rc) goto out;
    if (cfg->log_placement) {
        /* one write, so the block never interleaves with other output */
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        if (f) {
            log_placement(f, r);
            fclose(f);
            fwrite(buf, 1, len, stderr);
            fflush(stderr);
            free(buf);
        }
    }
    rc = start_events(r, self, err);
    if (rc) goto out;
    tw_set_instr(r->tw, r->in);   /* the towers speak through the instrumentation from here on */
    announce(r);
    if (!cfg->quiet)
        dp_log(DP_LOG_INFO, "local", "training on %d device%s%s (%s, %d tower%s)", dev_count(r->devs),
               dev_count(r->devs) == 1 ? "" : "s",
               gpu_device_count(NULL) ? ""
               : dev_count(r->devs) > 1 ? ": virtual CPU devices, no GPU here"
                                        : ": the CPU, no GPU here",
               local_strategy_name(cfg->strategy), tw_towers(r->tw), tw_towers(r->tw) == 1 ? "" : "s");
    int64_t s0 = 0, steps = 0;
    rc = restore_checkpoint(r, &s0, err);
    if (rc) goto out;
    if (s0 >= cfg->steps)
        dp_log(DP_LOG_INFO, "local", "nothing to train: global step %lld already reaches --steps %lld",
               (long long)s0, (long long)cfg->steps);
    uint64_t t0 = dp_now_ns();
    double loss = NAN;
    rc = train(r, s0, &steps, &loss, err);
    double train_s = (double)(dp_now_ns() - t0) / 1e9;
    double acc = NAN;
    if (!rc) {
        nn_net *eval = nn_new(cfg->model, cfg->hidden, DATA_EVAL_BATCH);
        double tl;
        acc = nn_evaluate_rows(eval, r->params, dataset_rows_fn, &r->test, r->test.y, r->test.n, &tl);
        nn_free(eval);
        if (!cfg->quiet)
            dp_log(DP_LOG_INFO, "local", "final evaluation at global step %lld: accuracy %.4f, loss %.4f",
                   (long long)steps, acc, tl);
        emit(r, EVT_EVAL, steps, acc, tl);
        /* the final checkpoint; a resume with nothing to do leaves the restored one */
        if (cfg->checkpoint_dir[0] && steps != r->ckpt_step) rc = save_checkpoint(r, steps, err);
        emit(r, EVT_TASK_STOP, steps, 0, 0);
    }
    double wall_s = (double)(dp_now_ns() - t0) / 1e9;
    stop_events(r, wall_s);
    if (!rc) print_summary(r, wall_s, train_s, steps, steps - s0, loss, acc);
out:
    if (r->in || r->hub) stop_events(r, 0);
    teardown(r);
    return rc;
}
