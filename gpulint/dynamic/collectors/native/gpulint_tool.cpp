// gpulint's native collector: a Sanitizer-API injection library (CUDA_INJECTION64_PATH) that
// writes gpulint's trace format v1 (docs/trace-format.md) for an unmodified CUDA program.
//
//   GPULINT_TRACE     trace path ("%p" becomes the pid, "%r" the MPI / torchrun rank); a name
//                     ending in ".gltrace" gets the binary variant (gpulint_binary.h)
//   GPULINT_LEVEL     object | access | full
//   GPULINT_PATCH     the device patch fatbin (access and full levels)
//   GPULINT_SAMPLE    instrument one launch in N per kernel (access level)
//   GPULINT_KERNELS   only kernels whose name contains this text (access level)
//   GPULINT_GRANULARITY  bytes per bitmap bit (default 32)
//
// Object level uses callbacks only: allocations and frees (device, async/pool, managed, pinned
// host), copies and memsets with direction and size, kernel and graph launches with stream and
// demangled name, synchronisations, event record and wait.  A launch's objects are the
// allocations its arguments point into (the argument layout comes from cuFuncGetParamInfo).
// Access level patches global loads/stores, cp.async and TMA bulk copies; the patch marks 32-byte
// granules in each object's read/write bitmaps, which stay on the GPU until the object is freed
// (or the program ends), and a word of flags per object and launch, read back at the program's
// synchronisations (gpulint_access.inc).  Full level adds per-launch bitmaps and counts, read
// back when each launch ends.
// Every event carries the host stack as [module, offset, symbol] frames that `gpulint run`
// resolves to file:line with DWARF afterwards.
#include <cuda.h>
#include <sanitizer.h>
#include <generated_cuda_meta.h>

#include <cxxabi.h>
#include <deque>
#include <dlfcn.h>
#include <execinfo.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <string>
#include <unordered_map>
#include <vector>

#include "gpulint_binary.h"
#include "gpulint_layout.h"

namespace {

struct Object {
    uint64_t id;
    uint64_t size;
};

struct State {
    std::mutex lock;
    int out = -1;           // the trace, opened when the process creates its first CUDA context
    bool opened = false;    // whether opening was tried
    pid_t owner = 0;        // a forked child inherits the buffer but must not write it
    std::string trace_pattern;
    std::string trace_path;
    std::string meta;       // the first line, written when the trace opens
    std::atomic<uint64_t> t{0};
    uint64_t next_obj = 1;
    std::map<uint64_t, Object> objects;  // base address -> object
    uint64_t objects_version = 0;        // changes with every allocation and free
    std::unordered_map<CUstream, int> streams;
    std::unordered_map<CUevent, uint64_t> events;
    int level = 0;  // 0 object, 1 access, 2 full
    uint32_t granularity = 32;
    uint32_t sample = 1;
    std::unique_ptr<std::regex> kernel_regex;
    std::string patch_path;
    std::unordered_map<std::string, std::string> kernel_names;  // mangled -> demangled
    std::unordered_map<CUfunction, uint64_t> launches_per_kernel;
    std::unordered_map<CUmodule, bool> patched;
    std::unordered_map<void*, std::string> symbols;  // return address -> frame text
    bool device_named = false;
    bool announce = false;  // say "gpulint: wrote PATH" at exit (gpulint run exec'd the program)
};

State* state = nullptr;

// Driver entry points, looked up in the libcuda the program already loaded (the tool links no
// libcuda of its own, so it builds on machines without a driver).
struct Driver {
    CUresult (*func_get_param_info)(CUfunction, size_t, size_t*, size_t*) = nullptr;
    CUresult (*ctx_get_device)(CUdevice*) = nullptr;
    CUresult (*device_get_name)(char*, int, CUdevice) = nullptr;
    CUresult (*device_get_attribute)(int*, CUdevice_attribute, CUdevice) = nullptr;
    CUresult (*stream_create)(CUstream*, unsigned int) = nullptr;
    CUresult (*ctx_push)(CUcontext) = nullptr;
    CUresult (*ctx_pop)(CUcontext*) = nullptr;

