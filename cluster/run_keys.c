/* run_keys.c — the run description's key table (see run.h): every flag and scenario key
 * once, with its INI section, type, range, defaults (the real runtime's and the
 * simulator's), commands, alias and --help line, in the order --help and `downpour keys`
 * print it; and finding a key in it by either spelling (backup_workers, backup-workers),
 * by alias, or nearest to a misspelt name. What the keys drive (parsing and applying
 * values, argv, --help, the summary) is run.c's, through run_keys(). */
#include "cluster/run.h"

#include <stdio.h>
#include <string.h>

#include "cluster/spec.h"
#include "common/dp.h"

enum { C = RUN_CMD_CLUSTER, T = RUN_CMD_TASK, S = RUN_CMD_SIM, L = RUN_CMD_LOCAL, CT = C | T,
       CTS = C | T | S, CTL = C | T | L, CTSL = C | T | S | L };

const char *const run_sections[] = {"scenario", "cluster", "training", "placement", "network",
                                    "faults", "pace", NULL};

/* name, section, type, arg, default, sim default, min, max, min_open, choices, cmds,
 * repeatable, alias, help */
static const run_key keys[] = {
    {"ps", "cluster", RUN_T_INT, "N", "1", NULL, 1, SPEC_MAX_PS, 0, NULL, C | S, 0, NULL,
     "ps tasks"},
    {"workers", "cluster", RUN_T_INT, "N", "2", NULL, 1, SPEC_MAX_WORKERS, 0, NULL, C | S, 0, NULL,
     "worker tasks"},
    {"compute", "cluster", RUN_T_TEXT, "DIST", "constant:mean=100ms", NULL, 0, 0, 0, NULL, S, 0, NULL,
     "per-step compute time: constant:mean=T | normal:mean=T,sd=T | lognormal:mean=T,sigma=X | "
     "exponential:mean=T"},
    {"calibrate_from", "cluster", RUN_T_TEXT, "TRACE", NULL, NULL, 0, 0, 0, NULL, S, 0, NULL,
     "fit compute, bandwidth and latency from a recorded run; explicit keys win"},
    {"mode", "training", RUN_T_ENUM, "M", "sync", NULL, 0, 0, 0, "sync|async|ssp", CTS, 0, NULL,
     "update strategy: SyncReplicasOptimizer, Downpour SGD, or bounded staleness"},
    {"backup_workers", "training", RUN_T_INT, "B", "0", NULL, 0, SPEC_MAX_WORKERS - 1, 0, NULL, CTS, 0,
     NULL, "sync: replicas_to_aggregate = workers - B; late gradients are dropped"},
    {"staleness", "training", RUN_T_INT, "S", "3", NULL, 0, 1000000, 0, NULL, CTS, 0, NULL,
     "ssp: a worker may start step s once the slowest has done s - S"},
    {"prefetch", "training", RUN_T_BOOL, "", NULL, NULL, 0, 1, 0, NULL, CT, 0, NULL,
     "async: pull the next step's parameters while this step computes (DistBelief's prefetch; "
     "its gradients are one step staler)"},
    {"pipeline", "training", RUN_T_REAL, "F", "0", NULL, 0, 0.999, 0, NULL, S, 0, NULL,
     "async/ssp: a worker pushes the gradients its backward pass finishes early (all but the "
     "first layer's weights) after this fraction of its compute, as the runtime does; 0: every "
     "push at the compute's end (a calibrated real run measures it)"},
    {"steps", "training", RUN_T_INT, "N", "1000", "100", 1, 1e12, 0, NULL, CTSL, 0, NULL,
     "train until the global step reaches N"},
    {"batch", "training", RUN_T_INT, "N", "64", NULL, 1, 65536, 0, NULL, CTSL, 0, NULL,
     "batch size per worker"},
    {"lr", "training", RUN_T_REAL, "X", "0.05", "0.2", 0, 1000, 1, NULL, CTSL, 0, NULL,
     "learning rate (sim: of the surrogate)"},
    {"optimizer", "training", RUN_T_ENUM, "O", "sgd", NULL, 0, 0, 0, "sgd|momentum|adagrad", CTSL, 0,
     NULL, "optimizer, applied on the ps"},
    {"model", "training", RUN_T_ENUM, "M", "mlp", NULL, 0, 0, 0, "softmax|mlp", CTSL, 0, NULL,
     "softmax regression or MLP 784-H-10"},
    {"hidden", "training", RUN_T_INT, "N", "128", NULL, 1, 65536, 0, NULL, CTSL, 0, NULL,
     "mlp hidden units"},
    {"model_bytes", "training", RUN_T_BYTES, "SIZE", NULL, NULL, 4, 1e15, 0, NULL, S, 0, NULL,
     "model size, e.g. 100MB (an MLP of about that size, weights partitioned over the ps)"},
    {"data", "training", RUN_T_TEXT, "DIR", "/usr/share/datasets/fashion-mnist", NULL, 0, 0, 0, NULL,
     CTL, 0, NULL, "Fashion-MNIST IDX directory, or 'synthetic'"},
    {"synthetic_samples", "training", RUN_T_INT, "N", "6000", NULL, 100, 1e7, 0, NULL, CTL, 0, NULL,
     "size of the synthetic training set"},
    {"eval_every", "training", RUN_T_INT, "N", "500", NULL, 0, 1e9, 0, NULL, CTSL, 0, NULL,
     "chief evaluates every N global steps (0: only at the end)"},
    {"eval_time", "training", RUN_T_TIME, "T", "0", NULL, 0, 1e6, 0, NULL, S, 0, NULL,
     "each of the chief's evaluations takes T of work before its step (0: not modelled; "
     "--calibrate-from measures it)"},
    {"max_sim_time", "training", RUN_T_TIME, "T", NULL, NULL, 0, 1e9, 0, NULL, S, 0, NULL,
     "stop after this much simulated time (whatever the global step)"},
    {"nqm_dims", "training", RUN_T_INT, "N", "32", NULL, 0, 4096, 0, NULL, S, 0, NULL,
     "dimensions of the simulator's surrogate loss"},
    {"seed", "scenario", RUN_T_INT, "N", "1", NULL, 0, 9e18, 0, NULL, CTSL, 0, NULL,
     "seed for initialisation, data order and the simulator: same seed, same run"},
    {"placement", "placement", RUN_T_ENUM, "P", "round-robin", NULL, 0, 0, 0, "round-robin|greedy",
     CTS, 0, NULL, "variables to ps tasks: round-robin or greedy by size"},
    {"partition", "placement", RUN_T_INT, "K", "1", "0", 0, 1024, 0, NULL, CTS, 0, NULL,
     "split weight matrices into K parts along axis 0 (0: sim picks one per ps with model_bytes)"},
    {"strategy", "placement", RUN_T_ENUM, "S", "single", NULL, 0, 0, 0, "single|towers|split", L, 0, NULL,
     "local: one device does all, one tower per device (gradients averaged on /cpu:0), or layers split over devices"},
    {"cpu_devices", "placement", RUN_T_INT, "N", "1", NULL, 1, 64, 0, NULL, L, 0, NULL,
     "local: virtual CPU devices in the task, each with its own thread (TensorFlow's device_count)"},
    {"worker_devices", "placement", RUN_T_TEXT, "cpu:N|gpu:N", "cpu:1", NULL, 0, 0, 0, NULL, CT, 0, NULL,
     "devices of each worker: it runs one tower per device and pushes their averaged gradients"},
    {"device_for", "placement", RUN_T_TEXT, "PAT=DEV", NULL, NULL, 0, 0, 0, NULL, CTL, 1, NULL,
     "ops whose name matches glob PAT go to device DEV, e.g. 'hidden/*=/gpu:1' (a list, or repeat the flag)"},
    {"allow_soft_placement", "placement", RUN_T_BOOL, "", NULL, NULL, 0, 1, 0, NULL, CTL, 0, NULL,
     "an op whose device does not exist falls back to its default device instead of failing"},
    {"hosts", "placement", RUN_T_TEXT, "N[,JOB:I-J=H]", "0", NULL, 0, 0, 0, NULL, S, 0, NULL,
     "hosts the tasks run on, dealt round-robin (ps first) unless placed, e.g. 2,worker:0-3=1; "
     "0: each task its own host"},
    {"cores_per_host", "placement", RUN_T_INT, "C", "0", NULL, 0, 1e6, 0, NULL, S, 0, NULL,
     "cores of each host, shared by its busy tasks (processor sharing); 0: unlimited"},
    {"ps_pull_cost", "placement", RUN_T_TEXT, "T[,BW]|fit", "0", NULL, 0, 0, 0, NULL, S, 0, NULL,
     "the ps's work per pull answer: T per variable plus its bytes at BW, one message at a time "
     "(a busy task on its host's cores), e.g. 20us,2GB/s; fit: fitted by calibrate_from; 0: none"},
    {"ps_push_cost", "placement", RUN_T_TEXT, "T[,BW]|fit", "0", NULL, 0, 0, 0, NULL, S, 0, NULL,
     "the ps's work per push (the update), like ps_pull_cost; 0: none"},
    {"copy_bandwidth", "placement", RUN_T_TEXT, "BW|0", "0", NULL, 0, 0, 0, NULL, S, 0, NULL,
     "a worker's sending and receiving as work on its host's shared cores: b bytes keep it busy "
     "for b / BW while they travel, and its pull or push ends no sooner (the kernel's copying "
     "on one host); 0: none (a calibrated real run measures it)"},
    {"ps_send_bandwidth", "placement", RUN_T_TEXT, "BW|0", "0", NULL, 0, 0, 0, NULL, S, 0, NULL,
     "a ps's writing of a pull answer as work beside its transfer: after the pull's work the "
     "answer leaves and b bytes keep the ps busy for b / BW, before its next message; 0: none "
     "(a calibrated real run measures it: the ps's CPU beyond the work fitted to its answers)"},
    {"bandwidth", "network", RUN_T_BANDWIDTH, "BW", "10Gbit", NULL, 0, 0, 0, NULL, S, 0, NULL,
     "every NIC, each direction, e.g. 10Gbit"},
    {"ps_bandwidth", "network", RUN_T_BANDWIDTH, "BW", NULL, NULL, 0, 0, 0, NULL, S, 0, NULL,
     "ps NICs only"},
    {"worker_bandwidth", "network", RUN_T_BANDWIDTH, "BW", NULL, NULL, 0, 0, 0, NULL, S, 0, NULL,
     "worker NICs only"},
    {"latency", "network", RUN_T_TIME, "T", "50us", NULL, 0, 60, 0, NULL, S, 0, NULL,
     "one-way latency per message"},
    {"ps_latency", "network", RUN_T_TIME, "T", NULL, NULL, 0, 60, 0, NULL, S, 0, NULL,
     "one-way latency of a message to a ps; unset or 0: as latency (a calibrated real run measures "
     "it: a ps wakes at once, a worker on a crowded host waits for a core, which latency has)"},
    {"netns", "network", RUN_T_BOOL, "", NULL, NULL, 0, 1, 0, NULL, C, 0, NULL,
     "every task in its own network namespace, linked by veth pairs to a bridge, as on separate "
     "hosts (root; Linux)"},
    {"net", "network", RUN_T_TEXT, "JOB:I:SHAPE", NULL, NULL, 0, 0, 0, NULL, C, 1, NULL,
     "shape a task's link, both directions: delay=T,loss=P%,rate=BW, e.g. worker:1:rate=10mbit "
     "(implies --netns; delay and loss need tc netem; repeat the flag)"},
    {"straggler", "faults", RUN_T_STRAGGLER, "worker:IxF", NULL, NULL, 1, 1000, 0, NULL, CTS, 1,
     "slow-worker", "worker I computes F times slower (a list, or repeat the flag; none clears)"},
    {"fail", "faults", RUN_T_TEXT, "JOB:I@step=N", NULL, NULL, 0, 0, 0, NULL, C | S, 1, "kill",
     "a task dies at a step (worker: its own, ps: the global step) or time (@time=T), "
     "optionally ,restart=T (repeat the flag)"},
    {"barrier_timeout", "faults", RUN_T_TIME, "T", "60s", NULL, 0, 86400, 0, NULL, CT, 0, NULL,
     "sync: the run stops with an error when a step waits this long for a replica (0: never)"},
    {"pace", "pace", RUN_T_TIME, "T", "0", NULL, 0, 3600, 0, NULL, CT, 0, NULL,
     "every worker step takes at least T (e.g. 200ms), to watch live; 0: off"},
    /* flags only: where the run goes and how it talks */
    {"trace", NULL, RUN_T_TEXT, "FILE", NULL, NULL, 0, 0, 0, NULL, C | S | L, 0, NULL,
     "record the run's events to FILE"},
    {"summary", NULL, RUN_T_TEXT, "FILE", NULL, NULL, 0, 0, 0, NULL, C | S | L, 0, NULL,
     "also write the summary JSON to FILE"},
    {"hub", NULL, RUN_T_TEXT, "ADDR", NULL, NULL, 0, 0, 0, NULL, CTL, 0, NULL,
     "send events to an existing hub"},
    {"view", NULL, RUN_T_BOOL, "", NULL, NULL, 0, 1, 0, NULL, C | L, 0, NULL, "open the live viewer"},
    {"log_device_placement", NULL, RUN_T_BOOL, "", NULL, NULL, 0, 1, 0, NULL, CTL, 0, NULL,
     "print TensorFlow's device placement log"},
    {"checkpoint_dir", NULL, RUN_T_TEXT, "DIR", NULL, NULL, 0, 0, 0, NULL, CTL, 0, NULL,
     "write checkpoints; resume from one"},
    {"save_checkpoint_steps", "faults", RUN_T_INT, "N", "0", NULL, 0, 1e9, 0, NULL, CTL, 0, NULL,
     "with --checkpoint-dir: also save every N global steps (0: only at the end; the last 5 kept); "
     "in a scenario, run and compare give each variant its own directory"},
    {"save_checkpoint_secs", "faults", RUN_T_INT, "S", "0", NULL, 0, 1e9, 0, NULL, CTL, 0, NULL,
     "with --checkpoint-dir: also save every S seconds (0: off); in a scenario, as "
     "save_checkpoint_steps"},
    {"connect_timeout", NULL, RUN_T_INT, "S", "60", NULL, 1, 86400, 0, NULL, CT, 0, NULL,
     "seconds a worker waits for its ps"},
    {"transport", NULL, RUN_T_ENUM, "T", "tcp", NULL, 0, 0, 0, "tcp|shm", CT, 0, NULL,
     "how workers and ps tasks talk: tcp, or shm (shared-memory rings) where both run on one "
     "host (else TCP, logged)"},
    {"secret_file", NULL, RUN_T_TEXT, "FILE", NULL, NULL, 0, 0, 0, NULL, CT, 0, NULL,
     "the run's shared secret (else $DOWNPOUR_SECRET; cluster makes one up): every connection "
     "authenticates with it (docs/security.md)"},
    {"log_every", NULL, RUN_T_INT, "N", "100", NULL, 1, 1e9, 0, NULL, CTL, 0, NULL,
     "worker progress line every N local steps"},
    {"trace_level", NULL, RUN_T_TEXT, "L", "auto", NULL, 0, 0, 0, NULL, S, 0, NULL,
     "full | sample[:K] | steps | auto (full up to 64 workers, else 16 sampled)"},


    {"quiet", NULL, RUN_T_BOOL, "", NULL, NULL, 0, 1, 0, NULL, CTSL, 0, NULL, "fewer progress lines"},
};

