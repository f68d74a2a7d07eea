// The PyTorch collector's per-op path in C++: an at::RecordFunction callback that sees every
// aten op with its inputs and outputs, writes the trace events of the common ops itself, and
// hands the rest to Python (torch_collector.OpRecorder).  torch_native.py builds and loads it.
//
// Built with -DNDEBUG, as PyTorch is: RecordFunction has members only debug builds have.
//
// Why C++: a training loop on a GPU issues an op every 15-25 us, and any per-op Python (a
// TorchDispatchMode alone) costs more than that.  What stays in Python is what is rare and
// intricate: index ops (their rows), partial views (their elements), copies, fills, factories.
//
// Which ops: those a TorchDispatchMode would see.  An op that CompositeImplicitAutograd
// decomposes (`linear`, `conv2d`) is not recorded; the ops it becomes are.  The ops a recorded
// op's kernel calls are its own business and are not recorded (`addmm`'s internal `expand`).
//
// Objects are storages (StorageImpl).  Frees come from the allocators' memory reports (the
// reporter the profiler uses, pushed into this thread's debug info, which autograd carries to
// its threads); a weak reference per storage catches the frees no allocator reported.
//
// Locking: the GIL guards every table and the event buffer (each callback takes it: sites need
// Python frames anyway).  The allocator's report never takes the GIL (it may run under the
// allocator's own lock): it queues the free under a small mutex, drained at the next event.
#include <Python.h>

#include <ATen/core/ivalue.h>
#include <ATen/record_function.h>
#include <c10/core/Allocator.h>
#include <c10/core/Storage.h>
#include <c10/util/Logging.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <torch/csrc/autograd/python_variable.h>

#include "python_frames.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <ctime>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace {

// What Python decided about an op overload (torch_collector.native_plan).
// kFilling / kUninitialised: factories (`zeros`, `empty`): with no tensor to read, what they
// make is written whole (a memset) or left as it is; with one (`ones_like`), a launch.
enum Kind : int { kNotRecorded = 0, kView = 1, kLaunch = 2, kPython = 3, kFilling = 4, kUninitialised = 5 };
enum Role : int { kRead = 0, kReadWrite = 1, kOverwrite = 2 };

struct Plan {
  int kind = kNotRecorded;
  std::string name;  // "aten::add": the launch's kernel name
  std::string api;   // "torch.add": the allocation API of the storages it creates
  std::vector<std::pair<size_t, int>> tensors;  // (argument position, role)
  PyObject* token = nullptr;  // Python's plan, passed back with the ops handed to Python
};

struct Object {
  explicit Object(c10::weak_intrusive_ptr<c10::StorageImpl> weak) : storage(std::move(weak)) {}
  int64_t id = 0;
  int64_t nbytes = 0;
  int64_t itemsize = 1;
  void* data = nullptr;
  c10::weak_intrusive_ptr<c10::StorageImpl> storage;
  std::vector<int64_t> whole_ops;  // t << 2 | read << 1 | write: ops that touched every element
  bool keep = false;  // Python tracks its elements: its ops outlive it (see retire)
};

struct Callbacks {
  PyObject* plan = nullptr;      // (name, overload) -> (kind, name, api, ((position, role), ...), token)
  PyObject* op = nullptr;        // (token, args, outputs, site) for ops handed to Python
  PyObject* periodic = nullptr;  // () every 50 ms: flush, pool statistics, sweep
  PyObject* code_kind = nullptr; // (code) -> 0 library, 1 the user's, 2 the frame that runs the program
  PyObject* site = nullptr;      // (((code, line), ...)) -> the site as JSON
};

Callbacks g_py;
std::atomic<bool> g_active{false};
std::atomic<int64_t> g_t{0};
std::atomic<int64_t> g_next_id{1};
at::CallbackHandle g_handle = 0;

// Guarded by the GIL.
std::unordered_map<c10::StorageImpl*, Object> g_objects;
std::unordered_map<void*, c10::StorageImpl*> g_by_data;
std::unordered_map<int64_t, c10::StorageImpl*> g_by_id;
std::unordered_map<int64_t, std::vector<int64_t>> g_kept_ops;  // of freed objects Python tracks
std::unordered_map<PyObject*, int> g_code_kinds;  // holds a reference to each code object
std::unordered_map<std::string, std::string> g_sites;
struct PairHash {
  size_t operator()(const std::pair<PyObject*, int>& key) const {
    return std::hash<void*>()(key.first) ^ (static_cast<size_t>(key.second) * 0x9E3779B97F4A7C15ull);
  }
};
// (code, instruction offset) -> line: computing a line walks the code's line table.
std::unordered_map<std::pair<PyObject*, int>, int, PairHash> g_lines;
std::unordered_map<int, std::string> g_devices;  // device type << 16 | index -> "cuda:0"
const std::string kNoSite = "[]";
const std::string* g_last_site = &kNoSite;  // an entry of g_sites (nodes stay put) or kNoSite
std::string g_buffer;
std::chrono::steady_clock::time_point g_periodic_at;

