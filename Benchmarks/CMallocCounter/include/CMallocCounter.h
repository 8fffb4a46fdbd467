// CMallocCounter: counts malloc-family calls for the benchmark harness, and a few small
// helpers (monotonic clock, real-time thread setup) that are simpler to call from C.
//
// The counter works by interposition: MallocCounter.c defines malloc, calloc, realloc,
// posix_memalign, aligned_alloc, memalign, valloc and free in the executable itself. The
// dynamic linker resolves every library's malloc (libswiftCore's swift_slowAlloc, Foundation,
// Dispatch, libc's own strdup...) to the executable's definitions first; they count and
// forward to the next definition (glibc's) found with dlsym(RTLD_NEXT, ...).
#ifndef CMALLOC_COUNTER_H
#define CMALLOC_COUNTER_H
#include <stdint.h>
#include <time.h>

/// Allocation calls (malloc, calloc, realloc, posix_memalign, aligned_alloc, memalign, valloc)
/// made by the whole process since start. Relaxed atomic: exact once the counting threads are
/// joined or quiescent.
uint64_t halyard_malloc_count(void);

/// CLOCK_MONOTONIC in nanoseconds.
static inline uint64_t halyard_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/// Sleeps until the absolute CLOCK_MONOTONIC time `deadline_ns` (clock_nanosleep with
/// TIMER_ABSTIME), retrying on EINTR.
void halyard_sleep_until_ns(uint64_t deadline_ns);

/// Gives the calling thread SCHED_FIFO at `priority`. Returns 0 on success, else the errno
/// value from pthread_setschedparam (EPERM without CAP_SYS_NICE).
int halyard_make_current_thread_realtime(int priority);

/// Issues MEMBARRIER_CMD_PRIVATE_EXPEDITED (registering first): for a control experiment.
int halyard_bench_membarrier(void);

#endif
