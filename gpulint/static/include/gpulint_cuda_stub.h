/* gpulint_cuda_stub.h -- a stand-in for the CUDA runtime headers, for parsing only.
 *
 * gpulint's precise (libclang) frontend force-includes this header when it parses a .cu/.cuh
 * file with `-x cuda --cuda-host-only -nocudainc -nocudalib`, so that CUDA sources parse on a
 * machine with no CUDA toolkit (and with the PyPI libclang, which ships no clang builtin
 * headers).  It declares what CUDA code commonly names: the execution-space attributes, the
 * built-in vector types and variables, and the runtime/driver API calls gpulint lints.  It is
 * written from the public API documentation; it contains no toolkit code and nothing here is
 * ever compiled or linked.  Declarations only: signatures are close enough for overload
 * resolution of ordinary calls, not exact.
 */
#ifndef GPULINT_CUDA_STUB_H
#define GPULINT_CUDA_STUB_H

/* Make the real headers' include guards think they are already in, so that a file that
 * includes <cuda_runtime.h> and friends picks up nothing from a toolkit (see the -nocudainc
 * recipe: the include itself is resolved against an empty stub directory or fails harmlessly). */
#define __CUDA_RUNTIME_H__ 1
#define __CUDA_RUNTIME_API_H__ 1
#define __DRIVER_TYPES_H__ 1
#define __VECTOR_TYPES_H__ 1
#define __CUDA_H__ 1
#define __GPULINT_STUB__ 1

#ifndef __CUDACC__
#define __CUDACC__ 1
#endif
#ifndef CUDART_VERSION
#define CUDART_VERSION 12000
#endif
#ifndef __CUDACC_VER_MAJOR__
#define __CUDACC_VER_MAJOR__ 12
#define __CUDACC_VER_MINOR__ 0
#endif

/* ---------------------------------------------------------------- execution-space attributes */
#define __host__ __attribute__((host))
#define __device__ __attribute__((device))
#define __global__ __attribute__((global))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __managed__ __attribute__((managed))
#define __grid_constant__
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __inline_hint__
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
#define __restrict__ __restrict
#define __builtin_align__(n) __attribute__((aligned(n)))
#define __cudart_builtin__
#define CUDARTAPI
#define CUDAAPI
#define __CUDA_ARCH_LIST__ 900

#ifdef __cplusplus
#define GPULINT_EXTERN_C extern "C"
#define GPULINT_DEFAULT(v) = v
#else
#define GPULINT_EXTERN_C
#define GPULINT_DEFAULT(v)
#endif

/* ---------------------------------------------------------------- the C library
 * cuda_runtime.h pulls in <string.h>, <time.h>, <stdio.h>, <stdlib.h>, <assert.h> and <math.h>, so
 * CUDA code calls printf/malloc/memcpy/sqrtf without including them.  Take the system's headers
 * when there are any (host declarations are callable from device code in a host-only parse);
 * declare the few functions GPU code calls most when there are none. */
#if defined(__has_include)
#if __has_include(<string.h>) && __has_include(<stdio.h>) && __has_include(<stdlib.h>)
#define GPULINT_HAVE_LIBC 1
#endif
#if __has_include(<math.h>)
#define GPULINT_HAVE_LIBM 1
#endif
#endif
#ifdef GPULINT_HAVE_LIBC
#include <string.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <assert.h>
#else
GPULINT_EXTERN_C {
int printf(const char *format, ...);
int fprintf(struct _IO_FILE *stream, const char *format, ...);
void *malloc(__SIZE_TYPE__ size);
void *calloc(__SIZE_TYPE__ count, __SIZE_TYPE__ size);
void *realloc(void *ptr, __SIZE_TYPE__ size);
void free(void *ptr);
void exit(int status);
void abort(void);
void *memcpy(void *dst, const void *src, __SIZE_TYPE__ n);
void *memset(void *dst, int value, __SIZE_TYPE__ n);
int memcmp(const void *a, const void *b, __SIZE_TYPE__ n);
__SIZE_TYPE__ strlen(const char *s);
long clock(void);
}
extern struct _IO_FILE *stdout;
extern struct _IO_FILE *stderr;
#define EXIT_SUCCESS 0
#define EXIT_FAILURE 1
#define assert(e) ((void)0)
#endif
#ifdef GPULINT_HAVE_LIBM
#include <math.h>
#endif

