/* shm.h — the shared-memory channel under a net_conn between two processes of one host
 * (docs/wire.md, "Shared memory"): one memfd holding two single-producer single-consumer
 * byte rings (client -> server, server -> client), and two pipes as doorbells, one per
 * side, that a libev loop watches. The client makes it and offers it in a frame (pid, fd
 * numbers, a random token, the boot id); the server opens the pieces through
 * /proc/<pid>/fd/<n> and checks them. The bytes in the rings are the same frames a TCP
 * connection carries; net/conn.c reads and validates them exactly as TCP bytes.
 *
 * - Nothing the peer writes is trusted: its ring counter is bounded against the ring's
 *   size on every read (a bad one is DP_EPROTO), the memfd must be sealed against
 *   shrinking (no SIGBUS from a peer that truncates it) and carry the offer's token.
 * - Wake-ups: a side that finds its incoming ring empty (or its outgoing ring full) says
 *   so in the shared header and re-checks; the peer rings its doorbell only then (no
 *   system call per frame while both are busy).
 * - A side's doorbell reads EOF once the peer's process is gone.
 * One thread per side; the two sides run in two processes (or two threads in tests). */
#ifndef NET_SHM_H
#define NET_SHM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

typedef struct shm_chan shm_chan;

#define SHM_OFFER_BYTES 56            /* the SHM_OFFER frame's payload */
#define SHM_RING_DEFAULT (512u << 10) /* each direction's ring: small enough to stay in
                                     * cache (measured: 4 MiB rings were slower) */
#define SHM_RING_MIN (4u << 10)
#define SHM_RING_MAX (64u << 20)

/* Client: makes the memfd (two rings of ring_bytes each, a power of two within
 * SHM_RING_MIN..MAX) and the doorbells, and writes the offer's payload. Returns the
 * channel (caller frees with shm_chan_free) or NULL with err (memfd_create missing, no
 * boot id, ...). */
shm_chan *shm_chan_offer(uint32_t ring_bytes, uint8_t offer[SHM_OFFER_BYTES], char *err);

/* Client: the server took the offer (it holds its own descriptors now): closes the memfd
 * and the pipe ends only the server needed, so that the doorbell reads EOF when the
 * server dies. */
void shm_chan_accepted(shm_chan *ch);

/* Server: opens a client's offer (the same user's process on this host). Returns 0 with
 * *out (caller frees with shm_chan_free), or DP_EINVAL with err: another host (boot ids
 * differ), a descriptor that cannot be opened or is not what the offer says, no seal, a
 * wrong size or token. */
int shm_chan_accept(const uint8_t offer[SHM_OFFER_BYTES], shm_chan **out, char *err);

/* Unmaps the rings and closes every descriptor. NULL is a no-op. */
void shm_chan_free(shm_chan *ch);

/* The doorbell to watch for reading: readable when the peer rang or went away. */
int shm_chan_bell_fd(const shm_chan *ch);

/* Empties the doorbell. Returns 0, or DP_ECLOSED when the peer's end is closed. */
int shm_chan_bell_drain(shm_chan *ch);

/* Copies up to n bytes out of the incoming ring into p (rings the peer when it waits for
 * room). Returns the count (0: empty) or DP_EPROTO when the peer's counter is beyond
 * the ring (err says so). */
ssize_t shm_chan_read(shm_chan *ch, void *p, size_t n, char *err);

/* The next n incoming bytes where they lie in the ring, without consuming them: 1 with *p
 * set (n contiguous bytes: the incoming ring is mapped twice, back to back, so a run that
 * wraps is one run; read-only, and the peer's memory: it may change them under us), 0
 * while fewer are in (the peer is asked to ring when it writes more), DP_EPROTO when the
 * peer's counter is beyond the ring, DP_EINVAL when n exceeds the ring (err says so).
 * Consume them with shm_chan_consume once done. */
int shm_chan_peek(shm_chan *ch, size_t n, const void **p, char *err);

/* Where the next incoming byte lies from the ring's start (the ring is page-aligned):
 * what a lent payload's alignment is. */
size_t shm_chan_rx_offset(const shm_chan *ch);

/* Releases n peeked bytes to the peer (n no more than the last peek's); while runs
 * are held the peer gets the room back only up to the oldest of them. */
void shm_chan_consume(shm_chan *ch, size_t n);

/* Holding: the n peeked bytes are read (the read position moves past them) but stay
 * the consumer's, unwritable for the peer, until shm_chan_unhold(ch, p) with the
 * returned pointer (their start). Runs may be released in any order; the peer's room
 * comes back up to the oldest run still held. At most SHM_HOLDS at once (asserted). */
#define SHM_HOLDS 64
const void *shm_chan_hold(shm_chan *ch, size_t n);
void shm_chan_unhold(shm_chan *ch, const void *p);
int shm_chan_holds(const shm_chan *ch);

/* Bytes read but not yet given back to the peer (held runs and all read after the
 * oldest of them): a payload of n more bytes can arrive whole only while this + n fits
 * the ring. */
size_t shm_chan_unreleased(const shm_chan *ch);

/* Copies as much of iov[0..n) as fits into the outgoing ring, in order, and publishes it
 * (ringing the peer when it waits). Returns the count (0: full) or DP_EPROTO. */
ssize_t shm_chan_writev(shm_chan *ch, const struct iovec *iov, int n, char *err);

/* About to wait with an empty incoming ring: tells the peer to ring, then looks again.
 * Returns 1 when bytes came meanwhile (read on), 0 to wait for the doorbell. */
int shm_chan_rx_wait(shm_chan *ch);

/* About to wait with a full outgoing ring: as shm_chan_rx_wait, for room. */
int shm_chan_tx_wait(shm_chan *ch);

/* Bytes waiting in the incoming ring (bounded by the ring's size). */
size_t shm_chan_rx_pending(const shm_chan *ch);

/* The ring size in bytes, each direction. */
uint32_t shm_chan_ring_bytes(const shm_chan *ch);

#endif
