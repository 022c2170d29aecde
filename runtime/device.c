/* device.c — a task's devices and their threads, device specifications and placement
 * rules (see device.h). Each device thread waits on its own queue of jobs; a job lives on
 * the caller's stack until the device marks it done, so nothing is allocated per call. */
#include "runtime/device.h"

#include <ctype.h>
#include <fnmatch.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/dp.h"

typedef struct dev_job {
    void (*fn)(void *arg);
    void *arg;
    int done;
    struct dev_job *next;
} dev_job;

typedef struct dev_dev {
    struct dev_set *set;
    dev_kind kind;
    int ordinal;
    char name[DEV_NAME_MAX];
    gpu_ctx *gpu;
    gpu_info info;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;         /* jobs queued, job done, or stop */
    dev_job *head, *tail;
    int stop;
    int started;
    char open_err[DP_ERRLEN];
    int opened;                /* 1 ready, -1 failed to open */
} dev_dev;

struct dev_set {
    int n;
    dev_dev dev[DEV_MAX];
    char job[32];
    int task;
    char task_name[64];   /* "/job:worker/replica:0/task:1" */
};

static void *dev_thread(void *p)
{
    dev_dev *d = p;
    pthread_mutex_lock(&d->mu);
    if (d->kind == DEV_GPU) {
        pthread_mutex_unlock(&d->mu);
        char err[DP_ERRLEN] = "";
        gpu_ctx *g = gpu_open(d->ordinal, err);
        pthread_mutex_lock(&d->mu);
        d->gpu = g;
        if (!g) snprintf(d->open_err, sizeof d->open_err, "%s", err);
    }
    d->opened = d->kind == DEV_GPU && !d->gpu ? -1 : 1;
    pthread_cond_broadcast(&d->cv);
    for (;;) {
        while (!d->head && !d->stop) pthread_cond_wait(&d->cv, &d->mu);
        if (!d->head) break;
        dev_job *j = d->head;
        d->head = j->next;
        if (!d->head) d->tail = NULL;
        pthread_mutex_unlock(&d->mu);
        j->fn(j->arg);
        pthread_mutex_lock(&d->mu);
        j->done = 1;
        pthread_cond_broadcast(&d->cv);
    }
    pthread_mutex_unlock(&d->mu);
    if (d->gpu) gpu_close(d->gpu);
    d->gpu = NULL;
    return NULL;
}

static int dev_start(dev_set *s, dev_kind kind, int ordinal, char *err)
{
    dev_dev *d = &s->dev[s->n];
    d->set = s;
    d->kind = kind;
    d->ordinal = ordinal;
    snprintf(d->name, sizeof d->name, "/job:%s/replica:0/task:%d/device:%s:%d", s->job, s->task,
             kind == DEV_GPU ? "GPU" : "CPU", ordinal);
    if (kind == DEV_GPU && gpu_device_info(ordinal, &d->info, err)) return DP_ERR;
    pthread_mutex_init(&d->mu, NULL);
    pthread_cond_init(&d->cv, NULL);
    if (pthread_create(&d->thread, NULL, dev_thread, d))
        return dp_fail(err, DP_EIO, "cannot start the thread of %s", d->name);
    d->started = 1;
    s->n++;
    pthread_mutex_lock(&d->mu);
    while (!d->opened) pthread_cond_wait(&d->cv, &d->mu);
    pthread_mutex_unlock(&d->mu);
    if (d->opened < 0) return dp_fail(err, DP_ERR, "%s: %s", d->name, d->open_err);
    return DP_OK;
}

dev_set *dev_set_new(const char *job, int task, int n_cpu, int max_gpu, char *err)
{
    const char *why = NULL;
    int n_gpu = gpu_device_count(&why);
    if (max_gpu >= 0 && n_gpu > max_gpu) n_gpu = max_gpu;
    if (n_cpu < 1 || n_cpu + n_gpu > DEV_MAX) {
        dp_fail(err, DP_EINVAL, "%d CPU and %d GPU devices: a task has 1..%d CPU devices and at most "
                "%d devices", n_cpu, n_gpu, DEV_MAX, DEV_MAX);
        return NULL;
    }
    dev_set *s = xcalloc(1, sizeof *s);
    snprintf(s->job, sizeof s->job, "%s", job);
    s->task = task;
    snprintf(s->task_name, sizeof s->task_name, "/job:%s/replica:0/task:%d", s->job, task);
    for (int i = 0; i < n_cpu + n_gpu; i++) {
        int gpu = i >= n_cpu;
        if (dev_start(s, gpu ? DEV_GPU : DEV_CPU, gpu ? i - n_cpu : i, err)) {
            dev_set_free(s);
            return NULL;
        }
    }
    return s;
}

