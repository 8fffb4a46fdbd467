#ifndef CMALLOC_COUNTER_H
#define CMALLOC_COUNTER_H
#include <stdint.h>
/// Total number of malloc-family calls made by the process since start (placeholder; the
/// benchmark issue replaces this with an interposing counter).
uint64_t halyard_malloc_count(void);
#endif
