#define _GNU_SOURCE
/* shm.c — the shared-memory channel (shm.h). Layout of the memfd: one 4 KiB header page
 * (magic, version, ring size, token; then each ring's control block, every counter and
 * flag on its own cache line), ring 0's bytes (client -> server), ring 1's (server ->
 * client). Counters are 64-bit byte counts that only grow: the producer owns `tail`, the
 * consumer `head`; each side keeps its own counter in private memory and only publishes
 * it, so a peer scribbling on the shared header can at worst stall or corrupt its own
 * connection, which the bounds checks then close. Wake-ups follow the eventcount
 * pattern: flag (seq_cst), re-check; the other side publishes (seq_cst), then reads the
 * flag. Doorbells are pipes, not eventfds: an eventfd cannot be opened through
 * /proc/<pid>/fd (ENXIO), a pipe can. Each side also maps its incoming ring twice, back
 * to back and read-only: a run that wraps is contiguous there (reads are one memcpy, and
 * shm_chan_peek lends a payload where it lies). */
#include "net/shm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "common/dp.h"

#define SHM_MAGIC 0x474e5252484d5344ull  /* "DSMHRRNG" */
#define SHM_VERSION 1
#define HDR_BYTES 4096
#define TOKEN_BYTES 16
#define BOOT_BYTES 16
#define CTL_BASE 64
#define CTL_STRIDE 256   /* one ring's four lines */

typedef struct ring {
    _Atomic uint64_t *tail, *head;
    _Atomic uint32_t *rx_wait;   /* the consumer waits for bytes */
    _Atomic uint32_t *tx_wait;   /* the producer waits for room */
    uint8_t *data;               /* the incoming ring: its second mapping follows it */
} ring;

struct shm_chan {
    uint8_t *map;
    size_t map_len;
    uint8_t *rx_view;            /* the incoming ring mapped twice (2 * size, read-only) */
    uint32_t size;               /* each ring, a power of two */
    ring tx, rx;
    uint64_t tx_tail, rx_head;   /* our own counters: the shared copies are only published */
    uint64_t rx_pub;             /* the head we published: all before it is released; the
                                  * oldest held run's start while runs are held */
    uint64_t hold_at[SHM_HOLDS]; /* the held runs' starts, oldest first, ... */
    uint8_t hold_done[SHM_HOLDS];/* ... and whether each was released (out of order) */
    int n_holds;
    int memfd;                   /* client, until accepted */
    int bell_in, bell_out;       /* our doorbell (read), the peer's (write) */
    int spare_in, spare_out;     /* client, until accepted: the ends the server opens */
};

static void ring_at(ring *r, uint8_t *map, int which, uint32_t size)
{
    uint8_t *ctl = map + CTL_BASE + (size_t)which * CTL_STRIDE;
    r->tail = (_Atomic uint64_t *)(void *)ctl;
    r->head = (_Atomic uint64_t *)(void *)(ctl + 64);
    r->rx_wait = (_Atomic uint32_t *)(void *)(ctl + 128);
    r->tx_wait = (_Atomic uint32_t *)(void *)(ctl + 192);
    r->data = map + HDR_BYTES + (size_t)which * size;
}

static void close_fd(int *fd)
{
    if (*fd >= 0) close(*fd);
    *fd = -1;
}

static shm_chan *chan_alloc(void)
{
    shm_chan *ch = xcalloc(1, sizeof *ch);
    ch->memfd = ch->bell_in = ch->bell_out = ch->spare_in = ch->spare_out = -1;
    return ch;
}

void shm_chan_free(shm_chan *ch)
{
    if (!ch) return;
    if (ch->map) munmap(ch->map, ch->map_len);
    if (ch->rx_view) munmap(ch->rx_view, 2 * (size_t)ch->size);
    close_fd(&ch->memfd);
    close_fd(&ch->bell_in);
    close_fd(&ch->bell_out);
    close_fd(&ch->spare_in);
    close_fd(&ch->spare_out);
    free(ch);
}

/* This boot's id (/proc/sys/kernel/random/boot_id) as 16 bytes: two processes with the
 * same one run on one kernel, so the offer's pid and descriptors name theirs. */
