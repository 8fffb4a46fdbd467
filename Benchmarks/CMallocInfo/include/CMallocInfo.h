// CMallocInfo: the bytes malloc has handed out, for halyard-bench-service's memory figure.
#ifndef CMALLOC_INFO_H
#define CMALLOC_INFO_H
#include <stddef.h>
#include <stdlib.h>

/// Bytes in use from malloc (glibc mallinfo2: uordblks + hblkhd, all arenas); 0 where unknown.
size_t halyard_heap_bytes(void);

#endif