    void load() {
        void* lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
        if (!lib) lib = dlopen("libcuda.so.1", RTLD_LAZY);
        if (!lib) return;
        func_get_param_info = reinterpret_cast<decltype(func_get_param_info)>(dlsym(lib, "cuFuncGetParamInfo"));
        ctx_get_device = reinterpret_cast<decltype(ctx_get_device)>(dlsym(lib, "cuCtxGetDevice"));
        device_get_name = reinterpret_cast<decltype(device_get_name)>(dlsym(lib, "cuDeviceGetName"));
        device_get_attribute = reinterpret_cast<decltype(device_get_attribute)>(dlsym(lib, "cuDeviceGetAttribute"));
        stream_create = reinterpret_cast<decltype(stream_create)>(dlsym(lib, "cuStreamCreate"));
        ctx_push = reinterpret_cast<decltype(ctx_push)>(dlsym(lib, "cuCtxPushCurrent_v2"));
        ctx_pop = reinterpret_cast<decltype(ctx_pop)>(dlsym(lib, "cuCtxPopCurrent_v2"));
    }
} driver;
thread_local bool in_tool = false;     // the tool's own allocations and copies are not reported
thread_local void** pending_params = nullptr;  // kernel arguments of the launch being entered

struct ToolScope {
    bool previous;
    ToolScope() : previous(in_tool) { in_tool = true; }
    ~ToolScope() { in_tool = previous; }
};

std::string json_string(const char* text) {
    std::string out = "\"";
    for (const char* p = text ? text : ""; *p; ++p) {
        unsigned char c = static_cast<unsigned char>(*p);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c < 0x20) {
            char buf[8];
            snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        } else {
            out += static_cast<char>(c);
        }
    }
    return out + "\"";
}

std::string demangle(const char* name) {
    if (!name) return "?";
    int status = 0;
    char* plain = abi::__cxa_demangle(name, nullptr, nullptr, &status);
    std::string out = (status == 0 && plain) ? plain : name;
    free(plain);
    return out;
}

// The host stack, innermost first, skipping the tool's and the CUDA libraries' frames is left to
// the resolver: it knows which files are the user's.  Frames are cached per return address.
std::string site() {
    void* frames[48];
    int n = backtrace(frames, 48);
    std::string out = "[";
    bool first = true;
    for (int i = 1; i < n; ++i) {
        auto found = state->symbols.find(frames[i]);
        if (found == state->symbols.end()) {
            Dl_info info{};
            std::string text;
            if (dladdr(frames[i], &info) && info.dli_fname) {
                uintptr_t base = reinterpret_cast<uintptr_t>(info.dli_fbase);
                uintptr_t addr = reinterpret_cast<uintptr_t>(frames[i]);
                char offset[64];
                snprintf(offset, sizeof offset, "\"0x%lx\"", static_cast<unsigned long>(addr - base));
                text = "[" + json_string(info.dli_fname) + "," + offset + "," +
                       json_string(info.dli_sname ? demangle(info.dli_sname).c_str() : "") + "]";
            }
            found = state->symbols.emplace(frames[i], text).first;
        }
        if (found->second.empty()) continue;
        if (found->second.find("libgpulint_tool") != std::string::npos) continue;
        if (!first) out += ",";
        out += found->second;
        first = false;
    }
    return out + "]";
}

// Events are buffered and written in blocks: a write(2) per event cost more than the callbacks
// themselves.  A crash must still leave a trace readable up to the crash, so the buffer is a
// fixed array (a signal handler can write it without allocating), written when it fills, at
// every synchronisation (the program waits then anyway), at least every 50 ms, at exit, and from
// the handlers of the signals that end a process.
// Set when the trace is binary: every line is encoded as it is written.
gpulint_binary::BinaryEncoder* encoder = nullptr;

constexpr size_t kBufferSize = 1 << 18;
char buffer[kBufferSize];
std::atomic<size_t> buffered{0};
std::atomic<bool> flushing{false};
timespec last_flush{};

void write_all(int fd, const char* data, size_t n) {
    while (n > 0) {
        ssize_t done = write(fd, data, n);
        if (done < 0 && errno == EINTR) continue;
        if (done <= 0) return;
        data += done;
        n -= static_cast<size_t>(done);
    }
}

void open_trace();

// Access level: a launch's line waits until its flags are read back (at the program's next
// synchronisation), and every event after it waits with it, so the trace keeps the order in
// which the host issued them.  A crash writes the waiting launches as object level would.
struct HeldLaunch {
    uint64_t t;
    uint32_t seq;
    int kernel;
    std::string head;   // the launch line up to its reads / writes
    std::string stack;
    std::string args;   // the whole line as object level writes it: reads and writes = the arguments
    std::shared_ptr<const std::vector<uint64_t>> ids;  // the launch's object table, as object ids
    size_t touched_at;  // byte offset of its flags in the context's ring
    CUcontext context;
    CUstream stream;
    Sanitizer_StreamHandle handle;
    bool done = false;
    bool claimed = false;  // a thread is reading its flags back (with gpulint's lock released)
    std::string line;   // once done: the line with the launch's reads and writes
};
struct Held {
    std::string line;                    // a plain event
    std::unique_ptr<HeldLaunch> launch;  // or a launch
};
std::deque<Held> held;

void flush() {
    if (state->out < 0 || getpid() != state->owner) {
        buffered = 0;
        if (encoder) encoder->forget();
        return;
    }
    if (encoder) encoder->close_block();  // rows wait in the encoder's block until a flush
    flushing = true;
    write_all(state->out, buffer, buffered);
    buffered = 0;
    flushing = false;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &last_flush);
}

void write_line(const std::string& line);
void write_bytes(const char* data, size_t n, bool newline = false);