/* ---------------------------------------------------------------- basic types */
#ifndef __SIZE_TYPE__
#define __SIZE_TYPE__ unsigned long
#endif
typedef __SIZE_TYPE__ size_t;
#ifdef __cplusplus
namespace std { typedef ::size_t size_t; }
#endif

/* ---------------------------------------------------------------- vector types */
#define GPULINT_VEC1(T, N) struct N##1 { T x; };
#define GPULINT_VEC2(T, N) struct __attribute__((aligned(2 * sizeof(T)))) N##2 { T x, y; };
#define GPULINT_VEC3(T, N) struct N##3 { T x, y, z; };
#define GPULINT_VEC4(T, N) struct __attribute__((aligned(4 * sizeof(T)))) N##4 { T x, y, z, w; };
#define GPULINT_VECS(T, N) GPULINT_VEC1(T, N) GPULINT_VEC2(T, N) GPULINT_VEC3(T, N) GPULINT_VEC4(T, N) \
  typedef struct N##1 N##1; typedef struct N##2 N##2; typedef struct N##3 N##3; typedef struct N##4 N##4;
GPULINT_VECS(signed char, char)
GPULINT_VECS(unsigned char, uchar)
GPULINT_VECS(short, short)
GPULINT_VECS(unsigned short, ushort)
GPULINT_VECS(int, int)
GPULINT_VECS(unsigned int, uint)
GPULINT_VECS(long, long)
GPULINT_VECS(unsigned long, ulong)
GPULINT_VECS(long long, longlong)
GPULINT_VECS(unsigned long long, ulonglong)
GPULINT_VECS(float, float)
GPULINT_VECS(double, double)
#undef GPULINT_VEC1
#undef GPULINT_VEC2
#undef GPULINT_VEC3
#undef GPULINT_VEC4
#undef GPULINT_VECS

struct dim3 {
  unsigned int x, y, z;
#ifdef __cplusplus
  __host__ __device__ dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1)
      : x(vx), y(vy), z(vz) {}
  __host__ __device__ dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  __host__ __device__ operator uint3() const { uint3 t; t.x = x; t.y = y; t.z = z; return t; }
#endif
};
typedef struct dim3 dim3;

/* ---------------------------------------------------------------- built-in variables */
extern const __device__ uint3 threadIdx;
extern const __device__ uint3 blockIdx;
extern const __device__ dim3 blockDim;
extern const __device__ dim3 gridDim;
extern const __device__ int warpSize;

/* half types as opaque 16-bit structs (cuda_fp16.h / cuda_bf16.h are not parsed) */
struct __half { unsigned short __x; };
struct __half2 { unsigned short __x, __y; };
struct __nv_bfloat16 { unsigned short __x; };
struct __nv_bfloat162 { unsigned short __x, __y; };
typedef struct __half half;
typedef struct __half2 half2;

/* ---------------------------------------------------------------- runtime types */
enum cudaError {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInitializationError = 3,
  cudaErrorCudartUnloading = 4,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidPitchValue = 12,
  cudaErrorInvalidSymbol = 13,
  cudaErrorInvalidDevicePointer = 17,
  cudaErrorInvalidMemcpyDirection = 21,
  cudaErrorInsufficientDriver = 35,
  cudaErrorNoDevice = 100,
  cudaErrorInvalidDevice = 101,
  cudaErrorInvalidKernelImage = 200,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorNotReady = 600,
  cudaErrorIllegalAddress = 700,
  cudaErrorLaunchOutOfResources = 701,
  cudaErrorLaunchTimeout = 702,
  cudaErrorLaunchFailure = 719,
  cudaErrorNotSupported = 801,
  cudaErrorUnknown = 999
};
typedef enum cudaError cudaError_t;

enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4
};

enum cudaMemoryAdvise {
  cudaMemAdviseSetReadMostly = 1,
  cudaMemAdviseUnsetReadMostly = 2,
  cudaMemAdviseSetPreferredLocation = 3,
  cudaMemAdviseUnsetPreferredLocation = 4,
  cudaMemAdviseSetAccessedBy = 5,
  cudaMemAdviseUnsetAccessedBy = 6
};