// Guarded by g_plans_mutex (the start callback runs without the GIL).  Plans live for good, so
// each thread keeps its own lock-free index of those it has used.
std::mutex g_plans_mutex;
std::unordered_map<const char*, std::unique_ptr<Plan>> g_plans;
thread_local std::unordered_map<const char*, Plan*> t_plans;

// Guarded by g_freed_mutex: the allocators' reports arrive on any thread, under their locks.
std::mutex g_freed_mutex;
std::unordered_set<void*> g_tracked;             // data pointers of recorded storages
// A frame as a walk found it: its code and line, and its kind (kUnknown when the walk could not
// ask Python what the code is, kUnverified when it read the frame without the GIL; see below).
struct RawFrame {
  PyObject* code;  // a reference held only when owned (the code not yet classified)
  int line;
  int kind;
  bool owned;
};
struct Freed {
  void* data;
  int64_t t;
  std::vector<RawFrame> frames;  // the freeing thread's, when it runs Python
};
std::vector<Freed> g_freed;  // reported, not yet written
std::atomic<bool> g_any_freed{false};  // g_freed is not empty: the per-op check without the mutex

thread_local int t_depth = 0;  // > 0 inside a recorded op: its nested ops are not recorded
thread_local bool t_primed = false;  // a thread state made here (a thread without Python frames)
// How much of the work to do, for the overhead benchmark's breakdown only: 0 all of it, 1 none
// (RecordFunction with inputs and outputs, nothing recorded), 2 all but the Python stacks.
int g_stage = 0;
int g_log_level = 0;  // c10's, restored at uninstall

// ------------------------------------------------------------------ the GIL
void prime_thread() {
  // A thread Python never saw (autograd's device threads) gets one thread state for good:
  // creating and destroying one per op would cost more than the op.
  thread_local bool primed = false;
  if (primed) return;
  primed = true;
  if (PyGILState_GetThisThreadState() == nullptr) {
    PyGILState_Ensure();
    PyEval_SaveThread();
    t_primed = true;
  }
}

struct Gil {
  PyGILState_STATE state;
  Gil() {
    prime_thread();
    state = PyGILState_Ensure();
  }
  ~Gil() { PyGILState_Release(state); }
};

// ------------------------------------------------------------------ sites
// Frame kinds, from recorder._frame_kind: 0 a library's, 1 the user's, 2 the frame that runs
// the program (nothing older is the user's).
constexpr int kUnknown = -1, kLibrary = 0, kUser = 1, kEntry = 2;
// A frame read without the GIL: its code is trusted only if g_code_kinds holds it (then it is
// alive); its line is still an instruction.
constexpr int kUnverified = -2;
constexpr size_t kRawFrames = 64;
constexpr size_t kUserFrames = 8;

int code_kind(PyObject* code, bool may_call_python) {
  auto found = g_code_kinds.find(code);
  if (found != g_code_kinds.end()) return found->second;
  if (!may_call_python) return kUnknown;
  int kind = kLibrary;
  PyObject* result = PyObject_CallOneArg(g_py.code_kind, code);
  if (result != nullptr) {
    kind = static_cast<int>(PyLong_AsLong(result));
    Py_DECREF(result);
  }
  PyErr_Clear();
  Py_INCREF(code);  // kept alive: the table is keyed by its address
  g_code_kinds.emplace(code, kind);
  return kind;
}

// The calling thread's frames that may be the user's, innermost first (the GIL held), added
// to `frames`.  Inside an allocator's report no Python may run (it may hold the allocator's
// lock): codes not yet classified are kept as unknown (with a reference), and where walking
// makes frame objects the garbage collector waits until the walk is done.
void walk_frames(std::vector<RawFrame>& frames, bool may_call_python) {
  int gc_was_enabled = !may_call_python && !gpulint_frames::reads_records() ? PyGC_Disable() : 0;
  gpulint_frames::Cursor cursor;
  size_t users = 0;
  for (bool more = gpulint_frames::first(cursor); more && users < kUserFrames; more = gpulint_frames::next(cursor)) {
    PyObject* code = gpulint_frames::code(cursor);
    int kind = code_kind(code, may_call_python);
    if (kind == kEntry) break;
    if (kind == kLibrary) continue;
    if (kind == kUnknown) {
      Py_INCREF(code);
      frames.push_back({code, gpulint_frames::line(cursor), kind, true});
      continue;
    }
    // Classified codes live for good (g_code_kinds holds them), so their addresses key the
    // line cache safely.
    auto key = std::make_pair(code, gpulint_frames::instruction(cursor));
    auto found = g_lines.find(key);
    int line = found != g_lines.end() ? found->second : (g_lines[key] = gpulint_frames::line(cursor));
    frames.push_back({code, line, kind, false});
    users += kind == kUser;
  }
  gpulint_frames::close(cursor);
  if (gc_was_enabled) PyGC_Enable();
}

// The same without the GIL, for a free inside an op (PyTorch lets the GIL go to free a tensor,
// even for `del`): the records are only read, sorted out later by site_of.
void walk_frames_without_gil(std::vector<RawFrame>& frames, PyThreadState* thread) {
  gpulint_frames::Cursor cursor;
  size_t count = 0;
  for (bool more = gpulint_frames::first_without_gil(cursor, thread); more && count < kRawFrames;
       more = gpulint_frames::next(cursor), ++count)
    frames.push_back({gpulint_frames::code(cursor), gpulint_frames::instruction(cursor), kUnverified, false});
}