// The host's monotonic clock in nanoseconds (Python's time.monotonic_ns): each event's `ns`, so
// reports can draw the run in real time.  About 20 ns through the vDSO.
uint64_t now_ns() {
    timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return static_cast<uint64_t>(now.tv_sec) * 1000000000ull + static_cast<uint64_t>(now.tv_nsec);
}

// An event line with its `t` gets the time it happened in front (`{"ns":N,"ev":...`); emit is
// called when the event happens, held or not.  A launch's line carries its own (made at the call,
// written when its flags are back); lines without `t` (meta, bitmaps, notes) get none.
std::string with_time(const std::string& line) {
    if (line.compare(0, 6, "{\"ev\":") != 0 || line.find(",\"t\":") > 40) return line;
    char head[32];
    int n = snprintf(head, sizeof head, "{\"ns\":%lu,", static_cast<unsigned long>(now_ns()));
    return std::string(head, static_cast<size_t>(n)) + line.substr(1);
}

void emit(const std::string& line) {
    if (!held.empty()) {
        held.push_back(Held{with_time(line), nullptr});
        return;
    }
    write_line(with_time(line));
}

// Write the held events up to the first launch still waiting for its flags.
void release_held() {
    while (!held.empty() && (!held.front().launch || held.front().launch->done)) {
        write_line(held.front().launch ? held.front().launch->line : held.front().line);
        held.pop_front();
    }
}

void write_line(const std::string& line) {
    if (!state->opened) open_trace();
    if (state->out < 0) return;
    if (encoder)
        encoder->event(line);
    else
        write_bytes(line.data(), line.size(), true);
}

// Whole lines (`newline`) or whole binary records into the buffer.
void write_bytes(const char* data, size_t size, bool newline) {
    size_t n = size + (newline ? 1 : 0);
    if (buffered + n > kBufferSize) flush();
    if (n > kBufferSize) {  // a line longer than the buffer goes straight out
        write_all(state->out, data, size);
        if (newline) write_all(state->out, "\n", 1);
        return;
    }
    size_t at = buffered;
    memcpy(buffer + at, data, size);
    if (newline) buffer[at + size] = '\n';
    buffered = at + n;  // published after the bytes: a signal handler writes whole lines only
    timespec now;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
    if ((now.tv_sec - last_flush.tv_sec) * 1000 + (now.tv_nsec - last_flush.tv_nsec) / 1000000 >= 50) flush();
}

uint64_t next_t() { return ++state->t; }

int stream_id(CUstream stream) {
    if (stream == nullptr) return 0;
    auto found = state->streams.find(stream);
    if (found != state->streams.end()) return found->second;
    int id = static_cast<int>(state->streams.size()) + 1;
    state->streams.emplace(stream, id);
    return id;
}

// The object containing `address`, or 0.
uint64_t object_at(uint64_t address) {
    auto it = state->objects.upper_bound(address);
    if (it == state->objects.begin()) return 0;
    --it;
    return address < it->first + it->second.size ? it->second.id : 0;
}

// The base address of the object containing `address` (callers know there is one).
uint64_t base_of(uint64_t address) {
    auto it = state->objects.upper_bound(address);
    return it == state->objects.begin() ? address : (--it)->first;
}

// The rank of an MPI or torchrun process, or null.
const char* process_rank() {
    for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "MV2_COMM_WORLD_RANK", "RANK", "SLURM_PROCID"})
        if (const char* value = getenv(name)) return value;
    return nullptr;
}

std::string expand_path(const std::string& pattern) {
    std::string out;
    for (size_t i = 0; i < pattern.size(); ++i) {
        if (pattern[i] == '%' && i + 1 < pattern.size() && pattern[i + 1] == 'p') {
            out += std::to_string(getpid());
            ++i;
        } else if (pattern[i] == '%' && i + 1 < pattern.size() && pattern[i + 1] == 'r') {
            const char* rank = process_rank();
            out += rank ? rank : "0";
            ++i;
        } else {
            out += pattern[i];
        }
    }
    return out;
}

std::string command_line() {
    std::string out = "[";
    FILE* f = fopen("/proc/self/cmdline", "rb");
    if (f) {
        std::string arg;
        bool first = true;
        int c;
        while ((c = fgetc(f)) != EOF) {
            if (c == 0) {
                out += (first ? "" : ",") + json_string(arg.c_str());
                first = false;
                arg.clear();
            } else {
                arg += static_cast<char>(c);
            }
        }
        fclose(f);
    }
    return out + "]";
}

