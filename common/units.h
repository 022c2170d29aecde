/* units.h — parsers for values with units (sizes, bandwidths, times), shared by the
 * simulator's and the runtime's flags and by scenario files. Each fills err with one line
 * naming `what` (e.g. "--latency"), the text and what was expected. Pure; no state. */
#ifndef DP_UNITS_H
#define DP_UNITS_H

/* Sizes: "100MB", "4 KiB", "12" (bytes); B KB MB GB TB (powers of 1000), KiB MiB GiB TiB. */
int dp_parse_bytes(const char *s, const char *what, double *bytes, char *err);
/* Bandwidth: "10Gbit", "100 Mbit", "1.5Gbit/s" (bits/s, powers of 1000; also bit, Kbit,
 * Tbit, and byte rates "125MB/s"). Returns bytes per second in *bytes_per_s (> 0). */
int dp_parse_bandwidth(const char *s, const char *what, double *bytes_per_s, char *err);
/* Times: "50us", "100ms", "1.5s", "200ns", "2min" (a unit is required; "0" alone is
 * accepted). Returns seconds in *seconds (>= 0). */
int dp_parse_time(const char *s, const char *what, double *seconds, char *err);

#endif