void release(std::vector<RawFrame>& frames) {
  for (RawFrame& frame : frames)
    if (frame.owned) Py_DECREF(frame.code);
  frames.clear();
}

// The user's frames as JSON (releasing the walk's references); the last site when there are
// none (autograd's threads: the user's frame that called backward()).
const std::string& site_of(std::vector<RawFrame>& frames) {
  static std::string key;  // scratch (the GIL held): no allocation per op once grown
  static std::vector<std::pair<PyObject*, int>> users;
  key.clear();
  users.clear();
  for (RawFrame& frame : frames) {
    int kind = frame.kind;
    if (kind == kUnverified) {
      auto known = g_code_kinds.find(frame.code);
      if (known == g_code_kinds.end()) continue;  // never classified: it may be gone, so it is not read
      kind = known->second;
      if (kind == kUser) {
        auto key = std::make_pair(frame.code, frame.line);
        auto found = g_lines.find(key);
        frame.line = found != g_lines.end() ? found->second
                                            : (g_lines[key] = gpulint_frames::line_at(frame.code, frame.line));
      }
    } else if (kind == kUnknown) {
      kind = code_kind(frame.code, true);
    }
    if (kind == kEntry) break;
    if (kind == kUser && users.size() < kUserFrames) {
      users.emplace_back(frame.code, frame.line);
      key.append(reinterpret_cast<const char*>(&frame.code), sizeof(frame.code));
      key.append(reinterpret_cast<const char*>(&frame.line), sizeof(frame.line));
    }
  }
  if (users.empty()) {
    release(frames);
    return *g_last_site;
  }
  auto found = g_sites.find(key);
  if (found == g_sites.end()) {
    std::string text = kNoSite;
    PyObject* pairs = PyTuple_New(static_cast<Py_ssize_t>(users.size()));
    for (size_t i = 0; i < users.size(); ++i) {
      Py_INCREF(users[i].first);
      PyTuple_SET_ITEM(pairs, i, Py_BuildValue("(Ni)", users[i].first, users[i].second));
    }
    PyObject* result = PyObject_CallOneArg(g_py.site, pairs);
    Py_DECREF(pairs);
    if (result != nullptr && PyUnicode_Check(result)) text = PyUnicode_AsUTF8(result);
    Py_XDECREF(result);
    PyErr_Clear();
    found = g_sites.emplace(key, std::move(text)).first;
  }
  release(frames);
  g_last_site = &found->second;
  return found->second;
}

const std::string& current_site() {
  if (g_stage == 2) return *g_last_site;
  static std::vector<RawFrame> frames;  // scratch, as in site_of
  walk_frames(frames, true);
  return site_of(frames);
}

// ------------------------------------------------------------------ events
// One event, formatted straight into the buffer (no string per field).
// One event line; `opening` is `{"ev":"<kind>","t":`.  The host's monotonic clock when it happened
// goes in front (`{"ns":N,"ev":...`, Python's time.monotonic_ns), as the other collectors write it.
struct Event {
  explicit Event(const char* opening) {
    timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    g_buffer += "{\"ns\":";
    *this << static_cast<int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
    g_buffer += ',';
    g_buffer += opening + 1;
  }
  ~Event() { g_buffer += "}\n"; }
  Event& operator<<(const char* text) {
    g_buffer += text;
    return *this;
  }
  Event& operator<<(const std::string& text) {
    g_buffer += text;
    return *this;
  }
  Event& operator<<(int64_t number) {
    char digits[24];
    auto end = std::to_chars(digits, digits + sizeof(digits), number).ptr;
    g_buffer.append(digits, end);
    return *this;
  }
  Event& operator<<(const std::vector<int64_t>& ids) {
    g_buffer += '[';
    for (size_t i = 0; i < ids.size(); ++i) {
      if (i) g_buffer += ',';
      *this << ids[i];
    }
    g_buffer += ']';
    return *this;
  }
};

int64_t tick() { return ++g_t; }

void write_free(const Object& object, int64_t t, const std::string& site) {
  Event("{\"ev\":\"free\",\"t\":") << t << ",\"obj\":" << object.id << ",\"stream\":0,\"site\":" << site;
}

// A freed object leaves the tables; Python may still need the ops it had (its bitmaps).
void retire(Object& object) {
  g_by_id.erase(object.id);
  if (object.keep) g_kept_ops[object.id] = std::move(object.whole_ops);
}

void forget(c10::StorageImpl* impl, const Object& object) {
  if (object.data != nullptr) {
    auto found = g_by_data.find(object.data);
    if (found != g_by_data.end() && found->second == impl) {
      g_by_data.erase(found);
      std::lock_guard<std::mutex> lock(g_freed_mutex);
      g_tracked.erase(object.data);
    }
  }
}

