#ifndef CMALLOC_COUNTER_H
#define CMALLOC_COUNTER_H

/// How many blocks this process has allocated so far (malloc, calloc, realloc of nothing,
/// aligned allocations), counted by the benchmark's own interposer; 0 where it cannot count.
unsigned long long callsign_bench_allocations(void);

#endif