void on_alloc(const Sanitizer_ResourceMemoryData* data, const char* api, bool pinned) {
    if (in_tool || (data->flags & SANITIZER_MEMORY_FLAG_CG_RUNTIME) || (data->flags & SANITIZER_MEMORY_FLAG_MODULE)) return;
    std::lock_guard<std::mutex> guard(state->lock);
    uint64_t id = state->next_obj++;
    state->objects[data->address] = Object{id, data->size};
    ++state->objects_version;
    const char* kind = (data->flags & SANITIZER_MEMORY_FLAG_MANAGED) ? "cudaMallocManaged" : api;
    std::string stack = site();
    // A framework's caching allocator asks the driver for segments it then carves into tensors:
    // say so, so analyses do not take a segment for one of the program's objects.
    const char* segment = nullptr;
    if (stack.find("libc10_cuda") != std::string::npos) segment = "torch";
    else if (stack.find("cupy") != std::string::npos) segment = "cupy";
    char head[256];
    snprintf(head, sizeof head, "{\"ev\":\"alloc\",\"t\":%lu,\"obj\":%lu,\"addr\":%lu,\"size\":%lu,\"stream\":%d,\"api\":",
             static_cast<unsigned long>(next_t()), static_cast<unsigned long>(id),
             static_cast<unsigned long>(data->address), static_cast<unsigned long>(data->size), stream_id(data->stream));
    emit(std::string(head) + json_string(kind) + (pinned ? ",\"pinned\":true" : "") +
         (segment ? std::string(",\"segment\":") + json_string(segment) : std::string()) + ",\"site\":" + stack + "}");
}

void object_freed(uint64_t id, bool asynchronous);

void on_free(const Sanitizer_ResourceMemoryData* data, bool asynchronous) {
    if (in_tool) return;
    std::lock_guard<std::mutex> guard(state->lock);
    auto it = state->objects.find(data->address);
    if (it == state->objects.end()) return;
    uint64_t id = it->second.id;
    state->objects.erase(it);
    ++state->objects_version;
    object_freed(id, asynchronous);
    char head[160];
    snprintf(head, sizeof head, "{\"ev\":\"free\",\"t\":%lu,\"obj\":%lu,\"stream\":%d,\"site\":",
             static_cast<unsigned long>(next_t()), static_cast<unsigned long>(id), stream_id(data->stream));
    emit(std::string(head) + site() + "}");
}

const char* direction(Sanitizer_MemcpyDirection d) {
    switch (d) {
        case SANITIZER_MEMCPY_DIRECTION_HOST_TO_DEVICE: return "h2d";
        case SANITIZER_MEMCPY_DIRECTION_DEVICE_TO_HOST: return "d2h";
        case SANITIZER_MEMCPY_DIRECTION_DEVICE_TO_DEVICE: return "d2d";
        case SANITIZER_MEMCPY_DIRECTION_HOST_TO_HOST: return "h2h";
        default: return "default";
    }
}

std::string id_or_null(uint64_t id) { return id ? std::to_string(id) : std::string("null"); }

// A digest of the host bytes a host-to-device copy reads (FNV-1a over the size, then every byte
// up to 64 KiB, else 64 windows of 1 KiB spread evenly): equal digests at one site are the same
// data uploaded again (GL103).  Read at the API call, before the copy, as the copy reads them.
uint64_t host_digest(const unsigned char* bytes, uint64_t size) {
    uint64_t hash = 0xcbf29ce484222325ull;
    auto mix = [&hash](const unsigned char* p, uint64_t n) {
        for (uint64_t i = 0; i < n; ++i) { hash ^= p[i]; hash *= 0x100000001b3ull; }
    };
    unsigned char length[8];
    memcpy(length, &size, sizeof length);
    mix(length, sizeof length);
    constexpr uint64_t kWhole = 64 * 1024, kWindows = 64, kWindow = 1024;
    if (size <= kWhole) {
        mix(bytes, size);
    } else {
        uint64_t step = (size - kWindow) / (kWindows - 1);
        for (uint64_t i = 0; i < kWindows; ++i) mix(bytes + i * step, kWindow);
    }
    return hash;
}

void on_memcpy(const Sanitizer_MemcpyData* data) {
    if (in_tool) return;
    std::lock_guard<std::mutex> guard(state->lock);
    uint64_t dst = object_at(data->dstAddress), src = object_at(data->srcAddress);
    if (!dst && !src) return;  // host to host, or memory gpulint does not track
    uint64_t size = data->size ? data->size : data->width * (data->height ? data->height : 1);
    char digest[40] = "";
    if (data->direction == SANITIZER_MEMCPY_DIRECTION_HOST_TO_DEVICE && !src && data->size && data->srcAddress)
        snprintf(digest, sizeof digest, ",\"digest\":\"%016lx\"",
                 static_cast<unsigned long>(host_digest(reinterpret_cast<const unsigned char*>(data->srcAddress),
                                                        data->size)));
    char head[360];
    snprintf(head, sizeof head,
             "{\"ev\":\"memcpy\",\"t\":%lu,\"dst\":%s,\"src\":%s,\"size\":%lu,\"kind\":\"%s\",\"stream\":%d,"
             "\"dst_offset\":%lu,\"src_offset\":%lu%s,\"site\":",
             static_cast<unsigned long>(next_t()), id_or_null(dst).c_str(), id_or_null(src).c_str(),
             static_cast<unsigned long>(size), direction(data->direction), stream_id(data->apiStream),
             static_cast<unsigned long>(dst ? data->dstAddress - base_of(data->dstAddress) : 0),
             static_cast<unsigned long>(src ? data->srcAddress - base_of(data->srcAddress) : 0), digest);
    emit(std::string(head) + site() + "}");
}