// The frees the allocators reported since the last event (before any new object is recorded:
// a new storage may reuse a freed address).
void drain_frees() {
  if (!g_any_freed.load(std::memory_order_acquire)) return;
  std::vector<Freed> freed;
  {
    std::lock_guard<std::mutex> lock(g_freed_mutex);
    freed.swap(g_freed);
    g_any_freed.store(false, std::memory_order_relaxed);
  }
  for (Freed& entry : freed) {
    const std::string& site = site_of(entry.frames);  // releases the frames' references
    auto found = g_by_data.find(entry.data);
    if (found == g_by_data.end()) continue;
    c10::StorageImpl* impl = found->second;
    g_by_data.erase(found);
    auto object = g_objects.find(impl);
    if (object == g_objects.end()) continue;
    write_free(object->second, entry.t, site);
    retire(object->second);
    g_objects.erase(object);
  }
}

// Storages that died without an allocator's report (another thread's free, memory from
// numpy): freed now.
void sweep() {
  drain_frees();
  for (auto it = g_objects.begin(); it != g_objects.end();) {
    if (it->second.storage.expired()) {
      write_free(it->second, tick(), *g_last_site);
      forget(it->first, it->second);
      retire(it->second);
      it = g_objects.erase(it);
    } else {
      ++it;
    }
  }
}

struct FreeReporter final : c10::MemoryReportingInfoBase {
  bool memoryProfilingEnabled() const override { return true; }
  void reportMemoryUsage(void* ptr, int64_t alloc_size, size_t, size_t, c10::Device device) override {
    if (alloc_size >= 0 || !g_active.load(std::memory_order_relaxed)) return;
    {
      std::lock_guard<std::mutex> lock(g_freed_mutex);
      if (!g_tracked.erase(ptr)) return;
    }
    // The statement that dropped the last reference, when this thread runs Python.  PyTorch
    // lets the GIL go while it frees a tensor (`del` included), and the CUDA allocator reports
    // under its mutex, which any thread holding the GIL may want (memory statistics, autograd's
    // device threads running hooks or this hook's ops): waiting for the GIL here could
    // deadlock.  So the thread's own frames are read without it where this Python allows; else
    // the GIL is taken only for the CPU allocator, which reports outside its lock, and other
    // frees get the last site.
    std::vector<RawFrame> frames;
    PyThreadState* thread = Py_IsInitialized() && !t_primed ? PyGILState_GetThisThreadState() : nullptr;
    if (thread != nullptr) {
      if (PyGILState_Check()) {
        walk_frames(frames, false);
      } else if (gpulint_frames::reads_records()) {
        walk_frames_without_gil(frames, thread);
      } else if (device.is_cpu()) {
        PyGILState_STATE state = PyGILState_Ensure();
        walk_frames(frames, false);
        PyGILState_Release(state);
      }
    }
    std::lock_guard<std::mutex> lock(g_freed_mutex);
    g_freed.push_back({ptr, tick(), std::move(frames)});
    g_any_freed.store(true, std::memory_order_release);
  }
};

// ------------------------------------------------------------------ objects
const std::string& device_name(const at::Tensor& tensor) {
  c10::Device device = tensor.device();
  int key = static_cast<int>(device.type()) << 16 | (device.index() & 0xffff);
  auto found = g_devices.find(key);
  if (found == g_devices.end()) found = g_devices.emplace(key, device.str()).first;
  return found->second;
}

Object* find_object(const at::Tensor& tensor) {
  if (!tensor.defined() || !tensor.has_storage()) return nullptr;
  auto found = g_objects.find(tensor.storage().unsafeGetStorageImpl());
  return found == g_objects.end() ? nullptr : &found->second;
}

Object* object_of(const at::Tensor& tensor, const std::string& site, const std::string& api) {
  if (!tensor.defined() || !tensor.has_storage()) return nullptr;
  c10::StorageImpl* impl = tensor.storage().unsafeGetStorageImpl();
  auto found = g_objects.find(impl);
  if (found != g_objects.end()) return &found->second;
  Object object(tensor.storage().getWeakStorageImpl());
  object.id = g_next_id++;
  object.nbytes = static_cast<int64_t>(impl->nbytes());
  object.itemsize = static_cast<int64_t>(tensor.element_size());
  object.data = impl->data_ptr().get();
  Event("{\"ev\":\"alloc\",\"t\":") << tick() << ",\"obj\":" << object.id << ",\"size\":" << object.nbytes
                                      << ",\"stream\":0,\"api\":\"" << api << "\",\"framework\":\"torch\",\"device\":\""
                                      << device_name(tensor) << "\",\"site\":" << site;
  if (object.data != nullptr) {
    auto previous = g_by_data.find(object.data);
    if (previous != g_by_data.end() && previous->second != impl) {
      // The storage that had this address died unreported: it is freed now.
      auto old = g_objects.find(previous->second);
      if (old != g_objects.end()) {
        write_free(old->second, tick(), *g_last_site);
        retire(old->second);
        g_objects.erase(old);
      }
    }
    g_by_data[object.data] = impl;
    std::lock_guard<std::mutex> lock(g_freed_mutex);
    g_tracked.insert(object.data);
  }
  g_by_id[object.id] = impl;
  return &g_objects.emplace(impl, std::move(object)).first->second;
}