enum cudaFuncCache {
  cudaFuncCachePreferNone = 0,
  cudaFuncCachePreferShared = 1,
  cudaFuncCachePreferL1 = 2,
  cudaFuncCachePreferEqual = 3
};

enum cudaLimit {
  cudaLimitStackSize = 0,
  cudaLimitPrintfFifoSize = 1,
  cudaLimitMallocHeapSize = 2
};

enum cudaDeviceAttr {
  cudaDevAttrMaxThreadsPerBlock = 1,
  cudaDevAttrMultiProcessorCount = 16,
  cudaDevAttrComputeCapabilityMajor = 75,
  cudaDevAttrComputeCapabilityMinor = 76
};

typedef struct CUstream_st *cudaStream_t;
typedef struct CUevent_st *cudaEvent_t;
typedef struct CUgraph_st *cudaGraph_t;
typedef struct CUgraphExec_st *cudaGraphExec_t;
typedef struct CUmemPoolHandle_st *cudaMemPool_t;
typedef unsigned long long cudaTextureObject_t;
typedef unsigned long long cudaSurfaceObject_t;

#define cudaStreamDefault 0x00
#define cudaStreamNonBlocking 0x01
#define cudaStreamLegacy ((cudaStream_t)0x1)
#define cudaStreamPerThread ((cudaStream_t)0x2)
#define cudaEventDefault 0x00
#define cudaEventBlockingSync 0x01
#define cudaEventDisableTiming 0x02
#define cudaHostAllocDefault 0x00
#define cudaHostAllocPortable 0x01
#define cudaHostAllocMapped 0x02
#define cudaHostAllocWriteCombined 0x04
#define cudaHostRegisterDefault 0x00
#define cudaMemAttachGlobal 0x01
#define cudaMemAttachHost 0x02
#define cudaMemAttachSingle 0x04
#define cudaCpuDeviceId ((int)-1)
#define cudaInvalidDeviceId ((int)-2)

struct cudaPitchedPtr { void *ptr; size_t pitch; size_t xsize; size_t ysize; };
struct cudaExtent { size_t width; size_t height; size_t depth; };

struct cudaDeviceProp {
  char name[256];
  size_t totalGlobalMem;
  size_t sharedMemPerBlock;
  int regsPerBlock;
  int warpSize;
  size_t memPitch;
  int maxThreadsPerBlock;
  int maxThreadsDim[3];
  int maxGridSize[3];
  int clockRate;
  size_t totalConstMem;
  int major;
  int minor;
  size_t textureAlignment;
  int deviceOverlap;
  int multiProcessorCount;
  int kernelExecTimeoutEnabled;
  int integrated;
  int canMapHostMemory;
  int computeMode;
  int concurrentKernels;
  int ECCEnabled;
  int pciBusID;
  int pciDeviceID;
  int asyncEngineCount;
  int unifiedAddressing;
  int memoryClockRate;
  int memoryBusWidth;
  int l2CacheSize;
  int persistingL2CacheMaxSize;
  int maxThreadsPerMultiProcessor;
  size_t sharedMemPerMultiprocessor;
  int regsPerMultiprocessor;
  int managedMemory;
  int isMultiGpuBoard;
  int concurrentManagedAccess;
  size_t sharedMemPerBlockOptin;
  int maxBlocksPerMultiProcessor;
};
typedef struct cudaDeviceProp cudaDeviceProp;

struct cudaPointerAttributes { int type; int device; void *devicePointer; void *hostPointer; };
struct cudaFuncAttributes {
  size_t sharedSizeBytes; size_t constSizeBytes; size_t localSizeBytes;
  int maxThreadsPerBlock; int numRegs; int ptxVersion; int binaryVersion;
};

