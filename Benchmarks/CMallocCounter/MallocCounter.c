// Interposing malloc-family wrappers that count allocation calls (see CMallocCounter.h).
//
// Bootstrapping: the first call into any wrapper resolves the real functions with
// dlsym(RTLD_NEXT, ...). dlsym itself may allocate (glibc's dlerror buffer uses calloc/malloc),
// which would re-enter the wrapper before the real pointers exist. While resolving, a per-thread
// flag sends such calls to a small static bump buffer; free/realloc recognise pointers into that
// buffer and never hand them to glibc.
#define _GNU_SOURCE
#include "CMallocCounter.h"

#include <dlfcn.h>
#include <errno.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef void *(*malloc_fn)(size_t);
typedef void *(*calloc_fn)(size_t, size_t);
typedef void *(*realloc_fn)(void *, size_t);
typedef int (*posix_memalign_fn)(void **, size_t, size_t);
typedef void *(*aligned_alloc_fn)(size_t, size_t);
typedef void (*free_fn)(void *);

static malloc_fn real_malloc;
static calloc_fn real_calloc;
static realloc_fn real_realloc;
static posix_memalign_fn real_posix_memalign;
static aligned_alloc_fn real_aligned_alloc;
static aligned_alloc_fn real_memalign;
static malloc_fn real_valloc;
static free_fn real_free;

static uint64_t total_count;                   // relaxed atomic
static __thread int resolving;                 // initial-exec TLS in the executable: no malloc

// Bump buffer for allocations made by dlsym while the real functions are being resolved.
static _Alignas(64) unsigned char bootstrap_buffer[64 * 1024];
static size_t bootstrap_used;                  // atomic

static int in_bootstrap_buffer(const void *p) {
    const unsigned char *c = (const unsigned char *)p;
    return c >= bootstrap_buffer && c < bootstrap_buffer + sizeof bootstrap_buffer;
}

static void *bootstrap_alloc(size_t size, size_t alignment) {
    if (alignment < 16) alignment = 16;
    size_t rounded = (size + 15) & ~(size_t)15;
    size_t need = rounded + alignment;
    size_t start = __atomic_fetch_add(&bootstrap_used, need, __ATOMIC_RELAXED);
    if (start + need > sizeof bootstrap_buffer) return NULL;
    uintptr_t base = (uintptr_t)(bootstrap_buffer + start);
    uintptr_t aligned = (base + alignment - 1) & ~(uintptr_t)(alignment - 1);
    return (void *)aligned;  // zeroed: static storage, never reused
}

static void resolve(void) {
    if (resolving || __atomic_load_n(&real_free, __ATOMIC_ACQUIRE) != NULL) return;
    resolving = 1;
    // Several threads may race here; each stores the same values.
    real_malloc = (malloc_fn)dlsym(RTLD_NEXT, "malloc");
    real_calloc = (calloc_fn)dlsym(RTLD_NEXT, "calloc");
    real_realloc = (realloc_fn)dlsym(RTLD_NEXT, "realloc");
    real_posix_memalign = (posix_memalign_fn)dlsym(RTLD_NEXT, "posix_memalign");
    real_aligned_alloc = (aligned_alloc_fn)dlsym(RTLD_NEXT, "aligned_alloc");
    real_memalign = (aligned_alloc_fn)dlsym(RTLD_NEXT, "memalign");
    real_valloc = (malloc_fn)dlsym(RTLD_NEXT, "valloc");
    __atomic_store_n(&real_free, (free_fn)dlsym(RTLD_NEXT, "free"), __ATOMIC_RELEASE);
    resolving = 0;
}

__attribute__((constructor)) static void halyard_malloc_counter_init(void) { resolve(); }

static inline void count_one(void) {
    __atomic_fetch_add(&total_count, 1, __ATOMIC_RELAXED);
}

uint64_t halyard_malloc_count(void) { return __atomic_load_n(&total_count, __ATOMIC_RELAXED); }

__attribute__((visibility("default"))) void *malloc(size_t size) {
    if (resolving) return bootstrap_alloc(size, 16);
    resolve();
    count_one();
    return real_malloc(size);
}

__attribute__((visibility("default"))) void *calloc(size_t n, size_t size) {
    if (resolving) {
        if (size != 0 && n > SIZE_MAX / size) return NULL;
        return bootstrap_alloc(n * size, 16);
    }
    resolve();
    count_one();
    return real_calloc(n, size);
}

__attribute__((visibility("default"))) void *realloc(void *p, size_t size) {
    if (resolving) return bootstrap_alloc(size, 16);  // dlsym never reallocs in practice
    resolve();
    count_one();
    if (p != NULL && in_bootstrap_buffer(p)) {
        // Move a bootstrap block to the real heap; its old size is unknown, so copy what fits
        // in the rest of the buffer (it was zero-filled and never reused).
        void *q = real_malloc(size);
        if (q == NULL) return NULL;
        size_t avail = (size_t)(bootstrap_buffer + sizeof bootstrap_buffer - (unsigned char *)p);
        memcpy(q, p, size < avail ? size : avail);
        return q;
    }
    return real_realloc(p, size);
}

__attribute__((visibility("default"))) int posix_memalign(void **out, size_t alignment, size_t size) {
    if (resolving) {
        void *p = bootstrap_alloc(size, alignment);
        if (p == NULL) return ENOMEM;
        *out = p;
        return 0;
    }
    resolve();
    count_one();
    return real_posix_memalign(out, alignment, size);
}

__attribute__((visibility("default"))) void *aligned_alloc(size_t alignment, size_t size) {
    if (resolving) return bootstrap_alloc(size, alignment);
    resolve();
    count_one();
    return real_aligned_alloc(alignment, size);
}

__attribute__((visibility("default"))) void *memalign(size_t alignment, size_t size) {
    if (resolving) return bootstrap_alloc(size, alignment);
    resolve();
    count_one();
    return real_memalign(alignment, size);
}

__attribute__((visibility("default"))) void *valloc(size_t size) {
    if (resolving) return bootstrap_alloc(size, 4096);
    resolve();
    count_one();
    return real_valloc(size);
}

__attribute__((visibility("default"))) void free(void *p) {
    if (p == NULL || in_bootstrap_buffer(p)) return;
    if (resolving) return;  // cannot happen with glibc's dlsym; leak rather than recurse
    resolve();
    real_free(p);
}

void halyard_sleep_until_ns(uint64_t deadline_ns) {
    struct timespec ts;
    ts.tv_sec = (time_t)(deadline_ns / 1000000000u);
    ts.tv_nsec = (long)(deadline_ns % 1000000000u);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

int halyard_make_current_thread_realtime(int priority) {
    struct sched_param param;
    memset(&param, 0, sizeof param);
    param.sched_priority = priority;
    return pthread_setschedparam(pthread_self(), SCHED_FIFO, &param);
}

// Called only by the publisher thread, one pass at a time, so `registered` needs no atomics.
int halyard_bench_membarrier(void) {
    static int registered;
    if (!registered) {
        syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0);
        registered = 1;
    }
    return (int)syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
}
