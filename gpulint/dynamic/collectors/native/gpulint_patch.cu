// Device side of gpulint's native collector: called by Sanitizer-API patches at every global
// memory access, cp.async and TMA bulk copy of an instrumented launch.  It finds the object the
// address falls in and sets the granule's bit in the launch's read or write bitmap, testing
// before the atomic so each bit costs one atomic per launch, not one per access.
// Built with: nvcc --fatbin --keep-device-functions -Xptxas --compile-as-tools-patch -arch=sm_XX
#include <sanitizer_patching.h>

#include "gpulint_layout.h"

static __device__ __forceinline__ int find_object(const GpulintLaunch* launch, uint64_t address) {
    int lo = 0, hi = static_cast<int>(launch->count) - 1;
    while (lo <= hi) {
        int mid = (lo + hi) >> 1;
        const GpulintObject& o = launch->objects[mid];
        if (address < o.base) {
            hi = mid - 1;
        } else if (address >= o.base + o.size) {
            lo = mid + 1;
        } else {
            return mid;
        }
    }
    return -1;
}

static __device__ __forceinline__ void set_bit(uint32_t* bits, uint64_t bit) {
    uint32_t mask = 1u << (bit & 31);
    uint32_t* word = bits + (bit >> 5);
    if (!(*reinterpret_cast<volatile uint32_t*>(word) & mask)) atomicOr(word, mask);
}

static __device__ __forceinline__ void mark(const GpulintLaunch* launch, uint64_t address, uint32_t size, bool write) {
    if (!launch) return;  // a launch that is not sampled
    int index = find_object(launch, address);
    if (index < 0) return;
    const GpulintObject& o = launch->objects[index];
    uint64_t first = (address - o.base) >> launch->shift;
    uint64_t last_byte = address + (size ? size - 1 : 0);
    if (last_byte >= o.base + o.size) last_byte = o.base + o.size - 1;
    uint64_t last = (last_byte - o.base) >> launch->shift;
    uint32_t* bits = write ? launch->write_bits : launch->read_bits;
    for (uint64_t g = first; g <= last; ++g) {
        set_bit(bits, o.first_bit + g);
        if (launch->counts) atomicAdd(launch->counts + o.first_bit + g, 1u);
    }
    if (!launch->touched[index]) launch->touched[index] = 1;
}

extern "C" __device__ __noinline__ SanitizerPatchResult gpulint_memory_access(void* userdata, uint64_t pc, void* ptr,
                                                                             uint32_t accessSize, uint32_t flags,
                                                                             const void* newValue) {
    const GpulintLaunch* launch = static_cast<const GpulintLaunch*>(userdata);
    uint64_t address = reinterpret_cast<uint64_t>(ptr);
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