/* ---------------------------------------------------------------- runtime API */
GPULINT_EXTERN_C {
cudaError_t cudaMalloc(void **devPtr, size_t size);
cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags GPULINT_DEFAULT(cudaMemAttachGlobal));
cudaError_t cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height);
cudaError_t cudaMalloc3D(struct cudaPitchedPtr *pitchedDevPtr, struct cudaExtent extent);
cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream);
cudaError_t cudaMallocFromPoolAsync(void **ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream);
cudaError_t cudaMallocHost(void **ptr, size_t size);
cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags);
cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags);
cudaError_t cudaHostUnregister(void *ptr);
cudaError_t cudaHostGetDevicePointer(void **pDevice, void *pHost, unsigned int flags);
cudaError_t cudaFree(void *devPtr);
cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t hStream);
cudaError_t cudaFreeHost(void *ptr);
cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                            cudaStream_t stream GPULINT_DEFAULT(0));
cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                         size_t height, enum cudaMemcpyKind kind);
cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                              size_t height, enum cudaMemcpyKind kind, cudaStream_t stream GPULINT_DEFAULT(0));
cudaError_t cudaMemcpyPeer(void *dst, int dstDevice, const void *src, int srcDevice, size_t count);
cudaError_t cudaMemcpyPeerAsync(void *dst, int dstDevice, const void *src, int srcDevice, size_t count,
                                cudaStream_t stream GPULINT_DEFAULT(0));
cudaError_t cudaMemset(void *devPtr, int value, size_t count);
cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream GPULINT_DEFAULT(0));
cudaError_t cudaMemset2D(void *devPtr, size_t pitch, int value, size_t width, size_t height);
cudaError_t cudaMemPrefetchAsync(const void *devPtr, size_t count, int dstDevice,
                                 cudaStream_t stream GPULINT_DEFAULT(0));
cudaError_t cudaMemAdvise(const void *devPtr, size_t count, enum cudaMemoryAdvise advice, int device);
cudaError_t cudaMemGetInfo(size_t *free, size_t *total);
cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attributes, const void *ptr);

cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaDeviceReset(void);
cudaError_t cudaDeviceSetLimit(enum cudaLimit limit, size_t value);
cudaError_t cudaDeviceGetLimit(size_t *pValue, enum cudaLimit limit);
cudaError_t cudaDeviceSetCacheConfig(enum cudaFuncCache cacheConfig);
cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device);
cudaError_t cudaDeviceCanAccessPeer(int *canAccessPeer, int device, int peerDevice);
cudaError_t cudaDeviceEnablePeerAccess(int peerDevice, unsigned int flags);
cudaError_t cudaThreadSynchronize(void);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDevice(int *device);
cudaError_t cudaGetDeviceCount(int *count);
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device);
cudaError_t cudaDriverGetVersion(int *driverVersion);
cudaError_t cudaRuntimeGetVersion(int *runtimeVersion);

cudaError_t cudaGetLastError(void);
cudaError_t cudaPeekAtLastError(void);
const char *cudaGetErrorString(cudaError_t error);
const char *cudaGetErrorName(cudaError_t error);

cudaError_t cudaStreamCreate(cudaStream_t *pStream);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags);
cudaError_t cudaStreamCreateWithPriority(cudaStream_t *pStream, unsigned int flags, int priority);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaStreamQuery(cudaStream_t stream);
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags GPULINT_DEFAULT(0));
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamBeginCapture(cudaStream_t stream, int mode);
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *pGraph);

cudaError_t cudaEventCreate(cudaEvent_t *event);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream GPULINT_DEFAULT(0));
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventQuery(cudaEvent_t event);
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end);
cudaError_t cudaEventDestroy(cudaEvent_t event);

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph, unsigned long long flags GPULINT_DEFAULT(0));
cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream);
cudaError_t cudaGraphDestroy(cudaGraph_t graph);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec);

cudaError_t cudaMemcpyToSymbol(const void *symbol, const void *src, size_t count, size_t offset GPULINT_DEFAULT(0),
                               enum cudaMemcpyKind kind GPULINT_DEFAULT(cudaMemcpyHostToDevice));
cudaError_t cudaMemcpyFromSymbol(void *dst, const void *symbol, size_t count, size_t offset GPULINT_DEFAULT(0),
                                 enum cudaMemcpyKind kind GPULINT_DEFAULT(cudaMemcpyDeviceToHost));
cudaError_t cudaMemcpyToSymbolAsync(const void *symbol, const void *src, size_t count, size_t offset,
                                    enum cudaMemcpyKind kind, cudaStream_t stream GPULINT_DEFAULT(0));
