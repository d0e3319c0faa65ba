// See heap.h.
#include "util/heap.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace tb {

void keepLargeBlocksInHeap()
{
#if defined(__GLIBC__)
    constexpr int kThreshold = 1 << 30;
    mallopt(M_MMAP_THRESHOLD, kThreshold);
    mallopt(M_TRIM_THRESHOLD, kThreshold);
#endif
}

}  // namespace tb
