// Counts the heap allocations of the benchmark process, so a row can report allocations per call
// next to raw AsyncHTTPClient's. An executable's own `malloc` wins over libc's for every library
// it loads (ELF symbol interposition), so defining the allocation functions here and passing on
// to glibc's `__libc_*` entry points counts every block Swift, Foundation and NIO ask for.
// Benchmark-only: nothing in the library products links this.
#include "CMallocCounter.h"

#include <stdlib.h>  // defines __GLIBC__ on glibc (through features.h), for the check below

#if defined(__linux__) && defined(__GLIBC__)
#include <errno.h>
#include <stdatomic.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);
extern void __libc_free(void *pointer);

static _Atomic unsigned long long allocations;

static inline void count(void) { atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed); }

void *malloc(size_t size) {
    count();
    return __libc_malloc(size);
}

void *calloc(size_t count_, size_t size) {
    count();
    return __libc_calloc(count_, size);
}

void *realloc(void *pointer, size_t size) {
    if (pointer == NULL) count();
    return __libc_realloc(pointer, size);
}

void free(void *pointer) { __libc_free(pointer); }

void *memalign(size_t alignment, size_t size) {
    count();
    return __libc_memalign(alignment, size);
}

void *aligned_alloc(size_t alignment, size_t size) {
    count();
    return __libc_memalign(alignment, size);
}

int posix_memalign(void **result, size_t alignment, size_t size) {
    if (alignment % sizeof(void *) != 0 || (alignment & (alignment - 1)) != 0) return EINVAL;
    count();
    void *pointer = __libc_memalign(alignment, size);
    if (pointer == NULL && size != 0) return ENOMEM;
    *result = pointer;
    return 0;
}

unsigned long long callsign_bench_allocations(void) { return atomic_load_explicit(&allocations, memory_order_relaxed); }
#else
unsigned long long callsign_bench_allocations(void) { return 0; }
#endif
