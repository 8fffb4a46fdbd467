#include "CMallocInfo.h"
#if defined(__GLIBC__)
#include <malloc.h>
size_t halyard_heap_bytes(void) {
    struct mallinfo2 info = mallinfo2();
    return info.uordblks + info.hblkhd;
}
#else
size_t halyard_heap_bytes(void) { return 0; }
#endif
