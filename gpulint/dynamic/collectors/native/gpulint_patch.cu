// Device side of gpulint's native collector: called by Sanitizer-API patches at every global
// memory access, cp.async and TMA bulk copy of an instrumented launch.  It finds the object the
// address falls in and marks the granule (gpulint_layout.h says where).
//
// Access level: the threads of a warp that mark the same bitmap word agree on a leader, which
// tests the word once and ORs all their bits in with at most one atomic.  Loads are ordinary
// (cached) loads: a stale zero costs a redundant atomic, never a lost bit, and bits are never
// cleared while a launch runs.
// Built with: nvcc --fatbin --keep-device-functions -Xptxas --compile-as-tools-patch -arch=sm_XX
// (-DGPULINT_EMPTY_PATCH builds patches that return at once: what the patch calls alone cost,
// for benchmarks/polybench_overhead.py --ablation).
#include <sanitizer_patching.h>

#include "gpulint_layout.h"

static __device__ __forceinline__ int find_object(const GpulintLaunch* launch, uint64_t address) {
    int lo = 0, hi = static_cast<int>(launch->count) - 1;
    const GpulintObject* objects = launch->objects;
    while (lo <= hi) {
        int mid = (lo + hi) >> 1;
        const GpulintObject& o = objects[mid];
        if (address < o.base) {
            hi = mid - 1;
        } else if (address >= o.end) {
            lo = mid + 1;
        } else {
            return mid;
        }
    }
    return -1;
}

static __device__ __forceinline__ uint32_t lane_id() {
    uint32_t lane;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
    return lane;
}

// Bits lo..hi (inclusive) of a word.
static __device__ __forceinline__ uint32_t span(uint32_t lo, uint32_t hi) {
    uint32_t upto = hi == 31 ? 0xffffffffu : ((1u << (hi + 1)) - 1u);
    return upto & ~((1u << lo) - 1u);
}

static __device__ __forceinline__ void set_mask(uint32_t* word, uint32_t mask) {
    if ((*word & mask) != mask) atomicOr(word, mask);
}

// Granule g of an object was touched by launch `seq` of the owner array's kernel.  atomicExch
// hands back who had it: another launch of the same kernel means the launches overlap.
static __device__ __forceinline__ void claim(uint32_t* owner, uint64_t g, uint32_t seq) {
    uint32_t* slot = owner + 1 + g;
    if (*slot == seq) return;
    uint32_t before = atomicExch(slot, seq);
    if (before != 0 && before != seq) owner[0] = 1;
}

// Access level: the object's merged bitmap, the launch's per-object flag, and the owner array.
// Once a granule's bit is set (every access but a launch's first to it) a thread only loads and
// compares; the first touches of a warp are gathered per word (per granule for the owner
// array) and one leader does the atomic for its peers.  (redux.sync is not allowed in a tools
// patch: the peers' masks are gathered with shuffles, on first touches only.)
static __device__ __forceinline__ void mark_merged(const GpulintLaunch* launch, uint64_t address, uint32_t size,
                                                   bool write) {
    const uint32_t active = __activemask();
    const uint32_t lane = lane_id();
    const int index = find_object(launch, address);
    const GpulintObject* o = index >= 0 ? launch->objects + index : nullptr;
    uint32_t* word = nullptr;
    uint32_t mask = 0;
    uint64_t first = 0, last = 0;
    uint32_t* slot = nullptr;  // the owner-array entry of the first granule, while the kernel's launches stay disjoint
    if (o) {
        uint64_t last_byte = address + (size ? size - 1 : 0);
        if (last_byte >= o->end) last_byte = o->end - 1;
        first = (address - o->base) >> launch->shift;
        last = (last_byte - o->base) >> launch->shift;
        word = (write ? o->write_bits : o->read_bits) + (first >> 5);
        mask = span(static_cast<uint32_t>(first & 31), (last >> 5) == (first >> 5) ? static_cast<uint32_t>(last & 31) : 31);
        if (o->owner && o->owner[0] == 0) slot = o->owner + 1 + first;
    }
    // Every active thread reaches the _sync calls below (those outside any object too).
    const bool fresh = o && (*word & mask) != mask;
    const uint32_t fresh_lanes = __ballot_sync(active, fresh);
    if (fresh) {
        const uint32_t peers = __match_any_sync(fresh_lanes, reinterpret_cast<unsigned long long>(word));
        uint32_t together = 0;
        for (uint32_t m = peers; m; m &= m - 1) together |= __shfl_sync(peers, mask, __ffs(m) - 1);
        if (lane == static_cast<uint32_t>(__ffs(peers) - 1)) atomicOr(word, together);
    }
    const bool unclaimed = slot && *slot != launch->seq;
    const uint32_t claiming = __ballot_sync(active, unclaimed);
    if (unclaimed) {
        const uint32_t peers = __match_any_sync(claiming, reinterpret_cast<unsigned long long>(slot));
        if (lane == static_cast<uint32_t>(__ffs(peers) - 1)) {
            uint32_t before = atomicExch(slot, launch->seq);
            if (before != 0 && before != launch->seq) o->owner[0] = 1;
        }
    }
    if (!o) return;
    const uint32_t flag = write ? 2u : 1u;
    if ((launch->touched[index] & flag) == 0) atomicOr(launch->touched + index, flag);
    if (last == first) return;
    // An access over several granules (a vector access, a small granularity): the rest alone.
    uint32_t* bits = write ? o->write_bits : o->read_bits;
    for (uint64_t g = ((first >> 5) + 1) << 5; g <= last; ++g) set_mask(bits + (g >> 5), 1u << (g & 31));
    if (slot)
        for (uint64_t g = first + 1; g <= last; ++g) claim(o->owner, g, launch->seq);
}

