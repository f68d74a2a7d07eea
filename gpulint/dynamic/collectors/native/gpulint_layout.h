// What the host part of gpulint's native collector hands the device patch for one launch.
// Shared by gpulint_tool.cpp (host) and gpulint_patch.cu (device): keep the two in step.
//
// Access level: each object's read and write bitmaps live on the device for the object's whole
// life and every instrumented launch ORs its granules into them; the launch itself gets only a
// word of flags per object (read / written), read back at the program's synchronisations.  For
// structured access (GL010) an object passed to a kernel also gets an owner array for that
// kernel: per granule, the last of the kernel's launches that touched it, and a flag set as soon
// as two of its launches touch one granule.  While the flag stays clear, the array says exactly
// which granules each launch touched.
// Full level: every launch also gets bitmaps and per-granule counts of its own (`first_bit`,
// `read_bits`, `write_bits`, `counts` of GpulintLaunch), read back when it ends.
#pragma once
#include <stdint.h>

struct GpulintObject {
    uint64_t base;         // sorted ascending
    uint64_t end;          // base + size
    uint32_t* read_bits;   // access level: granules any launch read so far (null at full level)
    uint32_t* write_bits;  // access level: granules any launch wrote so far
    uint32_t* owner;       // access level, this launch's kernel: [0] overlap flag, [1 + g] the last of
                           // its launches (GpulintLaunch::seq) that touched granule g; null: not followed
    uint64_t first_bit;    // full level: where this object's granules start in the launch's arrays
};

struct GpulintLaunch {
    uint32_t count;                 // objects
    uint32_t shift;                 // log2(granularity)
    const GpulintObject* objects;   // device copy of the table
    uint32_t* touched;              // per object: bit 0 read, bit 1 written by this launch
    uint32_t seq;                   // access level: this launch's number (1, 2, ...) in the owner arrays
    uint32_t reserved;
    uint32_t* read_bits;            // full level: this launch's bitmaps, objects back to back (else null)
    uint32_t* write_bits;
    uint32_t* counts;               // full level: per granule access counts
};