// The strides are a permutation of a contiguous layout (`w.t()`, `x.permute(...)`).
bool permuted_contiguous(const at::Tensor& tensor) {
  auto sizes = tensor.sizes();
  auto strides = tensor.strides();
  std::vector<std::pair<int64_t, int64_t>> dims;
  for (size_t i = 0; i < sizes.size(); ++i)
    if (sizes[i] != 1) dims.emplace_back(strides[i], sizes[i]);
  std::sort(dims.begin(), dims.end());
  int64_t expected = 1;
  for (auto& [stride, size] : dims) {
    if (stride != expected) return false;
    expected *= size;
  }
  return true;
}

// The view reaches every element of its storage exactly once, with the storage's element size.
bool whole(const at::Tensor& tensor) {
  if (tensor.storage_offset() != 0) return false;
  Object* known = find_object(tensor);
  int64_t itemsize = static_cast<int64_t>(tensor.element_size());
  int64_t nbytes = known ? known->nbytes : static_cast<int64_t>(tensor.storage().nbytes());
  if ((known && known->itemsize != itemsize) || tensor.numel() * itemsize != nbytes) return false;
  return tensor.is_contiguous() || permuted_contiguous(tensor);
}

// A Python number passed where the op takes a tensor: PyTorch wraps it in a 0-d tensor, which
// a dispatch mode sees as the number it was (no memory).
bool wrapped_number(const at::Tensor& tensor) {
  return tensor.defined() && tensor.unsafeGetTensorImpl()->is_wrapped_number();
}

template <typename F>
void each_tensor(const c10::IValue& value, F&& visit) {
  if (value.isTensor()) {
    if (!wrapped_number(value.toTensor())) visit(value.toTensor());
  } else if (value.isList()) {  // tensor lists too: their items are tensors
    for (const c10::IValue& item : value.toListRef()) each_tensor(item, visit);
  } else if (value.isTuple()) {
    for (const c10::IValue& item : value.toTupleRef().elements()) each_tensor(item, visit);
  }
}

// ------------------------------------------------------------------ values for Python
PyObject* to_python(const c10::IValue& value) {
  if (value.isTensor()) {
    const at::Tensor& tensor = value.toTensor();
    if (!tensor.defined()) Py_RETURN_NONE;
    if (wrapped_number(tensor)) {
      c10::Scalar number = tensor.item();  // an op, not recorded: this op is still being handled
      if (number.isBoolean()) return PyBool_FromLong(number.toBool());
      if (number.isIntegral(false)) return PyLong_FromLongLong(number.toLong());
      if (number.isComplex()) {
        auto z = number.toComplexDouble();
        return PyComplex_FromDoubles(z.real(), z.imag());
      }
      return PyFloat_FromDouble(number.toDouble());
    }
    return THPVariable_Wrap(tensor);
  }
  if (value.isNone()) Py_RETURN_NONE;
  if (value.isBool()) return PyBool_FromLong(value.toBool());
  if (value.isInt()) return PyLong_FromLongLong(value.toInt());
  if (value.isDouble()) return PyFloat_FromDouble(value.toDouble());
  if (value.isString()) return PyUnicode_FromString(value.toStringRef().c_str());
  if (value.isTensorList() || value.isList() || value.isIntList() || value.isDoubleList() || value.isBoolList()) {
    std::vector<c10::IValue> items;
    if (value.isTensorList()) {
      for (const at::Tensor& tensor : value.toTensorList().vec()) items.emplace_back(tensor);
    } else if (value.isIntList()) {
      for (int64_t item : value.toIntVector()) items.emplace_back(item);
    } else if (value.isDoubleList()) {
      for (double item : value.toDoubleVector()) items.emplace_back(item);
    } else if (value.isBoolList()) {
      for (bool item : value.toBoolList().vec()) items.emplace_back(item);
    } else {
      for (const c10::IValue& item : value.toListRef()) items.push_back(item);
    }
    PyObject* list = PyList_New(static_cast<Py_ssize_t>(items.size()));
    for (size_t i = 0; i < items.size(); ++i) PyList_SET_ITEM(list, i, to_python(items[i]));
    return list;
  }
  if (value.isTuple()) {
    const auto& elements = value.toTupleRef().elements();
    PyObject* tuple = PyTuple_New(static_cast<Py_ssize_t>(elements.size()));
    for (size_t i = 0; i < elements.size(); ++i) PyTuple_SET_ITEM(tuple, i, to_python(elements[i]));
    return tuple;
  }
  Py_RETURN_NONE;  // devices, dtypes, generators: nothing the collector reads
}

PyObject* list_of(const std::vector<c10::IValue>& values) {
  PyObject* list = PyList_New(static_cast<Py_ssize_t>(values.size()));
  for (size_t i = 0; i < values.size(); ++i) PyList_SET_ITEM(list, i, to_python(values[i]));
  return list;
}

