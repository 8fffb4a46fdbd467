#include "CHalyardTestMalloc.h"
#include <stdlib.h>
#if defined(__GLIBC__)
#include <malloc.h>
halyard_test_malloc_stats halyard_test_malloc_stats_now(void) {
    struct mallinfo2 info = mallinfo2();
    halyard_test_malloc_stats stats = {info.uordblks, info.hblkhd, info.arena, info.fordblks};
    return stats;
}
int halyard_test_malloc_trim(void) { return malloc_trim(0); }
#else
halyard_test_malloc_stats halyard_test_malloc_stats_now(void) {
    halyard_test_malloc_stats stats = {0, 0, 0, 0};
    return stats;
}
int halyard_test_malloc_trim(void) { return 0; }
#endif
