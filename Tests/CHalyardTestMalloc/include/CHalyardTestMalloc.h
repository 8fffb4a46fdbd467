// CHalyardTestMalloc: glibc's allocator figures for the transport's process tests (issue 20).
// Swift's Glibc module does not import <malloc.h>, so mallinfo2 and malloc_trim are reached here.
#ifndef CHALYARD_TEST_MALLOC_H
#define CHALYARD_TEST_MALLOC_H
#include <stddef.h>

/// The allocator's figures (glibc mallinfo2, all arenas); all zero where unknown.
typedef struct {
    /// Bytes handed out by malloc and not freed, in the arenas (mallinfo2 uordblks).
    size_t inUseBytes;
    /// Bytes in mmap'd chunks (large allocations; mallinfo2 hblkhd).
    size_t mmappedBytes;
    /// Bytes the arenas took from the system (mallinfo2 arena).
    size_t arenaBytes;
    /// Free bytes held in the arenas (mallinfo2 fordblks).
    size_t freeBytes;
} halyard_test_malloc_stats;

/// The current figures.
halyard_test_malloc_stats halyard_test_malloc_stats_now(void);

/// Returns free arena memory to the system (glibc malloc_trim(0)); 1 when some was released.
int halyard_test_malloc_trim(void);

#endif