void dev_set_free(dev_set *s)
{
    if (!s) return;
    for (int i = 0; i < s->n; i++) {
        dev_dev *d = &s->dev[i];
        pthread_mutex_lock(&d->mu);
        d->stop = 1;
        pthread_cond_broadcast(&d->cv);
        pthread_mutex_unlock(&d->mu);
        pthread_join(d->thread, NULL);
        pthread_mutex_destroy(&d->mu);
        pthread_cond_destroy(&d->cv);
    }
    free(s);
}

int dev_count(const dev_set *s) { return s->n; }

int dev_count_kind(const dev_set *s, dev_kind kind)
{
    int n = 0;
    for (int i = 0; i < s->n; i++) n += s->dev[i].kind == kind;
    return n;
}

dev_kind dev_kind_of(const dev_set *s, int d)
{
    dp_assert("dev_kind_of: device out of range", d >= 0 && d < s->n);
    return s->dev[d].kind;
}

int dev_ordinal(const dev_set *s, int d)
{
    dp_assert("dev_ordinal: device out of range", d >= 0 && d < s->n);
    return s->dev[d].ordinal;
}

int dev_index(const dev_set *s, dev_kind kind, int k)
{
    for (int i = 0; i < s->n; i++)
        if (s->dev[i].kind == kind && s->dev[i].ordinal == k) return i;
    return -1;
}

const char *dev_task_name(const dev_set *s)
{
    return s->task_name;
}

const char *dev_name(const dev_set *s, int d)
{
    dp_assert("dev_name: device out of range", d >= 0 && d < s->n);
    return s->dev[d].name;
}

gpu_ctx *dev_gpu(const dev_set *s, int d)
{
    dp_assert("dev_gpu: device out of range", d >= 0 && d < s->n);
    return s->dev[d].gpu;
}

void dev_call(dev_set *s, int d, void (*fn)(void *arg), void *arg)
{
    dp_assert("dev_call: device out of range", d >= 0 && d < s->n);
    dev_dev *dv = &s->dev[d];
    dev_job j = {fn, arg, 0, NULL};
    pthread_mutex_lock(&dv->mu);
    if (dv->tail) dv->tail->next = &j;
    else dv->head = &j;
    dv->tail = &j;
    pthread_cond_broadcast(&dv->cv);
    while (!j.done) pthread_cond_wait(&dv->cv, &dv->mu);
    pthread_mutex_unlock(&dv->mu);
}

typedef struct par_arg {
    void (*fn)(int i, void *arg);
    void *arg;
    int i;
} par_arg;

static void *par_thread(void *p)
{
    par_arg *a = p;
    a->fn(a->i, a->arg);
    return NULL;
}

void dev_parallel(int n, void (*fn)(int i, void *arg), void *arg)
{
    if (n == 1) {
        fn(0, arg);
        return;
    }
    pthread_t *t = xcalloc((size_t)n, sizeof *t);
    par_arg *a = xcalloc((size_t)n, sizeof *a);
    int *ok = xcalloc((size_t)n, sizeof *ok);
    for (int i = 0; i < n; i++) {
        a[i] = (par_arg){fn, arg, i};
        ok[i] = pthread_create(&t[i], NULL, par_thread, &a[i]) == 0;
        if (!ok[i]) fn(i, arg);          /* no thread to spare: run it here */
    }
    for (int i = 0; i < n; i++)
        if (ok[i]) pthread_join(t[i], NULL);
    free(t);
    free(a);
    free(ok);
}

void dev_log_mapping(FILE *f, const dev_set *s)
{
    if (!dev_count_kind(s, DEV_GPU)) {
        fputs("Device mapping: no known devices.\n", f);
        return;
    }
    fputs("Device mapping:\n", f);
    for (int i = 0; i < s->n; i++) {
        const dev_dev *d = &s->dev[i];
        if (d->kind != DEV_GPU) continue;
        fprintf(f, "%s -> device: %d, name: %s, pci bus id: %s, compute capability: %d.%d\n", d->name,
                d->ordinal, d->info.name, d->info.pci_bus_id, d->info.cc_major, d->info.cc_minor);
    }
}

/* ---- specifications and rules --------------------------------------------------------- */

/* Parses "[/]device:TYPE:N" or "[/]TYPE:N" at p: kind and ordinal; 0 or DP_EINVAL. */
static int parse_local(const char *p, dev_kind *kind, int *ord)
{
    if (*p == '/') p++;
    if (!strncasecmp(p, "device:", 7)) p += 7;
    if (!strncasecmp(p, "cpu:", 4)) *kind = DEV_CPU;
    else if (!strncasecmp(p, "gpu:", 4)) *kind = DEV_GPU;
    else return DP_EINVAL;
    p += 4;
    if (!isdigit((unsigned char)*p)) return DP_EINVAL;
    long v = strtol(p, (char **)&p, 10);
    if (*p || v > 1000000) return DP_EINVAL;
    *ord = (int)v;
    return DP_OK;
}