const run_key *run_keys(size_t *n)
{
    *n = DP_ARRAY_LEN(keys);
    return keys;
}

/* Compares a key name with a spelling that may use dashes for underscores. */
static int same_name(const char *key, const char *s)
{
    for (; *key && *s; key++, s++)
        if (*key != *s && !(*key == '_' && *s == '-')) return 0;
    return !*key && !*s;
}

const run_key *run_key_find(const char *name)
{
    for (size_t i = 0; i < DP_ARRAY_LEN(keys); i++)
        if (same_name(keys[i].name, name) || (keys[i].alias && same_name(keys[i].alias, name)))
            return &keys[i];
    return NULL;
}

int run_key_engines(const run_key *k)
{
    return ((k->cmds & (RUN_CMD_CLUSTER | RUN_CMD_TASK | RUN_CMD_LOCAL)) ? RUN_REAL : 0) |
           ((k->cmds & RUN_CMD_SIM) ? RUN_SIM : 0);
}

const char *run_key_default(const run_key *k, int engine)
{
    return engine == RUN_SIM && k->def_sim ? k->def_sim : k->def;
}

void run_key_flag(const run_key *k, char *buf, size_t n)
{
    snprintf(buf, n, "--%s", k->name);
    for (char *p = buf; *p; p++)
        if (*p == '_') *p = '-';
}

int run_key_seen(const unsigned char *seen, size_t n, const char *name)
{
    size_t nk;
    const run_key *all = run_keys(&nk);
    const run_key *k = run_key_find(name);
    return k && (size_t)(k - all) < n && seen[k - all];
}

const run_key *run_key_suggest(const char *name, const char *section)
{
    const run_key *best = NULL;
    size_t best_d = dp_suggest_edits(name) + 1;
    for (size_t i = 0; i < DP_ARRAY_LEN(keys); i++) {
        if (section && (!keys[i].section || strcmp(keys[i].section, section))) continue;
        size_t d = dp_edit_distance(name, keys[i].name);
        if (d < best_d) {
            best_d = d;
            best = &keys[i];
        }
    }
    return best;
}
