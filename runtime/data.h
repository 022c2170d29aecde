/* data.h — training data: Fashion-MNIST from gzip IDX files (read with zlib; every header
 * validated), or a seeded synthetic, learnable data set for fast tests; and the batch
 * order shared by all workers (one seeded permutation per epoch; global batch k is
 * W*b consecutive samples of it, worker i takes slice i), so that W workers x batch b
 * in sync see exactly what 1 worker x batch W*b sees. */
#ifndef RUNTIME_DATA_H
#define RUNTIME_DATA_H

#include <stddef.h>
#include <stdint.h>

#define DATA_DEFAULT_DIR "/usr/share/datasets/fashion-mnist"
#define DATA_FEATURES 784
#define DATA_CLASSES 10

/* n samples of 784 features in [0,1] (row-major, n x 784) and labels 0..9. A set read
 * from IDX files keeps its pixels as bytes (px: x = px / 255, a quarter of the memory,
 * mapped from the decoded cache when there is one and shared by every process that maps
 * it); a synthetic set keeps floats. dataset_gather reads either; dataset_x gives floats
 * for a whole-set pass (evaluation). */
typedef struct dataset {
    int n;
    float *x;           /* owned; NULL while px holds the pixels (dataset_x makes it) */
    const uint8_t *px;  /* n x 784 pixel bytes, or NULL (a synthetic set) */
    uint8_t *y;         /* owned */
    void *px_own;       /* px when malloc'd (freed), else NULL */
    void *px_map;       /* the cache file's mapping holding px, or NULL */
    size_t px_map_len;
    int cached;         /* 1 when px came from the decoded cache (data_cache.h) */
} dataset;

/* Reads an IDX image file (magic 0x00000803, gzip or plain), dims n x rows x cols with
 * rows*cols == 784, pixels scaled to [0,1]. *x is malloc'd (caller frees). Errors
 * (DP_EINVAL/DP_EIO/DP_ECORRUPT, message names the file and the byte offset): cannot
 * open, bad gzip, bad magic, wrong number of dimensions, dimensions not 28x28 or zero,
 * count over 10,000,000, truncated data, trailing bytes. */
int idx_read_images(const char *path, float **x, int *n, char *err);

/* As idx_read_images, keeping the pixel bytes (*px, n x 784, malloc'd). */
int idx_read_pixels(const char *path, uint8_t **px, int *n, char *err);

/* Reads an IDX label file (magic 0x00000801); labels must be 0..9 (a bad one is an
 * error naming its index). *y is malloc'd (caller frees). */
int idx_read_labels(const char *path, uint8_t **y, int *n, char *err);

/* Loads dir/train-images-idx3-ubyte.gz + dir/train-labels-idx1-ubyte.gz (train=1) or
 * the t10k-* pair (train=0); also accepts the names without ".gz". Image and label
 * counts must agree. The images' pixels come from the decoded cache when it holds this
 * file (runtime/data_cache.h), else from the file (and are then cached). Release with
 * dataset_release(). */
int dataset_load(dataset *ds, const char *dir, int train, char *err);
/* Before any task starts: "synthetic", or a folder where dataset_load finds all four
 * files readable (with or without ".gz"). 0, or DP_EINVAL naming --data and the file. */
int dataset_check(const char *dir, char *err);

/* The set as n x 784 floats (converted from px at the first call, then kept). */
const float *dataset_x(dataset *ds);
/* Samples first .. first + count - 1 as floats into x (count x 784), from the pixel bytes
 * or the floats, whichever the set keeps: the same bits as dataset_x's rows, without
 * making the whole set's floats. */
void dataset_rows(const dataset *ds, int first, int count, float *x);
/* dataset_rows for nn_evaluate_rows (ctx: the dataset): an evaluation a batch at a time,
 * of DATA_EVAL_BATCH rows. */
#define DATA_EVAL_BATCH 1000
void dataset_rows_fn(void *ctx, int first, int count, float *x);

/* Generates a seeded, learnable synthetic set of n samples: 10 class prototypes (from
 * `seed`), each sample a noisy copy of its class prototype (noise from seed and train,
 * so train and test differ but share prototypes). A softmax model reaches > 90%. */
void dataset_synthetic(dataset *ds, int n, uint64_t seed, int train);

void dataset_release(dataset *ds);

/* The batch order. */
typedef struct batch_order {
    int n;            /* samples in the data set */
    int n_workers;
    int batch;        /* per worker */
    uint64_t seed;
    int epoch;        /* epoch whose permutation is in perm, -1 none */
    int *perm;        /* owned, n entries */
} batch_order;

/* Initialises; n_workers * batch must be <= n (DP_EINVAL otherwise). Release with
 * batch_order_release(). */
int batch_order_init(batch_order *o, int n, int n_workers, int batch, uint64_t seed, char *err);
void batch_order_release(batch_order *o);

/* Writes the sample indices of worker `worker`'s batch at its local step `step`
 * (0-based) into idx (batch entries). Global batch k = step covers positions
 * [k*W*b, (k+1)*W*b) of the concatenation of per-epoch permutations, where an epoch
 * holds floor(n / (W*b)) global batches (the tail of each permutation is skipped). */
void batch_order_indices(batch_order *o, int worker, int64_t step, int *idx);

/* Gathers rows idx[0..count) of ds into x (count x 784 floats, px / 255 for a byte set:
 * the same bits as dataset_x) and y. */
void dataset_gather(const dataset *ds, const int *idx, int count, float *x, uint8_t *y);

/* Asks the CPU to bring rows idx[0..count) into its caches (a hint: the next batch,
 * gathered after a compute that would otherwise wait for memory). */
void dataset_prefetch(const dataset *ds, const int *idx, int count);

#endif