void on_memset(const Sanitizer_MemsetData* data) {
    if (in_tool) return;
    std::lock_guard<std::mutex> guard(state->lock);
    uint64_t obj = object_at(data->address);
    if (!obj) return;
    auto it = --state->objects.upper_bound(data->address);
    uint64_t size = data->width * (data->elementSize ? data->elementSize : 1) * (data->height ? data->height : 1);
    char head[256];
    snprintf(head, sizeof head, "{\"ev\":\"memset\",\"t\":%lu,\"obj\":%lu,\"size\":%lu,\"offset\":%lu,\"stream\":%d,\"site\":",
             static_cast<unsigned long>(next_t()), static_cast<unsigned long>(obj), static_cast<unsigned long>(size),
             static_cast<unsigned long>(data->address - it->first), stream_id(data->stream));
    emit(std::string(head) + site() + "}");
}

// The objects a launch's arguments point into (pointers anywhere inside struct arguments too).
std::vector<uint64_t> argument_objects(CUfunction function, void** params) {
    std::vector<uint64_t> found;
    if (!params) return found;
    for (size_t index = 0; index < 4096; ++index) {
        size_t offset = 0, size = 0;
        if (!driver.func_get_param_info || driver.func_get_param_info(function, index, &offset, &size) != CUDA_SUCCESS)
            break;
        const unsigned char* value = static_cast<const unsigned char*>(params[index]);
        if (!value) continue;
        for (size_t word = 0; word + 8 <= size; word += 8) {
            uint64_t candidate;
            memcpy(&candidate, value + word, 8);
            uint64_t obj = object_at(candidate);
            if (obj && std::find(found.begin(), found.end(), obj) == found.end()) found.push_back(obj);
        }
    }
    return found;
}

std::string id_list(const std::vector<uint64_t>& ids) {
    std::string out = "[";
    for (size_t i = 0; i < ids.size(); ++i) out += (i ? "," : "") + std::to_string(ids[i]);
    return out + "]";
}

void launches_finished(bool all, CUstream stream);

void on_sync(Sanitizer_CallbackId cbid, const Sanitizer_SynchronizeData* data) {
    if (in_tool) return;
    std::lock_guard<std::mutex> guard(state->lock);
    char line[160];
    bool device = cbid == SANITIZER_CBID_SYNCHRONIZE_CONTEXT_SYNCHRONIZED;
    snprintf(line, sizeof line, "{\"ev\":\"sync\",\"t\":%lu,\"scope\":\"%s\",\"stream\":%d}",
             static_cast<unsigned long>(next_t()), device ? "device" : "stream", device ? 0 : stream_id(data->stream));
    emit(line);
    // The program waited for the device (or the stream): the launches it waited for are done.
    launches_finished(device, data->stream);
    flush();
}

void on_event(Sanitizer_CallbackId cbid, const Sanitizer_EventData* data) {
    if (in_tool) return;
    if (cbid != SANITIZER_CBID_EVENTS_RECORD && cbid != SANITIZER_CBID_EVENTS_STREAM_WAIT &&
        cbid != SANITIZER_CBID_EVENTS_SYNCHRONIZE)
        return;
    std::lock_guard<std::mutex> guard(state->lock);
    auto found = state->events.find(data->event);
    uint64_t id = found != state->events.end() ? found->second : (state->events[data->event] = state->events.size() + 1);
    char line[200];
    if (cbid == SANITIZER_CBID_EVENTS_SYNCHRONIZE) {
        snprintf(line, sizeof line, "{\"ev\":\"sync\",\"t\":%lu,\"scope\":\"event\",\"event\":%lu}",
                 static_cast<unsigned long>(next_t()), static_cast<unsigned long>(id));
    } else {
        snprintf(line, sizeof line, "{\"ev\":\"%s\",\"t\":%lu,\"event\":%lu,\"stream\":%d}",
                 cbid == SANITIZER_CBID_EVENTS_RECORD ? "event_record" : "event_wait",
                 static_cast<unsigned long>(next_t()), static_cast<unsigned long>(id), stream_id(data->stream));
    }
    emit(line);
}

void on_graph_launch(const Sanitizer_GraphLaunchData* data) {
    if (in_tool || data->isGraphUpload) return;
    std::lock_guard<std::mutex> guard(state->lock);
    char head[200];
    snprintf(head, sizeof head, "{\"ev\":\"graph_launch\",\"t\":%lu,\"kernel\":\"cudaGraphLaunch\",\"stream\":%d,\"reads\":[],"
             "\"writes\":[],\"site\":", static_cast<unsigned long>(next_t()), stream_id(data->stream));
    emit(std::string(head) + site() + "}");
}

