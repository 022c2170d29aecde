/* fuzz_ckpt.c — libFuzzer target: the checkpoint reader (runtime/ckpt.c). Each input is
 * read three ways: as a checkpoint file as given (mostly a checksum refusal); as the same
 * file with its trailing CRC32 recomputed, so that mutations reach the header and tensor
 * parsing behind the checksum; and as the "checkpoint" index file of a directory
 * (ckpt_latest, ckpt_read_any). A checkpoint that reads is loaded again with ckpt_load
 * into tensors of the sizes it declares. Files live on a memfd and in a private
 * directory under /dev/shm (or $TMPDIR), removed at exit. */
#include "tests/fuzz/fuzz_util.h"

#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "runtime/ckpt.h"

static fuzz_file file;
static char dir[256], index_path[300];

static void remove_dir(void)
{
    unlink(index_path);
    rmdir(dir);
}

static void make_dir(void)
{
    if (dir[0]) return;
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/downpour-fuzz-ckpt.XXXXXX", base ? base : "/tmp");
    if (!mkdtemp(dir)) { perror("mkdtemp"); abort(); }
    snprintf(index_path, sizeof index_path, "%s/checkpoint", dir);
    atexit(remove_dir);
}

static void read_one(const char *path)
{
    char err[DP_ERRLEN];
    ckpt_loaded l;
    if (ckpt_read(path, &l, err) != 0) return;
    ckpt_tensor t[CKPT_MAX_TENSORS];
    for (int i = 0; i < l.n; i++) {
        t[i].name = l.names[i];
        t[i].count = l.count[i];
        t[i].data = malloc(l.count[i] * sizeof(float) + 1);
    }
    int64_t step;
    ckpt_load(path, &step, t, l.n, err);
    for (int i = 0; i < l.n; i++) free(t[i].data);
    ckpt_free_loaded(&l);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet();
    make_dir();
    read_one(fuzz_file_put(&file, data, size));
    if (size >= 4) {
        uint8_t *fixed = malloc(size);
        memcpy(fixed, data, size);
        uint32_t c = (uint32_t)crc32(crc32(0, NULL, 0), fixed, (uInt)(size - 4));
        memcpy(fixed + size - 4, &c, 4);   /* the writer stores it in host order */
        read_one(fuzz_file_put(&file, fixed, size));
        free(fixed);
    }
    FILE *f = fopen(index_path, "wb");
    if (!f) { perror(index_path); abort(); }
    fwrite(data, 1, size, f);
    fclose(f);
    char path[1024], err[DP_ERRLEN];
    ckpt_latest(dir, path, err);
    ckpt_loaded l;
    if (ckpt_read_any(dir, &l, err) == 0) ckpt_free_loaded(&l);
    return 0;
}