cudaError_t cudaMemcpyFromSymbolAsync(void *dst, const void *symbol, size_t count, size_t offset,
                                      enum cudaMemcpyKind kind, cudaStream_t stream GPULINT_DEFAULT(0));
cudaError_t cudaGetSymbolAddress(void **devPtr, const void *symbol);
cudaError_t cudaGetSymbolSize(size_t *size, const void *symbol);

cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes *attr, const void *func);
cudaError_t cudaFuncSetCacheConfig(const void *func, enum cudaFuncCache cacheConfig);
cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                             size_t sharedMem, cudaStream_t stream);
cudaError_t cudaOccupancyMaxPotentialBlockSize(int *minGridSize, int *blockSize, const void *func,
                                               size_t dynamicSMemSize GPULINT_DEFAULT(0),
                                               int blockSizeLimit GPULINT_DEFAULT(0));

/* what clang lowers `k<<<g, b, s, st>>>(...)` to: both spellings (older and newer clang) */
cudaError_t cudaConfigureCall(dim3 gridDim, dim3 blockDim, size_t sharedMem GPULINT_DEFAULT(0),
                              cudaStream_t stream GPULINT_DEFAULT(0));
unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem GPULINT_DEFAULT(0),
                                     void *stream GPULINT_DEFAULT(0));
cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem, void *stream);
}

#ifdef __cplusplus
/* the C++ conveniences of cuda_runtime.h */
template <class T> static __inline__ cudaError_t cudaMalloc(T **devPtr, size_t size) {
  return ::cudaMalloc((void **)(void *)devPtr, size);
}
template <class T> static __inline__ cudaError_t cudaMallocManaged(T **devPtr, size_t size,
                                                                   unsigned int flags = cudaMemAttachGlobal) {
  return ::cudaMallocManaged((void **)(void *)devPtr, size, flags);
}
template <class T> static __inline__ cudaError_t cudaMallocPitch(T **devPtr, size_t *pitch, size_t width,
                                                                 size_t height) {
  return ::cudaMallocPitch((void **)(void *)devPtr, pitch, width, height);
}
template <class T> static __inline__ cudaError_t cudaMallocAsync(T **devPtr, size_t size, cudaStream_t stream) {
  return ::cudaMallocAsync((void **)(void *)devPtr, size, stream);
}
template <class T> static __inline__ cudaError_t cudaMallocHost(T **ptr, size_t size, unsigned int flags = 0) {
  return ::cudaHostAlloc((void **)(void *)ptr, size, flags);
}
template <class T> static __inline__ cudaError_t cudaHostAlloc(T **ptr, size_t size, unsigned int flags) {
  return ::cudaHostAlloc((void **)(void *)ptr, size, flags);
}
template <class T> static __inline__ cudaError_t cudaHostGetDevicePointer(T **pDevice, void *pHost,
                                                                          unsigned int flags) {
  return ::cudaHostGetDevicePointer((void **)(void *)pDevice, pHost, flags);
}
template <class T> static __inline__ cudaError_t cudaMemcpyToSymbol(const T &symbol, const void *src, size_t count,
                                                                    size_t offset = 0,
                                                                    enum cudaMemcpyKind kind = cudaMemcpyHostToDevice) {
  return ::cudaMemcpyToSymbol((const void *)&symbol, src, count, offset, kind);
}
template <class T> static __inline__ cudaError_t cudaMemcpyFromSymbol(void *dst, const T &symbol, size_t count,
                                                                      size_t offset = 0,
                                                                      enum cudaMemcpyKind kind = cudaMemcpyDeviceToHost) {
  return ::cudaMemcpyFromSymbol(dst, (const void *)&symbol, count, offset, kind);
}
template <class T> static __inline__ cudaError_t cudaGetSymbolAddress(void **devPtr, const T &symbol) {
  return ::cudaGetSymbolAddress(devPtr, (const void *)&symbol);
}
template <class T> static __inline__ cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes *attr, T *entry) {
  return ::cudaFuncGetAttributes(attr, (const void *)entry);
}
template <class T> static __inline__ cudaError_t cudaFuncSetCacheConfig(T *func, enum cudaFuncCache cacheConfig) {
  return ::cudaFuncSetCacheConfig((const void *)func, cacheConfig);
}
template <class T> static __inline__ cudaError_t cudaOccupancyMaxPotentialBlockSize(
    int *minGridSize, int *blockSize, T func, size_t dynamicSMemSize = 0, int blockSizeLimit = 0) {
  return ::cudaOccupancyMaxPotentialBlockSize(minGridSize, blockSize, (const void *)func, dynamicSMemSize,
                                              blockSizeLimit);
}
template <class T> static __inline__ cudaError_t cudaLaunchKernel(T *func, dim3 gridDim, dim3 blockDim, void **args,
                                                                  size_t sharedMem = 0, cudaStream_t stream = 0) {
  return ::cudaLaunchKernel((const void *)func, gridDim, blockDim, args, sharedMem, stream);
}
#endif