void on_context_created(CUcontext context) {
    if (state->device_named) return;
    CUdevice device;
    char name[256] = "unknown";
    int major = 0, minor = 0;
    if (!driver.ctx_get_device) driver.load();
    if (driver.ctx_get_device && driver.ctx_get_device(&device) == CUDA_SUCCESS) {
        driver.device_get_name(name, sizeof name, device);
        driver.device_get_attribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
        driver.device_get_attribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
    }
    std::lock_guard<std::mutex> guard(state->lock);
    char line[400];
    snprintf(line, sizeof line, "{\"ev\":\"device\",\"t\":%lu,\"device\":%s,\"compute_capability\":\"%d.%d\"}",
             static_cast<unsigned long>(state->t.load()), json_string(name).c_str(), major, minor);
    emit(line);
    state->device_named = true;
    (void)context;
}

#include "gpulint_access.inc"

void SANITIZERAPI callback(void*, Sanitizer_CallbackDomain domain, Sanitizer_CallbackId cbid, const void* cbdata) {
    switch (domain) {
        case SANITIZER_CB_DOMAIN_RESOURCE:
            switch (cbid) {
                case SANITIZER_CBID_RESOURCE_CONTEXT_CREATION_FINISHED:
                    on_context_created(static_cast<const Sanitizer_ResourceContextData*>(cbdata)->context);
                    gpulint_context_created(static_cast<const Sanitizer_ResourceContextData*>(cbdata)->context);
                    break;
                case SANITIZER_CBID_RESOURCE_STREAM_DESTROY_STARTING:
                    gpulint_stream_ending(static_cast<const Sanitizer_ResourceStreamData*>(cbdata));
                    break;
                case SANITIZER_CBID_RESOURCE_CONTEXT_DESTROY_STARTING:
                    gpulint_context_ending(static_cast<const Sanitizer_ResourceContextData*>(cbdata)->context);
                    break;
                case SANITIZER_CBID_RESOURCE_DEVICE_MEMORY_ALLOC:
                    on_alloc(static_cast<const Sanitizer_ResourceMemoryData*>(cbdata), "cudaMalloc", false);
                    break;
                case SANITIZER_CBID_RESOURCE_MEMORY_ALLOC_ASYNC:
                    on_alloc(static_cast<const Sanitizer_ResourceMemoryData*>(cbdata), "cudaMallocAsync", false);
                    break;
                case SANITIZER_CBID_RESOURCE_HOST_MEMORY_ALLOC:
                    on_alloc(static_cast<const Sanitizer_ResourceMemoryData*>(cbdata), "cudaMallocHost", true);
                    break;
                case SANITIZER_CBID_RESOURCE_DEVICE_MEMORY_FREE:
                case SANITIZER_CBID_RESOURCE_HOST_MEMORY_FREE:
                    on_free(static_cast<const Sanitizer_ResourceMemoryData*>(cbdata), false);
                    break;
                case SANITIZER_CBID_RESOURCE_MEMORY_FREE_ASYNC:
                    on_free(static_cast<const Sanitizer_ResourceMemoryData*>(cbdata), true);
                    break;
                case SANITIZER_CBID_RESOURCE_MODULE_LOADED:
                    gpulint_module_loaded(static_cast<const Sanitizer_ResourceModuleData*>(cbdata)->context,
                                          static_cast<const Sanitizer_ResourceModuleData*>(cbdata)->module);
                    break;
                default:
                    break;
            }
            break;
        case SANITIZER_CB_DOMAIN_DRIVER_API: {
            auto* api = static_cast<const Sanitizer_CallbackData*>(cbdata);
            if (api->callbackSite != SANITIZER_API_ENTER) {
                pending_params = nullptr;
                break;
            }
            if (cbid == SANITIZER_CBID_DRIVER_API_cuLaunchKernel || cbid == SANITIZER_CBID_DRIVER_API_cuLaunchKernel_ptsz)
                pending_params = static_cast<const cuLaunchKernel_params*>(api->functionParams)->kernelParams;
            else if (cbid == SANITIZER_CBID_DRIVER_API_cuLaunchKernelEx ||
                     cbid == SANITIZER_CBID_DRIVER_API_cuLaunchKernelEx_ptsz)
                pending_params = static_cast<const cuLaunchKernelEx_params*>(api->functionParams)->kernelParams;
            break;
        }
        case SANITIZER_CB_DOMAIN_LAUNCH:
            if (cbid == SANITIZER_CBID_LAUNCH_BEGIN)
                on_launch_begin(static_cast<const Sanitizer_LaunchData*>(cbdata));
            else if (cbid == SANITIZER_CBID_LAUNCH_END)
                on_launch_end(static_cast<const Sanitizer_LaunchData*>(cbdata));
            break;
        case SANITIZER_CB_DOMAIN_MEMCPY:
            on_memcpy(static_cast<const Sanitizer_MemcpyData*>(cbdata));
            break;
        case SANITIZER_CB_DOMAIN_MEMSET:
            on_memset(static_cast<const Sanitizer_MemsetData*>(cbdata));
            break;
        case SANITIZER_CB_DOMAIN_SYNCHRONIZE:
            on_sync(cbid, static_cast<const Sanitizer_SynchronizeData*>(cbdata));
            break;
        case SANITIZER_CB_DOMAIN_EVENTS:
            on_event(cbid, static_cast<const Sanitizer_EventData*>(cbdata));
            break;
        case SANITIZER_CB_DOMAIN_GRAPHS:
            if (cbid == SANITIZER_CBID_GRAPHS_LAUNCH_BEGIN)
                on_graph_launch(static_cast<const Sanitizer_GraphLaunchData*>(cbdata));
            break;
        default:
            break;
    }
}