// ------------------------------------------------------------------ plans
Plan* plan_for(const at::RecordFunction& fn) {
  // The name's address identifies the op overload: it lives in the dispatcher's schema.
  const char* name = fn.name();
  auto known = t_plans.find(name);
  if (known != t_plans.end()) return known->second;
  {
    std::lock_guard<std::mutex> lock(g_plans_mutex);
    auto found = g_plans.find(name);
    if (found != g_plans.end()) return t_plans[name] = found->second.get();
  }
  auto op = fn.operator_name();
  if (!op) return nullptr;  // a named scope (RECORD_FUNCTION), not an op: its name is not stable
  auto plan = std::make_unique<Plan>();
  {
    Gil gil;
    PyObject* result = PyObject_CallFunction(g_py.plan, "ss", op->name.c_str(), op->overload_name.c_str());
    if (result != nullptr && PyTuple_Check(result) && PyTuple_GET_SIZE(result) == 5) {
      plan->kind = static_cast<int>(PyLong_AsLong(PyTuple_GET_ITEM(result, 0)));
      plan->name = PyUnicode_AsUTF8(PyTuple_GET_ITEM(result, 1));
      plan->api = PyUnicode_AsUTF8(PyTuple_GET_ITEM(result, 2));
      PyObject* tensors = PyTuple_GET_ITEM(result, 3);
      for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(tensors); ++i) {
        PyObject* pair = PyTuple_GET_ITEM(tensors, i);
        plan->tensors.emplace_back(PyLong_AsSize_t(PyTuple_GET_ITEM(pair, 0)),
                                   static_cast<int>(PyLong_AsLong(PyTuple_GET_ITEM(pair, 1))));
      }
      plan->token = PyTuple_GET_ITEM(result, 4);
      Py_INCREF(plan->token);
    } else {
      PyErr_Print();  // a bug in gpulint: say so, and leave the op out
      plan->kind = kNotRecorded;
    }
    Py_XDECREF(result);
  }
  std::lock_guard<std::mutex> lock(g_plans_mutex);
  auto& slot = g_plans[name];
  if (!slot) slot = std::move(plan);
  return t_plans[name] = slot.get();
}

struct OpContext final : at::ObserverContext {
  Plan* plan = nullptr;
  std::vector<c10::IValue> inputs;
};

// ------------------------------------------------------------------ ops
// Python's periodic work (flush, pool statistics, sweep), on threads that run Python.
void periodic_if_due() {
  if (t_primed) return;
  auto now = std::chrono::steady_clock::now();
  if (now - g_periodic_at < std::chrono::milliseconds(50)) return;
  g_periodic_at = now;
  PyObject* result = PyObject_CallNoArgs(g_py.periodic);
  if (result == nullptr) PyErr_Print();
  Py_XDECREF(result);
}

void hand_to_python(const Plan& plan, const std::vector<c10::IValue>& inputs, const at::RecordFunction& fn,
                    const std::string& site) {
  PyObject* args = list_of(inputs);
  PyObject* outputs = list_of(fn.outputs());
  PyObject* site_text = PyUnicode_FromStringAndSize(site.data(), static_cast<Py_ssize_t>(site.size()));
  PyObject* result = PyObject_CallFunctionObjArgs(g_py.op, plan.token, args, outputs, site_text, nullptr);
  if (result == nullptr) PyErr_Print();
  Py_XDECREF(result);
  Py_DECREF(args);
  Py_DECREF(outputs);
  Py_DECREF(site_text);
}

void record(const Plan& plan, const std::vector<c10::IValue>& inputs, const at::RecordFunction& fn) {
  drain_frees();
  const std::string& site = current_site();  // an entry of g_sites: stays put
  if (plan.kind == kPython) {
    hand_to_python(plan, inputs, fn, site);
    return;
  }
  // Every tensor whole (the common case): written here.  Otherwise Python works out the elements.
  bool all_whole = true;
  for (auto& [position, role] : plan.tensors) {
    if (position < inputs.size())
      each_tensor(inputs[position], [&](const at::Tensor& tensor) {
        if (tensor.defined() && tensor.has_storage() && !whole(tensor)) all_whole = false;
      });
  }
  for (const c10::IValue& output : fn.outputs())
    each_tensor(output, [&](const at::Tensor& tensor) {
      if (tensor.defined() && tensor.has_storage() && !whole(tensor)) all_whole = false;
    });
  if (!all_whole) {
    hand_to_python(plan, inputs, fn, site);
    return;
  }
  // Scratch (the GIL held, and a recorded op's own ops are never recorded): no allocation per op.
  static std::vector<int64_t> reads, writes;
  static std::vector<Object*> touched;
  reads.clear();
  writes.clear();
  touched.clear();
  auto add = [](std::vector<int64_t>& ids, int64_t id) {
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  };
  for (auto& [position, role] : plan.tensors) {
    if (position >= inputs.size()) continue;
    each_tensor(inputs[position], [&](const at::Tensor& tensor) {
      Object* object = object_of(tensor, site, "tensor");
      if (object == nullptr) return;
      add(reads, object->id);
      if (role != kRead) add(writes, object->id);
      touched.push_back(object);
    });
  }
  for (const c10::IValue& output : fn.outputs())
    each_tensor(output, [&](const at::Tensor& tensor) {
      if (find_object(tensor) != nullptr) return;  // an input, returned (in-place ops)
      Object* object = object_of(tensor, site, plan.api);
      if (object == nullptr) return;
      add(writes, object->id);
      touched.push_back(object);
    });
  int64_t t = tick();
  if (reads.empty() && (plan.kind == kFilling || plan.kind == kUninitialised)) {
    if (plan.kind == kFilling)
      for (Object* object : touched)
        Event("{\"ev\":\"memset\",\"t\":") << t << ",\"obj\":" << object->id << ",\"size\":" << object->nbytes
                                             << ",\"offset\":0,\"stream\":0,\"site\":" << site;
    return;
  }
  Event("{\"ev\":\"launch\",\"t\":") << t << ",\"kernel\":\"" << plan.name << "\",\"stream\":0,\"reads\":" << reads
                                       << ",\"writes\":" << writes << ",\"site\":" << site;
  for (Object* object : touched) {
    bool read = std::find(reads.begin(), reads.end(), object->id) != reads.end();
    bool write = std::find(writes.begin(), writes.end(), object->id) != writes.end();
    int64_t code = t << 2 | int64_t(read) << 1 | int64_t(write);
    if (object->whole_ops.empty() || object->whole_ops.back() != code) object->whole_ops.push_back(code);
  }
}

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  if (!g_active.load(std::memory_order_relaxed) || t_depth > 0) return nullptr;
  Plan* plan = plan_for(fn);
  if (plan == nullptr || plan->kind == kNotRecorded) return nullptr;
  ++t_depth;
  if (g_stage == 1) {
    --t_depth;
    return nullptr;
  }
  auto context = std::make_unique<OpContext>();
  context->plan = plan;
  if (plan->kind != kView) {
    auto inputs = fn.inputs();
    context->inputs.assign(inputs.begin(), inputs.end());
  }
  return context;
}