/* ---------------------------------------------------------------- driver API */
typedef enum cudaError_enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_CONTEXT = 201,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_UNKNOWN = 999
} CUresult;
typedef unsigned long long CUdeviceptr_v2;
typedef CUdeviceptr_v2 CUdeviceptr;
typedef int CUdevice_v1;
typedef CUdevice_v1 CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;

GPULINT_EXTERN_C {
CUresult cuInit(unsigned int Flags);
CUresult cuDeviceGet(CUdevice *device, int ordinal);
CUresult cuDeviceGetCount(int *count);
CUresult cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev);
CUresult cuCtxDestroy(CUcontext ctx);
CUresult cuCtxSynchronize(void);
CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev);
CUresult cuModuleLoad(CUmodule *module, const char *fname);
CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name);
CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                        unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                        unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra);
CUresult cuMemAlloc(CUdeviceptr *dptr, size_t bytesize);
CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize);
CUresult cuMemAllocPitch(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
                         unsigned int ElementSizeBytes);
CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags);
CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream);
CUresult cuMemAllocHost(void **pp, size_t bytesize);
CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags);
CUresult cuMemFree(CUdeviceptr dptr);
CUresult cuMemFree_v2(CUdeviceptr dptr);
CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream);
CUresult cuMemFreeHost(void *p);
CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount);
CUresult cuMemcpyHtoD(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount);
CUresult cuMemcpyDtoH(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount);
CUresult cuMemcpyDtoD(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount);
CUresult cuMemcpyHtoDAsync(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream);
CUresult cuMemcpyDtoHAsync(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream);
CUresult cuMemsetD8(CUdeviceptr dstDevice, unsigned char uc, size_t N);
CUresult cuMemsetD16(CUdeviceptr dstDevice, unsigned short us, size_t N);
CUresult cuMemsetD32(CUdeviceptr dstDevice, unsigned int ui, size_t N);
CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream);
CUresult cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream);
CUresult cuMemGetInfo(size_t *free, size_t *total);
CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags);
CUresult cuStreamSynchronize(CUstream hStream);
CUresult cuStreamDestroy(CUstream hStream);
CUresult cuGetErrorString(CUresult error, const char **pStr);
CUresult cuGetErrorName(CUresult error, const char **pStr);
}

/* ---------------------------------------------------------------- device functions */
#ifdef __cplusplus
#define GPULINT_DEV __device__
#else
#define GPULINT_DEV
#endif

GPULINT_DEV void __syncthreads(void);
GPULINT_DEV int __syncthreads_count(int predicate);
GPULINT_DEV int __syncthreads_and(int predicate);
GPULINT_DEV int __syncthreads_or(int predicate);
GPULINT_DEV void __syncwarp(unsigned int mask GPULINT_DEFAULT(0xffffffffu));
GPULINT_DEV void __threadfence(void);
GPULINT_DEV void __threadfence_block(void);
GPULINT_DEV void __threadfence_system(void);
GPULINT_DEV unsigned int __activemask(void);
GPULINT_DEV unsigned int __ballot_sync(unsigned int mask, int predicate);
GPULINT_DEV int __all_sync(unsigned int mask, int predicate);
GPULINT_DEV int __any_sync(unsigned int mask, int predicate);
GPULINT_DEV int __popc(unsigned int x);
GPULINT_DEV int __popcll(unsigned long long x);
GPULINT_DEV int __clz(int x);
GPULINT_DEV int __ffs(int x);
GPULINT_DEV long long clock64(void);