void announce() {
    if (!state->announce || state->out < 0 || getpid() != state->owner) return;
    std::string text = "gpulint: wrote " + state->trace_path + "\n";
    write_all(2, text.data(), text.size());
}

void finish() {
    if (!state || state->out < 0) return;
    std::lock_guard<std::mutex> guard(state->lock);
    settle_at_exit();
    char line[96];
    snprintf(line, sizeof line, "{\"ev\":\"end\",\"t\":%lu}", static_cast<unsigned long>(state->t.load()));
    emit(line);
    flush();
    announce();
    close(state->out);
    state->out = -1;
    if (bits_out) {
        fclose(bits_out);
        bits_out = nullptr;
    }
}

// The signals that end a process by default: write what is buffered, then let the program's
// own handler (or the default action) run as if gpulint were not there.
constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, SIGINT, SIGHUP, SIGQUIT};
struct sigaction previous_actions[NSIG];

void on_fatal_signal(int sig, siginfo_t* info, void* context) {
    if (state && state->out >= 0 && getpid() == state->owner && !flushing) {
        write_all(state->out, buffer, buffered);
        buffered = 0;
        const char* rows = nullptr;
        if (size_t n = encoder ? encoder->crash_block(&rows) : 0) write_all(state->out, rows, n);
        for (const Held& waiting : held) {  // launches whose flags never came back: their arguments
            const std::string& line = !waiting.launch ? waiting.line
                                      : waiting.launch->done ? waiting.launch->line : waiting.launch->args;
            if (encoder) {  // as JSON records: encoding them would allocate
                char head[8];
                gpulint_binary::BinaryEncoder::header(head, static_cast<uint32_t>(line.size()), 'J');
                write_all(state->out, head, sizeof head);
                write_all(state->out, line.data(), line.size());
            } else {
                write_all(state->out, line.data(), line.size());
                write_all(state->out, "\n", 1);
            }
        }
        announce();
    }
    const struct sigaction& previous = previous_actions[sig];
    if (previous.sa_flags & SA_SIGINFO) {
        if (previous.sa_sigaction) previous.sa_sigaction(sig, info, context);
        return;
    }
    if (previous.sa_handler == SIG_IGN) return;
    if (previous.sa_handler != SIG_DFL && previous.sa_handler) {
        previous.sa_handler(sig);
        return;
    }
    signal(sig, SIG_DFL);  // the default action, with the status the shell expects (128 + sig)
    raise(sig);
}

void install_signal_handlers() {
    for (int sig : kFatalSignals) {
        struct sigaction action {};
        action.sa_sigaction = on_fatal_signal;
        action.sa_flags = SA_SIGINFO | SA_RESTART | SA_NODEFER;
        sigemptyset(&action.sa_mask);
        struct sigaction previous {};
        if (sigaction(sig, nullptr, &previous) == 0 && previous.sa_handler == SIG_IGN && !(previous.sa_flags & SA_SIGINFO))
            continue;  // a signal the program ignores stays ignored
        sigaction(sig, &action, &previous_actions[sig]);
    }
}

// A forked child (no CUDA without exec) must neither write the parent's buffered events nor
// its end line into the parent's trace.
void forget_parent_trace() {
    buffered = 0;
    if (encoder) encoder->forget();
    held.clear();
    if (state) state->out = -1;
}

// World size > 1: name traces by rank, so one run of N ranks gives <trace>.rank0 ... rankN-1.
const char* rank_if_parallel() {
    for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MV2_COMM_WORLD_SIZE", "WORLD_SIZE", "SLURM_NTASKS"}) {
        const char* value = getenv(name);
        if (value && atoi(value) > 1) return process_rank();
    }
    return nullptr;
}

int create_exclusive(const std::string& path) {
    return open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
}