void on_end(const at::RecordFunction& fn, at::ObserverContext* raw) {
  if (raw == nullptr) return;
  auto* context = static_cast<OpContext*>(raw);
  struct Leave {
    ~Leave() { --t_depth; }
  } leave;  // ops that Python runs while handling this one stay unrecorded
  // An op that raised did nothing the program can see (the dispatch mode never saw it either).
  if (context->plan->kind == kView || !g_active.load() || std::uncaught_exceptions() > 0) return;
  if (!Py_IsInitialized()) return;
  Gil gil;
  record(*context->plan, context->inputs, fn);
  periodic_if_due();
}

// ------------------------------------------------------------------ the module
const at::Tensor* tensor_arg(PyObject* object) {
  if (!THPVariable_Check(object)) {
    PyErr_SetString(PyExc_TypeError, "expected a tensor");
    return nullptr;
  }
  return &THPVariable_Unpack(object);
}

PyObject* py_install(PyObject*, PyObject* args) {
  if (g_active) {
    PyErr_SetString(PyExc_RuntimeError, "gpulint's torch hook is already installed");
    return nullptr;
  }
  int64_t t = 0, next_id = 1;
  if (!PyArg_ParseTuple(args, "OOOOOLLi", &g_py.plan, &g_py.op, &g_py.periodic, &g_py.code_kind, &g_py.site, &t,
                        &next_id, &g_stage))
    return nullptr;
  for (PyObject* callback : {g_py.plan, g_py.op, g_py.periodic, g_py.code_kind, g_py.site}) Py_INCREF(callback);
  // A new session (another trace in this process): nothing of the last one carries over but
  // the plans.  Code kinds go too: the program's entry frame may have changed (program_entry).
  for (auto& [code, kind] : g_code_kinds) Py_DECREF(code);
  g_code_kinds.clear();
  g_sites.clear();
  g_lines.clear();
  g_objects.clear();
  g_by_data.clear();
  g_by_id.clear();
  g_kept_ops.clear();
  g_buffer.clear();
  g_last_site = &kNoSite;
  {
    std::lock_guard<std::mutex> lock(g_freed_mutex);
    g_tracked.clear();
    g_freed.clear();  // a last session's frames: their references are left (a few, once)
  }
  g_t = t;
  g_next_id = next_id;
  g_periodic_at = std::chrono::steady_clock::now();
  c10::ThreadLocalDebugInfo::_push(c10::DebugInfoKind::PROFILER_STATE, std::make_shared<FreeReporter>());
  // The CPU allocator warns once (on stderr) when a block it has no size for is freed while a
  // memory reporter listens: blocks from before the session.  The program's output stays its own.
  g_log_level = FLAGS_caffe2_log_level;
  FLAGS_caffe2_log_level = std::max(g_log_level, 2);
  g_active = true;
  g_handle = at::addGlobalCallback(at::RecordFunctionCallback(on_start, on_end)
                                       .needsInputs(true)
                                       .needsOutputs(true)
                                       .scopes({at::RecordScope::FUNCTION}));
  Py_RETURN_NONE;
}

PyObject* py_uninstall(PyObject*, PyObject*) {
  if (!g_active) Py_RETURN_NONE;
  g_active = false;
  at::removeCallback(g_handle);
  auto top = c10::ThreadLocalDebugInfo::get(c10::DebugInfoKind::PROFILER_STATE);
  if (dynamic_cast<FreeReporter*>(top) != nullptr) c10::ThreadLocalDebugInfo::_pop(c10::DebugInfoKind::PROFILER_STATE);
  FLAGS_caffe2_log_level = g_log_level;
  sweep();
  Py_RETURN_NONE;
}

