/* data_cache.h — decoded IDX images kept on disk: gunzipping Fashion-MNIST's training
 * images costs a task about a third of a second of a core, every task of every run. The
 * first task to read a file stores its pixel bytes in the cache; every later one maps
 * them (read-only, shared by every process of the machine through the page cache).
 *
 * Where: $DOWNPOUR_DATA_CACHE (a folder; "off" turns the cache off), else
 * $XDG_CACHE_HOME/downpour, else $HOME/.cache/downpour. A cache file is named after the
 * source's path and holds, before the pixels, what it was made from: the source's
 * device, inode, size and modification time, all checked against the source's stat
 * before use (a changed or replaced source is decoded again), and a count checked
 * against the file's size. Writing goes to a temporary file renamed into place, so a
 * reader never sees half a file and tasks that decode at once do not collide. Anything
 * failing (no home, a read-only or full disk) only means no cache: the source is read. */
#ifndef RUNTIME_DATA_CACHE_H
#define RUNTIME_DATA_CACHE_H

#include <stddef.h>
#include <stdint.h>

typedef struct dcache_map {
    const uint8_t *px;   /* n x 784 pixel bytes, inside map */
    int n;
    void *map;           /* munmap(map, map_len) when done */
    size_t map_len;
} dcache_map;

/* The cache folder in out (len bytes); 0 when the cache is off or there is no folder
 * to name. */
int dcache_dir(char *out, size_t len);

/* Maps the cached pixels of IDX image file src: 1 with *m filled, 0 when the cache is
 * off or holds no current copy. */
int dcache_open(const char *src, dcache_map *m);

/* Stores n x 784 pixel bytes decoded from src (best effort, silent on failure). */
void dcache_store(const char *src, const uint8_t *px, int n);

#endif