void open_trace() {
    state->opened = true;
    std::string path = expand_path(state->trace_pattern);
    bool named_by_user = state->trace_pattern.find('%') != std::string::npos;
    const char* rank = named_by_user ? nullptr : rank_if_parallel();
    if (rank) path += std::string(".rank") + rank;
    // The first process takes the name; others of the same run (children, a rank's helpers)
    // write <name>.<pid> instead of clobbering it.
    int fd = create_exclusive(path);
    if (fd < 0 && errno == EEXIST) {
        path += "." + std::to_string(getpid());
        fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    }
    state->trace_path = path;
    if (fd < 0) {
        fprintf(stderr, "gpulint: cannot write the trace %s (%s); the program runs untraced\n", path.c_str(), strerror(errno));
        return;
    }
    state->out = fd;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &last_flush);
    // By the name asked for: a rank's or a child's trace (<name>.rank1, <name>.<pid>) is binary too.
    const std::string named = expand_path(state->trace_pattern), suffix = ".gltrace";
    if (named.size() >= suffix.size() && named.compare(named.size() - suffix.size(), suffix.size(), suffix) == 0) {
        encoder = new gpulint_binary::BinaryEncoder([](const char* data, size_t n) { write_bytes(data, n); });
        encoder->start(state->meta);
        return;
    }
    emit(state->meta);
}

}  // namespace

extern "C" int InitializeInjection() {
    // Returning anything but 1 makes the driver unload the library, and the application then
    // crashes at the first callback (measured; DESIGN §6).
    if (state) return 1;
    state = new State();
    state->owner = getpid();
    const char* path = getenv("GPULINT_TRACE");
    state->trace_pattern = path ? path : "gpulint.trace.jsonl";
    const char* level = getenv("GPULINT_LEVEL");
    state->level = !level || !strcmp(level, "object") ? 0 : !strcmp(level, "full") ? 2 : 1;
    if (const char* g = getenv("GPULINT_GRANULARITY")) state->granularity = static_cast<uint32_t>(atoi(g));
    if (state->granularity == 0 || (state->granularity & (state->granularity - 1))) state->granularity = 32;
    if (const char* s = getenv("GPULINT_SAMPLE")) state->sample = static_cast<uint32_t>(atoi(s) > 0 ? atoi(s) : 1);
    if (const char* k = getenv("GPULINT_KERNELS")) {
        try {
            state->kernel_regex = std::make_unique<std::regex>(k);
        } catch (const std::regex_error&) {
            fprintf(stderr, "gpulint: --kernels %s is not a regular expression; instrumenting every kernel\n", k);
        }
    }
    if (const char* p = getenv("GPULINT_PATCH")) state->patch_path = p;
    state->announce = getenv("GPULINT_ANNOUNCE") != nullptr;
    state->meta = "{\"ev\":\"meta\",\"version\":1,\"collector\":\"native\",\"argv\":" + command_line() +
                  ",\"device\":null,\"granularity\":" + std::to_string(state->granularity) + ",\"level\":\"" +
                  (state->level == 0 ? "object" : state->level == 1 ? "access" : "full") +
                  "\",\"pid\":" + std::to_string(getpid()) + "}";

    Sanitizer_SubscriberHandle handle;
    if (sanitizerSubscribe(&handle, callback, nullptr) != SANITIZER_SUCCESS) {
        fprintf(stderr, "gpulint: the Sanitizer API refused a subscriber (is another tool attached?); the program runs untraced\n");
        return 1;
    }
    const Sanitizer_CallbackDomain domains[] = {SANITIZER_CB_DOMAIN_RESOURCE, SANITIZER_CB_DOMAIN_LAUNCH,
                                                SANITIZER_CB_DOMAIN_MEMCPY, SANITIZER_CB_DOMAIN_MEMSET,
                                                SANITIZER_CB_DOMAIN_SYNCHRONIZE, SANITIZER_CB_DOMAIN_EVENTS,
                                                SANITIZER_CB_DOMAIN_GRAPHS};
    for (auto domain : domains) sanitizerEnableDomain(1, handle, domain);
    // Only the launch entry points of the driver API: their arguments name the objects used.
    const Sanitizer_CallbackId launches[] = {SANITIZER_CBID_DRIVER_API_cuLaunchKernel,
                                             SANITIZER_CBID_DRIVER_API_cuLaunchKernel_ptsz,
                                             SANITIZER_CBID_DRIVER_API_cuLaunchKernelEx,
                                             SANITIZER_CBID_DRIVER_API_cuLaunchKernelEx_ptsz};
    for (auto cbid : launches) sanitizerEnableCallback(1, handle, SANITIZER_CB_DOMAIN_DRIVER_API, cbid);
    install_signal_handlers();
    pthread_atfork(nullptr, nullptr, forget_parent_trace);
    atexit(finish);
    return 1;
}

// The LD_PRELOAD fallback (`gpulint run` uses it when CUDA_INJECTION64_PATH already names another
// tool): the same initialisation, from the library's constructor, before main and so before the
// program's first CUDA call.  Processes that never create a CUDA context write no trace.
__attribute__((constructor)) static void initialize_when_preloaded() {
    const char* preload = getenv("GPULINT_PRELOAD");
    if (preload && !strcmp(preload, "1")) InitializeInjection();
}