#ifdef __cplusplus
#define GPULINT_SHFL(T)                                                                   \
  __device__ T __shfl_sync(unsigned int mask, T var, int srcLane, int width = 32);       \
  __device__ T __shfl_up_sync(unsigned int mask, T var, unsigned int delta, int width = 32); \
  __device__ T __shfl_down_sync(unsigned int mask, T var, unsigned int delta, int width = 32); \
  __device__ T __shfl_xor_sync(unsigned int mask, T var, int laneMask, int width = 32);  \
  __device__ T __shfl(T var, int srcLane, int width = 32);                               \
  __device__ T __shfl_down(T var, unsigned int delta, int width = 32);                   \
  __device__ T __shfl_xor(T var, int laneMask, int width = 32);                          \
  __device__ T __ldg(const T *ptr);
GPULINT_SHFL(int)
GPULINT_SHFL(unsigned int)
GPULINT_SHFL(long)
GPULINT_SHFL(unsigned long)
GPULINT_SHFL(long long)
GPULINT_SHFL(unsigned long long)
GPULINT_SHFL(float)
GPULINT_SHFL(double)
#undef GPULINT_SHFL

#define GPULINT_ATOMIC(T)                                                                 \
  __device__ T atomicAdd(T *address, T val);                                             \
  __device__ T atomicSub(T *address, T val);                                             \
  __device__ T atomicExch(T *address, T val);                                            \
  __device__ T atomicMin(T *address, T val);                                             \
  __device__ T atomicMax(T *address, T val);                                             \
  __device__ T atomicAnd(T *address, T val);                                             \
  __device__ T atomicOr(T *address, T val);                                              \
  __device__ T atomicXor(T *address, T val);                                             \
  __device__ T atomicCAS(T *address, T compare, T val);                                  \
  __device__ T atomicAdd_block(T *address, T val);                                       \
  __device__ T atomicAdd_system(T *address, T val);
GPULINT_ATOMIC(int)
GPULINT_ATOMIC(unsigned int)
GPULINT_ATOMIC(unsigned long long)
GPULINT_ATOMIC(long long)
#undef GPULINT_ATOMIC
__device__ float atomicAdd(float *address, float val);
__device__ double atomicAdd(double *address, double val);
__device__ float atomicExch(float *address, float val);
__device__ float atomicMax(float *address, float val);
__device__ float atomicMin(float *address, float val);
__device__ unsigned int atomicInc(unsigned int *address, unsigned int val);
__device__ unsigned int atomicDec(unsigned int *address, unsigned int val);

/* min/max as in CUDA's math_functions.hpp: usable from host and device code */
#define GPULINT_MINMAX(T)                                                                 \
  static __inline__ __host__ __device__ T min(T a, T b) { return a < b ? a : b; }        \
  static __inline__ __host__ __device__ T max(T a, T b) { return a > b ? a : b; }
GPULINT_MINMAX(int)
GPULINT_MINMAX(unsigned int)
GPULINT_MINMAX(long)
GPULINT_MINMAX(unsigned long)
GPULINT_MINMAX(long long)
GPULINT_MINMAX(unsigned long long)
GPULINT_MINMAX(float)
GPULINT_MINMAX(double)
#undef GPULINT_MINMAX
#endif

/* single- and double-precision math and intrinsics, device side (clang overloads __device__ against
 * the host declarations of <math.h>, as CUDA's own headers do) */
