// What the host part of gpulint's native collector hands the device patch for one launch.
// Shared by gpulint_tool.cpp (host) and gpulint_patch.cu (device): keep the two in step.
#pragma once
#include <stdint.h>

struct GpulintObject {
    uint64_t base;        // sorted ascending
    uint64_t size;
    uint64_t first_bit;   // where this object's granules start in the launch's bitmaps
};

struct GpulintLaunch {
    uint32_t count;                 // objects
    uint32_t shift;                 // log2(granularity)
    const GpulintObject* objects;   // device copy of the table
    uint32_t* read_bits;            // one bit per granule, all objects back to back
    uint32_t* write_bits;
    uint32_t* touched;              // per object: 1 when the launch touched it
    uint32_t* counts;               // full level: per granule access counts (else null)
};