// Whether this thread is inside an op the hook records: the kernels it launches are the op's.
PyObject* py_inside_op(PyObject*, PyObject*) { return PyBool_FromLong(t_depth > 0); }

PyObject* py_tick(PyObject*, PyObject*) { return PyLong_FromLongLong(tick()); }
PyObject* py_now(PyObject*, PyObject*) { return PyLong_FromLongLong(g_t.load()); }
PyObject* py_new_object(PyObject*, PyObject*) { return PyLong_FromLongLong(g_next_id++); }

PyObject* py_object(PyObject*, PyObject* args) {
  PyObject* tensor_object;
  const char* site;
  const char* api;
  if (!PyArg_ParseTuple(args, "Oss", &tensor_object, &site, &api)) return nullptr;
  const at::Tensor* tensor = tensor_arg(tensor_object);
  if (tensor == nullptr) return nullptr;
  drain_frees();
  Object* object = object_of(*tensor, site, api);
  if (object == nullptr) Py_RETURN_NONE;
  return PyLong_FromLongLong(object->id);
}

PyObject* py_known(PyObject*, PyObject* tensor_object) {
  const at::Tensor* tensor = tensor_arg(tensor_object);
  if (tensor == nullptr) return nullptr;
  drain_frees();
  Object* object = find_object(*tensor);
  if (object == nullptr) Py_RETURN_NONE;
  return PyLong_FromLongLong(object->id);
}

Object* by_id(int64_t id) {
  auto found = g_by_id.find(id);
  return found == g_by_id.end() ? nullptr : &g_objects.at(found->second);
}

PyObject* py_shape(PyObject*, PyObject* arg) {
  Object* object = by_id(PyLong_AsLongLong(arg));
  if (object == nullptr) Py_RETURN_NONE;
  object->keep = true;
  return Py_BuildValue("(LL)", object->nbytes / std::max<int64_t>(1, object->itemsize), object->itemsize);
}

PyObject* py_whole_ops(PyObject*, PyObject* arg) {
  // Freed objects that Python asked about (shape) kept theirs.
  int64_t id = PyLong_AsLongLong(arg);
  Object* object = by_id(id);
  auto kept = g_kept_ops.find(id);
  const std::vector<int64_t>* ops = object ? &object->whole_ops : kept != g_kept_ops.end() ? &kept->second : nullptr;
  PyObject* list = PyList_New(0);
  if (ops != nullptr)
    for (int64_t code : *ops) {
      PyObject* item = PyLong_FromLongLong(code);
      PyList_Append(list, item);
      Py_DECREF(item);
    }
  return list;
}

PyObject* py_append(PyObject*, PyObject* arg) {
  drain_frees();  // earlier events first
  Py_ssize_t size = 0;
  const char* text = PyUnicode_AsUTF8AndSize(arg, &size);
  if (text == nullptr) return nullptr;
  g_buffer.append(text, static_cast<size_t>(size));
  g_buffer += '\n';
  Py_RETURN_NONE;
}

PyObject* py_take(PyObject*, PyObject*) {
  drain_frees();
  PyObject* data = PyBytes_FromStringAndSize(g_buffer.data(), static_cast<Py_ssize_t>(g_buffer.size()));
  g_buffer.clear();
  return data;
}

PyObject* py_sweep(PyObject*, PyObject*) {
  sweep();
  Py_RETURN_NONE;
}

PyMethodDef g_methods[] = {
    {"install", py_install, METH_VARARGS, "install(plan, op, periodic, code_kind, site, t, next_id, stage)"},
    {"uninstall", py_uninstall, METH_NOARGS, "stop recording; storages that died unreported are freed"},
    {"inside_op", py_inside_op, METH_NOARGS, "whether this thread is inside an op the hook records"},
    {"tick", py_tick, METH_NOARGS, "the next event time"},
    {"now", py_now, METH_NOARGS, "the last event time"},
    {"new_object", py_new_object, METH_NOARGS, "the next object id"},
    {"object", py_object, METH_VARARGS, "object(tensor, site, api) -> id of its storage, recorded if new"},
    {"known", py_known, METH_O, "known(tensor) -> id of its storage, or None"},
    {"shape", py_shape, METH_O, "shape(id) -> (elements, itemsize) of a live object, whose ops are then kept"},
    {"whole_ops", py_whole_ops, METH_O, "whole_ops(id) -> the ops recorded here that touched every element"},
    {"append", py_append, METH_O, "append(line): one event for the trace"},
    {"take", py_take, METH_NOARGS, "take() -> the events written since the last take, as bytes"},
    {"sweep", py_sweep, METH_NOARGS, "free the storages that died unreported"},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef g_module = {PyModuleDef_HEAD_INIT, "gpulint_torch_hook", nullptr, -1, g_methods};

}  // namespace

PyMODINIT_FUNC PyInit_gpulint_torch_hook() { return PyModule_Create(&g_module); }