#define GPULINT_MATH1(fn) GPULINT_DEV float fn##f(float x); GPULINT_DEV double fn(double x);
#define GPULINT_MATH2(fn) GPULINT_DEV float fn##f(float x, float y); GPULINT_DEV double fn(double x, double y);
GPULINT_MATH1(sqrt) GPULINT_MATH1(rsqrt) GPULINT_MATH1(cbrt) GPULINT_MATH1(exp) GPULINT_MATH1(exp2)
GPULINT_MATH1(exp10) GPULINT_MATH1(expm1) GPULINT_MATH1(log) GPULINT_MATH1(log2) GPULINT_MATH1(log10)
GPULINT_MATH1(log1p) GPULINT_MATH1(sin) GPULINT_MATH1(cos) GPULINT_MATH1(tan) GPULINT_MATH1(asin)
GPULINT_MATH1(acos) GPULINT_MATH1(atan) GPULINT_MATH1(sinh) GPULINT_MATH1(cosh) GPULINT_MATH1(tanh)
GPULINT_MATH1(erf) GPULINT_MATH1(erfc) GPULINT_MATH1(fabs) GPULINT_MATH1(floor) GPULINT_MATH1(ceil)
GPULINT_MATH1(round) GPULINT_MATH1(trunc) GPULINT_MATH1(rint)
GPULINT_MATH2(pow) GPULINT_MATH2(fmin) GPULINT_MATH2(fmax) GPULINT_MATH2(fmod) GPULINT_MATH2(atan2)
GPULINT_MATH2(hypot) GPULINT_MATH2(copysign)
GPULINT_MATH1(rcbrt) GPULINT_MATH1(erfinv) GPULINT_MATH1(erfcinv) GPULINT_MATH1(normcdf) GPULINT_MATH1(normcdfinv)
GPULINT_MATH1(sinpi) GPULINT_MATH1(cospi) GPULINT_MATH1(lgamma) GPULINT_MATH1(tgamma) GPULINT_MATH1(nearbyint)
GPULINT_MATH2(fdim) GPULINT_MATH2(remainder) GPULINT_MATH2(nextafter)
GPULINT_DEV float fmaf(float x, float y, float z);
GPULINT_DEV double fma(double x, double y, double z);
GPULINT_DEV float frexpf(float x, int *e);
GPULINT_DEV float ldexpf(float x, int e);
GPULINT_DEV float modff(float x, float *i);
GPULINT_DEV void sincosf(float x, float *s, float *c);
GPULINT_DEV void sincos(double x, double *s, double *c);
GPULINT_DEV void sincospif(float x, float *s, float *c);
GPULINT_DEV int abs(int x);
GPULINT_DEV long labs(long x);
GPULINT_DEV long long llabs(long long x);
GPULINT_DEV float fabs(float x);
#undef GPULINT_MATH1
#undef GPULINT_MATH2
GPULINT_DEV float __expf(float x);
GPULINT_DEV float __logf(float x);
GPULINT_DEV float __sinf(float x);
GPULINT_DEV float __cosf(float x);
GPULINT_DEV float __powf(float x, float y);
GPULINT_DEV float __fdividef(float x, float y);
GPULINT_DEV float __saturatef(float x);
GPULINT_DEV float __fmaf_rn(float x, float y, float z);
GPULINT_DEV float __fmul_rn(float x, float y);
GPULINT_DEV float __fadd_rn(float x, float y);
GPULINT_DEV float __int_as_float(int x);
GPULINT_DEV int __float_as_int(float x);
GPULINT_DEV float __uint_as_float(unsigned int x);
GPULINT_DEV unsigned int __float_as_uint(float x);
GPULINT_DEV int __float2int_rn(float x);
GPULINT_DEV float __int2float_rn(int x);
GPULINT_DEV unsigned int __umulhi(unsigned int x, unsigned int y);
GPULINT_DEV int __mul24(int x, int y);
GPULINT_DEV float __half2float(struct __half h);
GPULINT_DEV struct __half __float2half(float f);

/* vector constructors */
#define GPULINT_MAKE(N, T)                                                                \
  static __inline__ __host__ __device__ N##2 make_##N##2(T x, T y) { N##2 t; t.x = x; t.y = y; return t; } \
  static __inline__ __host__ __device__ N##3 make_##N##3(T x, T y, T z) { N##3 t; t.x = x; t.y = y; t.z = z; return t; } \
  static __inline__ __host__ __device__ N##4 make_##N##4(T x, T y, T z, T w) { N##4 t; t.x = x; t.y = y; t.z = z; t.w = w; return t; }
GPULINT_MAKE(int, int)
GPULINT_MAKE(uint, unsigned int)
GPULINT_MAKE(float, float)
GPULINT_MAKE(double, double)
#undef GPULINT_MAKE

#undef GPULINT_DEV
#endif /* GPULINT_CUDA_STUB_H */