int dev_find(const dev_set *s, const char *spec, char *canon, size_t canon_n, char *err)
{
    const char *local = spec;
    int job_ok = 1;
    if (!strncmp(spec, "/job:", 5)) {
        /* "/job:J/replica:R/task:T/device:..." */
        const char *dev = strstr(spec, "/device:");
        char want[96];
        snprintf(want, sizeof want, "/job:%s/replica:0/task:%d", s->job, s->task);
        if (!dev) goto bad;
        job_ok = (size_t)(dev - spec) == strlen(want) && !strncmp(spec, want, strlen(want));
        local = dev;
    }
    dev_kind kind;
    int ord;
    if (parse_local(local, &kind, &ord)) goto bad;
    if (canon) {
        if (local != spec) snprintf(canon, canon_n, "%.*s/device:%s:%d", (int)(local - spec), spec,
                                    kind == DEV_GPU ? "GPU" : "CPU", ord);
        else snprintf(canon, canon_n, "/device:%s:%d", kind == DEV_GPU ? "GPU" : "CPU", ord);
    }
    return job_ok ? dev_index(s, kind, ord) : -1;
bad:
    return dp_fail(err, DP_EINVAL, "\"%s\" is not a device (e.g. /cpu:0, /gpu:1, /device:GPU:0)", spec);
}

int dev_rule_parse(const char *text, dev_rule *r, const char *what, char *err)
{
    const char *eq = strrchr(text, '=');
    if (!eq || eq == text || !eq[1])
        return dp_fail(err, DP_EINVAL, "%s: \"%s\" is not PATTERN=DEVICE (e.g. 'hidden/*=/cpu:1')", what, text);
    size_t pl = (size_t)(eq - text);
    if (pl >= sizeof r->pattern || strlen(eq + 1) >= sizeof r->device)
        return dp_fail(err, DP_EINVAL, "%s: \"%s\" is too long", what, text);
    memcpy(r->pattern, text, pl);
    r->pattern[pl] = 0;
    snprintf(r->device, sizeof r->device, "%s", eq + 1);
    dev_kind k;
    int o;
    const char *local = r->device;
    if (!strncmp(local, "/job:", 5)) local = strstr(local, "/device:");
    if (!local || parse_local(local, &k, &o))
        return dp_fail(err, DP_EINVAL, "%s: \"%s\" is not a device (e.g. /cpu:0, /gpu:1, /device:GPU:0)",
                       what, r->device);
    return DP_OK;
}

int dev_rules_parse(const char *text, dev_rule *rules, int *n, int max, const char *what, char *err)
{
    char buf[1024];
    if (strlen(text) >= sizeof buf) return dp_fail(err, DP_EINVAL, "%s: value too long", what);
    snprintf(buf, sizeof buf, "%s", text);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",;", &save); tok; tok = strtok_r(NULL, ",;", &save)) {
        while (*tok == ' ') tok++;
        size_t l = strlen(tok);
        while (l && tok[l - 1] == ' ') tok[--l] = 0;
        if (!*tok) continue;
        if (*n >= max) return dp_fail(err, DP_EINVAL, "%s: at most %d rules", what, max);
        int rc = dev_rule_parse(tok, &rules[*n], what, err);
        if (rc) return rc;
        (*n)++;
    }
    return DP_OK;
}

int dev_rule_first(const dev_rule *rules, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!fnmatch(rules[i].pattern, name, 0)) return i;
    return -1;
}

int dev_place(const dev_set *s, const dev_rule *rules, int n_rules, const char *name, int def,
              int soft, int *fell_back, char *err)
{
    if (fell_back) *fell_back = 0;
    int i = dev_rule_first(rules, n_rules, name);
    if (i < 0) return def;
    char canon[DEV_NAME_MAX + 16];
    int d = dev_find(s, rules[i].device, canon, sizeof canon, err);
    if (d >= 0) return d;
    if (d != -1) return d;
    if (soft) {
        if (fell_back) *fell_back = 1;
        return def;
    }
    char avail[DEV_MAX * (DEV_NAME_MAX + 2)];
    size_t o = 0;
    avail[0] = 0;
    for (int k = 0; k < s->n; k++)
        o += (size_t)snprintf(avail + o, sizeof avail - o, "%s%s", k ? ", " : "", s->dev[k].name);
    return dp_fail(err, DP_EINVAL, "Cannot assign a device for operation '%s': Could not satisfy "
                   "explicit device specification '%s' because no devices matching that "
                   "specification are registered in this process; available devices: %s",
                   name, canon, avail);
}