static int boot_id(uint8_t out[BOOT_BYTES], char *err)
{
    char text[64] = {0};
    int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return dp_fail(err, DP_EIO, "/proc/sys/kernel/random/boot_id: %s", strerror(errno));
    ssize_t r = read(fd, text, sizeof text - 1);
    close(fd);
    int n = 0;
    for (ssize_t i = 0; i < r && n < 2 * BOOT_BYTES; i++) {
        int c = text[i], v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (v < 0) continue;
        if (n % 2 == 0) out[n / 2] = (uint8_t)(v << 4);
        else out[n / 2] |= (uint8_t)v;
        n++;
    }
    if (n != 2 * BOOT_BYTES) return dp_fail(err, DP_EIO, "/proc/sys/kernel/random/boot_id: not a UUID");
    return DP_OK;
}

/* Maps ring `which` of the memfd twice, back to back and read-only, as the incoming
 * ring's bytes: a run of bytes that wraps at the ring's end is contiguous there (what
 * shm_chan_peek lends). Returns 0, or DP_EIO with err. */
static int map_rx_twice(shm_chan *ch, int fd, int which, char *err)
{
    size_t size = ch->size;
    uint8_t *v = mmap(NULL, 2 * size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (v == MAP_FAILED) return dp_fail(err, DP_EIO, "reserving the ring's view: %s", strerror(errno));
    ch->rx_view = v;
    off_t at = (off_t)(HDR_BYTES + (size_t)which * size);
    for (int k = 0; k < 2; k++)
        if (mmap(v + (size_t)k * size, size, PROT_READ, MAP_SHARED | MAP_FIXED, fd, at) == MAP_FAILED)
            return dp_fail(err, DP_EIO, "mapping the incoming ring: %s", strerror(errno));
    ch->rx.data = v;
    return DP_OK;
}

static int valid_size(uint32_t s) { return s >= SHM_RING_MIN && s <= SHM_RING_MAX && !(s & (s - 1)); }

shm_chan *shm_chan_offer(uint32_t ring_bytes, uint8_t offer[SHM_OFFER_BYTES], char *err)
{
    uint8_t boot[BOOT_BYTES], token[TOKEN_BYTES];
    int to_server[2] = {-1, -1}, to_client[2] = {-1, -1};
    shm_chan *ch = chan_alloc();
    dp_assert("shm: ring size is a power of two within SHM_RING_MIN..MAX", valid_size(ring_bytes));
    if (boot_id(boot, err)) goto fail;
    ch->size = ring_bytes;
    ch->map_len = HDR_BYTES + 2 * (size_t)ring_bytes;
    ch->memfd = memfd_create("downpour-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (ch->memfd < 0) {
        dp_fail(err, DP_EIO, "memfd_create: %s", strerror(errno));
        goto fail;
    }
    if (ftruncate(ch->memfd, (off_t)ch->map_len) < 0) {
        dp_fail(err, DP_EIO, "ftruncate of the memfd: %s", strerror(errno));
        goto fail;
    }
    /* The server maps it too: neither side may shrink it under the other (SIGBUS). */
    if (fcntl(ch->memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
        dp_fail(err, DP_EIO, "sealing the memfd: %s", strerror(errno));
        goto fail;
    }
    ch->map = mmap(NULL, ch->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, ch->memfd, 0);
    if (ch->map == MAP_FAILED) {
        ch->map = NULL;
        dp_fail(err, DP_EIO, "mmap of the memfd: %s", strerror(errno));
        goto fail;
    }
    if (pipe2(to_server, O_CLOEXEC | O_NONBLOCK) < 0 || pipe2(to_client, O_CLOEXEC | O_NONBLOCK) < 0) {
        dp_fail(err, DP_EIO, "pipe: %s", strerror(errno));
        goto fail;
    }
    ch->bell_in = to_client[0];
    ch->spare_out = to_client[1];
    ch->spare_in = to_server[0];
    ch->bell_out = to_server[1];
    to_server[0] = to_server[1] = to_client[0] = to_client[1] = -1;
    randombytes_buf(token, sizeof token);
    dp_put_u64(ch->map, SHM_MAGIC);
    dp_put_u32(ch->map + 8, SHM_VERSION);
    dp_put_u32(ch->map + 12, ring_bytes);
    memcpy(ch->map + 16, token, TOKEN_BYTES);
    ring_at(&ch->tx, ch->map, 0, ring_bytes);
    ring_at(&ch->rx, ch->map, 1, ring_bytes);
    if (map_rx_twice(ch, ch->memfd, 1, err)) goto fail;
    dp_put_u32(offer, (uint32_t)getpid());
    dp_put_u32(offer + 4, (uint32_t)ch->memfd);
    dp_put_u32(offer + 8, (uint32_t)ch->bell_out);
    dp_put_u32(offer + 12, (uint32_t)ch->bell_in);
    dp_put_u32(offer + 16, ring_bytes);
    dp_put_u32(offer + 20, SHM_VERSION);
    memcpy(offer + 24, token, TOKEN_BYTES);
    memcpy(offer + 40, boot, BOOT_BYTES);
    return ch;
fail:
    for (int i = 0; i < 2; i++) {
        close_fd(&to_server[i]);
        close_fd(&to_client[i]);
    }
    shm_chan_free(ch);
    return NULL;
}

void shm_chan_accepted(shm_chan *ch)
{
    close_fd(&ch->memfd);
    close_fd(&ch->spare_in);
    close_fd(&ch->spare_out);
}

/* Opens /proc/<pid>/fd/<n> when it is a file of `type` (S_IFREG, S_IFIFO): checked
 * before the open (no open of a device or socket with side effects) and after (the
 * same inode). Returns the descriptor, or -1 with err. */
static int open_peer_fd(uint32_t pid, uint32_t n, mode_t type, int flags, const char *what, char *err)
{
    char path[64];
    struct stat a, b;
    snprintf(path, sizeof path, "/proc/%u/fd/%u", pid, n);
    if (stat(path, &a) < 0) {
        dp_fail(err, DP_EINVAL, "%s %s: %s", what, path, strerror(errno));
        return -1;
    }
    if ((a.st_mode & S_IFMT) != type) {
        dp_fail(err, DP_EINVAL, "%s %s is not a %s", what, path, type == S_IFREG ? "memfd" : "pipe");
        return -1;
    }
    int fd = open(path, flags | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        dp_fail(err, DP_EINVAL, "%s %s: %s", what, path, strerror(errno));
        return -1;
    }
    if (fstat(fd, &b) < 0 || b.st_dev != a.st_dev || b.st_ino != a.st_ino) {
        close(fd);
        dp_fail(err, DP_EINVAL, "%s %s changed while it was opened", what, path);
        return -1;
    }
    return fd;
}

int shm_chan_accept(const uint8_t offer[SHM_OFFER_BYTES], shm_chan **out, char *err)
{
    uint8_t boot[BOOT_BYTES];
    uint32_t pid = dp_get_u32(offer), mfd = dp_get_u32(offer + 4), bin = dp_get_u32(offer + 8),
             bout = dp_get_u32(offer + 12), size = dp_get_u32(offer + 16), ver = dp_get_u32(offer + 20);
    shm_chan *ch = chan_alloc();
    int fd = -1, rc = DP_EINVAL;
    struct stat st;
    *out = NULL;
    if (ver != SHM_VERSION) {
        dp_fail(err, rc, "shared-memory version %u (this side speaks %d)", ver, SHM_VERSION);
        goto fail;
    }
    if (!valid_size(size)) {
        dp_fail(err, rc, "ring of %u bytes (a power of two within %u..%u)", size, SHM_RING_MIN, SHM_RING_MAX);
        goto fail;
    }
    if (boot_id(boot, err)) goto fail;
    if (memcmp(boot, offer + 40, BOOT_BYTES)) {
        dp_fail(err, rc, "the peer runs on another host (another boot id)");
        goto fail;
    }
    ch->size = size;
    ch->map_len = HDR_BYTES + 2 * (size_t)size;
    if ((fd = open_peer_fd(pid, mfd, S_IFREG, O_RDWR, "memfd", err)) < 0) goto fail;
    int seals = fcntl(fd, F_GET_SEALS);
    if (seals < 0 || !(seals & F_SEAL_SHRINK)) {
        dp_fail(err, rc, "the memfd is not sealed against shrinking");
        goto fail;
    }
    if (fstat(fd, &st) < 0 || (uint64_t)st.st_size != ch->map_len) {
        dp_fail(err, rc, "the memfd holds %lld bytes, not %zu", (long long)st.st_size, ch->map_len);
        goto fail;
    }
    ch->map = mmap(NULL, ch->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (ch->map == MAP_FAILED) {
        ch->map = NULL;
        dp_fail(err, DP_EIO, "mmap of the peer's memfd: %s", strerror(errno));
        goto fail;
    }
    ring_at(&ch->tx, ch->map, 1, size);
    ring_at(&ch->rx, ch->map, 0, size);
    if (map_rx_twice(ch, fd, 0, err)) {
        rc = DP_EIO;
        goto fail;
    }
    close_fd(&fd);
    if (dp_get_u64(ch->map) != SHM_MAGIC || dp_get_u32(ch->map + 8) != SHM_VERSION ||
        dp_get_u32(ch->map + 12) != size || sodium_memcmp(ch->map + 16, offer + 24, TOKEN_BYTES)) {
        dp_fail(err, rc, "the memfd does not carry the offer's token");
        goto fail;
    }
    if ((ch->bell_in = open_peer_fd(pid, bin, S_IFIFO, O_RDONLY, "doorbell", err)) < 0) goto fail;
    if ((ch->bell_out = open_peer_fd(pid, bout, S_IFIFO, O_WRONLY, "doorbell", err)) < 0) goto fail;
    /* The client wrote nothing yet (it waits for our answer); start from what is there
     * anyway, bounded when read. */
    ch->rx_head = ch->rx_pub = atomic_load(ch->rx.head);
    ch->tx_tail = atomic_load(ch->tx.tail);
    *out = ch;
    return DP_OK;
fail:
    if (fd >= 0) close(fd);
    shm_chan_free(ch);
    return rc;
}

int shm_chan_bell_fd(const shm_chan *ch) { return ch->bell_in; }
uint32_t shm_chan_ring_bytes(const shm_chan *ch) { return ch->size; }

int shm_chan_bell_drain(shm_chan *ch)
{
    uint8_t b[64];
    for (;;) {
        ssize_t r = read(ch->bell_in, b, sizeof b);
        if (r == (ssize_t)sizeof b) continue;
        if (r > 0) return DP_OK;
        if (r == 0) return DP_ECLOSED;
        if (errno == EINTR) continue;
        return errno == EAGAIN || errno == EWOULDBLOCK ? DP_OK : DP_ECLOSED;
    }
}

/* A full pipe already holds a wake-up; a closed one is the peer's death, which its own
 * doorbell and the TCP socket report. */
static void ring_bell(shm_chan *ch)
{
    static const uint8_t one = 1;
    while (write(ch->bell_out, &one, 1) < 0 && errno == EINTR) {
    }
}

/* Wakes the peer when it said it waits on `flag`. */
static void wake_if(shm_chan *ch, _Atomic uint32_t *flag)
{
    if (atomic_load(flag) && atomic_exchange(flag, 0)) ring_bell(ch);
}

size_t shm_chan_rx_pending(const shm_chan *ch)
{
    uint64_t avail = atomic_load_explicit(ch->rx.tail, memory_order_acquire) - ch->rx_head;
    return avail > ch->size ? ch->size : (size_t)avail;
}

/* Bytes in beyond our read position, or DP_EPROTO when the peer's counter is more than
 * a ring ahead of what we released (it would have written over held bytes). */
static int64_t rx_avail(shm_chan *ch, char *err)
{
    uint64_t tail = atomic_load_explicit(ch->rx.tail, memory_order_acquire);
    if (tail - ch->rx_pub > ch->size)
        return dp_fail(err, DP_EPROTO, "the peer's ring counter is %llu bytes ahead of a %u-byte ring",
                       (unsigned long long)(tail - ch->rx_pub), ch->size);
    return (int64_t)(tail - ch->rx_head);
}

/* Publishes the head: the oldest held run's start, or the read position. */
static void rx_publish(shm_chan *ch)
{
    uint64_t head = ch->n_holds ? ch->hold_at[0] : ch->rx_head;
    if (head == ch->rx_pub) return;
    ch->rx_pub = head;
    atomic_store(ch->rx.head, head);
    wake_if(ch, ch->rx.tx_wait);
}

ssize_t shm_chan_read(shm_chan *ch, void *p, size_t n, char *err)
{
    int64_t avail = rx_avail(ch, err);
    if (avail < 0) return avail;
    if (n > (uint64_t)avail) n = (size_t)avail;
    if (!n) return 0;
    memcpy(p, ch->rx.data + (ch->rx_head & (ch->size - 1)), n);   /* mapped twice: one run */
    shm_chan_consume(ch, n);
    return (ssize_t)n;
}

int shm_chan_peek(shm_chan *ch, size_t n, const void **p, char *err)
{
    if (n > ch->size) return dp_fail(err, DP_EINVAL, "%zu bytes do not fit a %u-byte ring", n, ch->size);
    for (int asked = 0;; asked = 1) {
        int64_t avail = rx_avail(ch, err);
        if (avail < 0) return (int)avail;
        if ((uint64_t)avail >= n) {
            if (asked) atomic_store(ch->rx.rx_wait, 0);
            *p = ch->rx.data + (ch->rx_head & (ch->size - 1));
            return 1;
        }
        if (asked) return 0;
        /* as shm_chan_rx_wait: say we wait (seq_cst), then look again */
        atomic_store(ch->rx.rx_wait, 1);
    }
}

size_t shm_chan_rx_offset(const shm_chan *ch) { return (size_t)(ch->rx_head & (ch->size - 1)); }

void shm_chan_consume(shm_chan *ch, size_t n)
{
    ch->rx_head += n;
    rx_publish(ch);
}

size_t shm_chan_unreleased(const shm_chan *ch) { return (size_t)(ch->rx_head - ch->rx_pub); }
int shm_chan_holds(const shm_chan *ch) { return ch->n_holds; }

const void *shm_chan_hold(shm_chan *ch, size_t n)
{
    dp_assert("shm_chan_hold: room for another held run", ch->n_holds < SHM_HOLDS);
    const void *p = ch->rx.data + (ch->rx_head & (ch->size - 1));
    ch->hold_at[ch->n_holds] = ch->rx_head;
    ch->hold_done[ch->n_holds++] = 0;
    ch->rx_head += n;
    return p;
}

void shm_chan_unhold(shm_chan *ch, const void *p)
{
    int i = 0;
    while (i < ch->n_holds && (ch->hold_done[i] || ch->rx.data + (ch->hold_at[i] & (ch->size - 1)) != p)) i++;
    dp_assert("shm_chan_unhold: p is a held run's start", i < ch->n_holds);
    ch->hold_done[i] = 1;
    int k = 0;
    while (k < ch->n_holds && ch->hold_done[k]) k++;
    if (!k) return;
    ch->n_holds -= k;
    memmove(ch->hold_at, ch->hold_at + k, (size_t)ch->n_holds * sizeof *ch->hold_at);
    memmove(ch->hold_done, ch->hold_done + k, (size_t)ch->n_holds);
    rx_publish(ch);
}

ssize_t shm_chan_writev(shm_chan *ch, const struct iovec *iov, int n, char *err)
{
    uint64_t used = ch->tx_tail - atomic_load_explicit(ch->tx.head, memory_order_acquire);
    if (used > ch->size)
        return dp_fail(err, DP_EPROTO, "the peer's ring counter is %llu bytes behind a %u-byte ring",
                       (unsigned long long)used, ch->size);
    size_t room = ch->size - (size_t)used, done = 0;
    for (int i = 0; i < n && room; i++) {
        const uint8_t *src = iov[i].iov_base;
        size_t len = iov[i].iov_len < room ? iov[i].iov_len : room;
        size_t at = (size_t)((ch->tx_tail + done) & (ch->size - 1)), first = ch->size - at;
        if (first > len) first = len;
        memcpy(ch->tx.data + at, src, first);
        if (len > first) memcpy(ch->tx.data, src + first, len - first);
        done += len;
        room -= len;
    }
    if (!done) return 0;
    ch->tx_tail += done;
    atomic_store(ch->tx.tail, ch->tx_tail);
    wake_if(ch, ch->tx.rx_wait);
    return (ssize_t)done;
}

int shm_chan_rx_wait(shm_chan *ch)
{
    atomic_store(ch->rx.rx_wait, 1);
    if (atomic_load(ch->rx.tail) == ch->rx_head) return 0;
    atomic_store(ch->rx.rx_wait, 0);
    return 1;
}

int shm_chan_tx_wait(shm_chan *ch)
{
    atomic_store(ch->tx.tx_wait, 1);
    if (ch->tx_tail - atomic_load(ch->tx.head) >= ch->size) return 0;
    atomic_store(ch->tx.tx_wait, 0);
    return 1;
}