// Full level: the launch's own bitmaps and per-granule counts.
static __device__ __forceinline__ void mark_launch(const GpulintLaunch* launch, uint64_t address, uint32_t size,
                                                   bool write) {
    int index = find_object(launch, address);
    if (index < 0) return;
    const GpulintObject& o = launch->objects[index];
    uint64_t first = (address - o.base) >> launch->shift;
    uint64_t last_byte = address + (size ? size - 1 : 0);
    if (last_byte >= o.end) last_byte = o.end - 1;
    uint64_t last = (last_byte - o.base) >> launch->shift;
    uint32_t* bits = write ? launch->write_bits : launch->read_bits;
    for (uint64_t g = first; g <= last; ++g) {
        uint64_t bit = o.first_bit + g;
        set_mask(bits + (bit >> 5), 1u << (bit & 31));
        if (launch->counts) atomicAdd(launch->counts + bit, 1u);
    }
    const uint32_t flag = write ? 2u : 1u;
    if ((launch->touched[index] & flag) == 0) atomicOr(launch->touched + index, flag);
}

static __device__ __forceinline__ void mark(const GpulintLaunch* launch, uint64_t address, uint32_t size, bool write) {
#ifndef GPULINT_EMPTY_PATCH
    if (!launch) return;  // a launch that is not sampled
    if (launch->read_bits)
        mark_launch(launch, address, size, write);
    else
        mark_merged(launch, address, size, write);
#endif
}

extern "C" __device__ __noinline__ SanitizerPatchResult gpulint_memory_access(void* userdata, uint64_t pc, void* ptr,
                                                                             uint32_t accessSize, uint32_t flags,
                                                                             const void* newValue) {
    const GpulintLaunch* launch = static_cast<const GpulintLaunch*>(userdata);
    uint64_t address = reinterpret_cast<uint64_t>(ptr);
    // One instruction, one kind of access: these branches are the same for the whole warp.
    if (flags & SANITIZER_MEMORY_DEVICE_FLAG_READ) mark(launch, address, accessSize, false);
    if (flags & SANITIZER_MEMORY_DEVICE_FLAG_WRITE) mark(launch, address, accessSize, true);
    if (!(flags & (SANITIZER_MEMORY_DEVICE_FLAG_READ | SANITIZER_MEMORY_DEVICE_FLAG_WRITE)))
        mark(launch, address, accessSize, false);  // prefetches and the like: a read
    return SANITIZER_PATCH_SUCCESS;
}

// cp.async: global -> shared, a read of the global source.
extern "C" __device__ __noinline__ SanitizerPatchResult gpulint_memcpy_async(void* userdata, uint64_t pc, void* src,
                                                                            uint32_t dst, uint32_t accessSize) {
    mark(static_cast<const GpulintLaunch*>(userdata), reinterpret_cast<uint64_t>(src), accessSize, false);
    return SANITIZER_PATCH_SUCCESS;
}

// TMA bulk copies: the global side is read (to shared) or written (from shared).  The callback
// gives the address, not the extent: the first granule is marked.
extern "C" __device__ __noinline__ SanitizerPatchResult gpulint_bulk_to_shared(void* userdata, uint64_t pc, uint64_t src,
                                                                              uint32_t dst, uint32_t barrier,
                                                                              uint32_t data, uint32_t isMulticast) {
    mark(static_cast<const GpulintLaunch*>(userdata), src, 1, false);
    return SANITIZER_PATCH_SUCCESS;
}

extern "C" __device__ __noinline__ SanitizerPatchResult gpulint_bulk_to_global(void* userdata, uint64_t pc, uint64_t dst,
                                                                              uint32_t src, uint32_t numBlocks) {
    mark(static_cast<const GpulintLaunch*>(userdata), dst, 1, true);
    return SANITIZER_PATCH_SUCCESS;
}
