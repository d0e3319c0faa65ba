// The C library's heap, set up once per process for training's large transient buffers.
#pragma once

namespace tb {

// glibc's malloc serves blocks of 32 MiB and more (the fused head loss's logits: 65 MB for the
// 26.5M Llama at 512 tokens, 103 MB for GPT-2) with mmap and returns them to the system at every
// free, so each step touches fresh pages: page faults and the kernel zeroing them, some 3-5 % of a
// LoRA step here. Raising its mmap and trim thresholds to 1 GiB keeps such blocks in the main
// heap, where a free leaves them for the next step's allocation of the same size (blocks made on
// other threads' arenas, whose heaps hold 64 MiB, still come from mmap). The peak stays what the
// buffers need; what the heap keeps free between steps is at most 1 GiB. Call first thing in main;
// does nothing with another C library. Idempotent.
void keepLargeBlocksInHeap();

}  // namespace tb
