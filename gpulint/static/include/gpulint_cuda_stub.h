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
  cudaErrorAssert = 710,
  cudaErrorPeerAccessAlreadyEnabled = 704,
  cudaErrorPeerAccessNotEnabled = 705,
  cudaErrorLaunchFailure = 719,
  cudaErrorCooperativeLaunchTooLarge = 720,
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
  cudaDevAttrMaxBlockDimX = 2,
  cudaDevAttrMaxBlockDimY = 3,
  cudaDevAttrMaxBlockDimZ = 4,
  cudaDevAttrMaxGridDimX = 5,
  cudaDevAttrMaxGridDimY = 6,
  cudaDevAttrMaxGridDimZ = 7,
  cudaDevAttrMaxSharedMemoryPerBlock = 8,
  cudaDevAttrTotalConstantMemory = 9,
  cudaDevAttrWarpSize = 10,
  cudaDevAttrMaxPitch = 11,
  cudaDevAttrMaxRegistersPerBlock = 12,
  cudaDevAttrClockRate = 13,
  cudaDevAttrTextureAlignment = 14,
  cudaDevAttrGpuOverlap = 15,
  cudaDevAttrMultiProcessorCount = 16,
  cudaDevAttrKernelExecTimeout = 17,
  cudaDevAttrIntegrated = 18,
  cudaDevAttrCanMapHostMemory = 19,
  cudaDevAttrComputeMode = 20,
  cudaDevAttrConcurrentKernels = 31,
  cudaDevAttrEccEnabled = 32,
  cudaDevAttrPciBusId = 33,
  cudaDevAttrPciDeviceId = 34,
  cudaDevAttrTccDriver = 35,
  cudaDevAttrMemoryClockRate = 36,
  cudaDevAttrGlobalMemoryBusWidth = 37,
  cudaDevAttrL2CacheSize = 38,
  cudaDevAttrMaxThreadsPerMultiProcessor = 39,
  cudaDevAttrAsyncEngineCount = 40,
  cudaDevAttrUnifiedAddressing = 41,
  cudaDevAttrComputeCapabilityMajor = 75,
  cudaDevAttrComputeCapabilityMinor = 76,
  cudaDevAttrStreamPrioritiesSupported = 78,
  cudaDevAttrGlobalL1CacheSupported = 79,
  cudaDevAttrLocalL1CacheSupported = 80,
  cudaDevAttrMaxSharedMemoryPerMultiprocessor = 81,
  cudaDevAttrMaxRegistersPerMultiprocessor = 82,
  cudaDevAttrManagedMemory = 83,
  cudaDevAttrIsMultiGpuBoard = 84,
  cudaDevAttrHostNativeAtomicSupported = 86,
  cudaDevAttrPageableMemoryAccess = 88,
  cudaDevAttrConcurrentManagedAccess = 89,
  cudaDevAttrComputePreemptionSupported = 90,
  cudaDevAttrCooperativeLaunch = 95,
  cudaDevAttrCooperativeMultiDeviceLaunch = 96,
  cudaDevAttrMaxSharedMemoryPerBlockOptin = 97,
  cudaDevAttrDirectManagedMemAccessFromHost = 101,
  cudaDevAttrMaxBlocksPerMultiprocessor = 106,
  cudaDevAttrMaxPersistingL2CacheSize = 108,
  cudaDevAttrMemoryPoolsSupported = 115
};

enum cudaComputeMode {
  cudaComputeModeDefault = 0,
  cudaComputeModeExclusive = 1,
  cudaComputeModeProhibited = 2,
  cudaComputeModeExclusiveProcess = 3
};

enum cudaFuncAttribute {
  cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
  cudaFuncAttributePreferredSharedMemoryCarveout = 9
};

enum cudaStreamCaptureMode {
  cudaStreamCaptureModeGlobal = 0,
  cudaStreamCaptureModeThreadLocal = 1,
  cudaStreamCaptureModeRelaxed = 2
};

enum cudaSharedMemConfig {
  cudaSharedMemBankSizeDefault = 0,
  cudaSharedMemBankSizeFourByte = 1,
  cudaSharedMemBankSizeEightByte = 2
};

/* textures, surfaces and arrays */
enum cudaChannelFormatKind {
  cudaChannelFormatKindSigned = 0,
  cudaChannelFormatKindUnsigned = 1,
  cudaChannelFormatKindFloat = 2,
  cudaChannelFormatKindNone = 3
};
struct cudaChannelFormatDesc { int x, y, z, w; enum cudaChannelFormatKind f; };
typedef struct cudaArray *cudaArray_t;
typedef const struct cudaArray *cudaArray_const_t;
typedef struct cudaMipmappedArray *cudaMipmappedArray_t;
typedef const struct cudaMipmappedArray *cudaMipmappedArray_const_t;
enum cudaResourceType {
  cudaResourceTypeArray = 0,
  cudaResourceTypeMipmappedArray = 1,
  cudaResourceTypeLinear = 2,
  cudaResourceTypePitch2D = 3
};
enum cudaTextureAddressMode {
  cudaAddressModeWrap = 0,
  cudaAddressModeClamp = 1,
  cudaAddressModeMirror = 2,
  cudaAddressModeBorder = 3
};
enum cudaTextureFilterMode { cudaFilterModePoint = 0, cudaFilterModeLinear = 1 };
enum cudaTextureReadMode { cudaReadModeElementType = 0, cudaReadModeNormalizedFloat = 1 };
enum cudaSurfaceBoundaryMode { cudaBoundaryModeZero = 0, cudaBoundaryModeClamp = 1, cudaBoundaryModeTrap = 2 };
struct cudaResourceDesc {
  enum cudaResourceType resType;
  union {
    struct { cudaArray_t array; } array;
    struct { cudaMipmappedArray_t mipmap; } mipmap;
    struct { void *devPtr; struct cudaChannelFormatDesc desc; size_t sizeInBytes; } linear;
    struct { void *devPtr; struct cudaChannelFormatDesc desc; size_t width; size_t height; size_t pitchInBytes; } pitch2D;
  } res;
};
struct cudaTextureDesc {
  enum cudaTextureAddressMode addressMode[3];
  enum cudaTextureFilterMode filterMode;
  enum cudaTextureReadMode readMode;
  int sRGB;
  float borderColor[4];
  int normalizedCoords;
  unsigned int maxAnisotropy;
  enum cudaTextureFilterMode mipmapFilterMode;
  float mipmapLevelBias;
  float minMipmapLevelClamp;
  float maxMipmapLevelClamp;
};
struct cudaResourceViewDesc { int format; size_t width, height, depth; unsigned firstMipmapLevel, lastMipmapLevel; };
struct cudaPos { size_t x; size_t y; size_t z; };

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
#define cudaHostRegisterPortable 0x01
#define cudaHostRegisterMapped 0x02
#define cudaDeviceScheduleAuto 0x00
#define cudaDeviceScheduleSpin 0x01
#define cudaDeviceScheduleYield 0x02
#define cudaDeviceScheduleBlockingSync 0x04
#define cudaDeviceBlockingSync 0x04
#define cudaDeviceMapHost 0x08
#define cudaDeviceLmemResizeToMax 0x10
#define cudaArrayDefault 0x00
#define cudaArrayLayered 0x01
#define cudaArraySurfaceLoadStore 0x02
#define cudaArrayCubemap 0x04
#define cudaCpuDeviceId ((int)-1)
#define cudaInvalidDeviceId ((int)-2)

struct cudaPitchedPtr { void *ptr; size_t pitch; size_t xsize; size_t ysize; };
struct cudaExtent { size_t width; size_t height; size_t depth; };
struct cudaMemcpy3DParms {
  cudaArray_t srcArray; struct cudaPos srcPos; struct cudaPitchedPtr srcPtr;
  cudaArray_t dstArray; struct cudaPos dstPos; struct cudaPitchedPtr dstPtr;
  struct cudaExtent extent; enum cudaMemcpyKind kind;
};
static __inline__ struct cudaPitchedPtr make_cudaPitchedPtr(void *d, size_t p, size_t xsz, size_t ysz) {
  struct cudaPitchedPtr s; s.ptr = d; s.pitch = p; s.xsize = xsz; s.ysize = ysz; return s;
}
static __inline__ struct cudaPos make_cudaPos(size_t x, size_t y, size_t z) {
  struct cudaPos p; p.x = x; p.y = y; p.z = z; return p;
}
static __inline__ struct cudaExtent make_cudaExtent(size_t w, size_t h, size_t d) {
  struct cudaExtent e; e.width = w; e.height = h; e.depth = d; return e;
}

/* stream-ordered allocator pools */
enum cudaMemPoolAttr {
  cudaMemPoolReuseFollowEventDependencies = 1,
  cudaMemPoolReuseAllowOpportunistic = 2,
  cudaMemPoolReuseAllowInternalDependencies = 3,
  cudaMemPoolAttrReleaseThreshold = 4,
  cudaMemPoolAttrReservedMemCurrent = 5,
  cudaMemPoolAttrReservedMemHigh = 6,
  cudaMemPoolAttrUsedMemCurrent = 7,
  cudaMemPoolAttrUsedMemHigh = 8
};
enum cudaMemLocationType { cudaMemLocationTypeInvalid = 0, cudaMemLocationTypeDevice = 1 };
enum cudaMemAllocationType { cudaMemAllocationTypeInvalid = 0, cudaMemAllocationTypePinned = 1 };
enum cudaMemAllocationHandleType {
  cudaMemHandleTypeNone = 0,
  cudaMemHandleTypePosixFileDescriptor = 1,
  cudaMemHandleTypeWin32 = 2,
  cudaMemHandleTypeWin32Kmt = 4
};
enum cudaMemAccessFlags { cudaMemAccessFlagsProtNone = 0, cudaMemAccessFlagsProtRead = 1, cudaMemAccessFlagsProtReadWrite = 3 };
struct cudaMemLocation { enum cudaMemLocationType type; int id; };
struct cudaMemAccessDesc { struct cudaMemLocation location; enum cudaMemAccessFlags flags; };
struct cudaMemPoolProps {
  enum cudaMemAllocationType allocType;
  enum cudaMemAllocationHandleType handleTypes;
  struct cudaMemLocation location;
  void *win32SecurityAttributes;
  size_t maxSize;
  unsigned char reserved[56];
};

/* graphs */
typedef struct CUgraphNode_st *cudaGraphNode_t;
struct cudaKernelNodeParams {
  void *func; dim3 gridDim; dim3 blockDim; unsigned int sharedMemBytes; void **kernelParams; void **extra;
};
struct cudaMemsetParams {
  void *dst; size_t pitch; unsigned int value; unsigned int elementSize; size_t width; size_t height;
};
struct cudaHostNodeParams { void (*fn)(void *); void *userData; };
typedef void (*cudaHostFn_t)(void *userData);
typedef void (*cudaStreamCallback_t)(cudaStream_t stream, cudaError_t status, void *userData);

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
  int cooperativeLaunch;
  int cooperativeMultiDeviceLaunch;
  int pciDomainID;
  int tccDriver;
  int streamPrioritiesSupported;
  int globalL1CacheSupported;
  int localL1CacheSupported;
  int pageableMemoryAccess;
  int hostNativeAtomicSupported;
  int computePreemptionSupported;
  int directManagedMemAccessFromHost;
  int accessPolicyMaxWindowSize;
  int memoryPoolsSupported;
  int maxTexture1D;
  int maxTexture2D[2];
  int maxTexture3D[3];
  size_t reservedSharedMemPerBlock;
  struct { char bytes[16]; } uuid;
  char luid[8];
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
cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *pGraph);

cudaError_t cudaEventCreate(cudaEvent_t *event);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream GPULINT_DEFAULT(0));
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventQuery(cudaEvent_t event);
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end);
cudaError_t cudaEventDestroy(cudaEvent_t event);

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph, unsigned long long flags GPULINT_DEFAULT(0));
cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *pGraphExec, cudaGraph_t graph, unsigned long long flags GPULINT_DEFAULT(0));
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

cudaError_t cudaSetDeviceFlags(unsigned int flags);
cudaError_t cudaGetDeviceFlags(unsigned int *flags);
cudaError_t cudaChooseDevice(int *device, const struct cudaDeviceProp *prop);
cudaError_t cudaDeviceGetByPCIBusId(int *device, const char *pciBusId);
cudaError_t cudaDeviceDisablePeerAccess(int peerDevice);
cudaError_t cudaDeviceSetSharedMemConfig(enum cudaSharedMemConfig config);
cudaError_t cudaDeviceGetStreamPriorityRange(int *leastPriority, int *greatestPriority);
cudaError_t cudaThreadExit(void);
cudaError_t cudaProfilerStart(void);
cudaError_t cudaProfilerStop(void);
cudaError_t cudaStreamAttachMemAsync(cudaStream_t stream, void *devPtr, size_t length GPULINT_DEFAULT(0),
                                     unsigned int flags GPULINT_DEFAULT(cudaMemAttachSingle));
cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback, void *userData, unsigned int flags);
cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData);
cudaError_t cudaStreamGetPriority(cudaStream_t hStream, int *priority);
cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream GPULINT_DEFAULT(0), unsigned int flags GPULINT_DEFAULT(0));

cudaError_t cudaMallocArray(cudaArray_t *array, const struct cudaChannelFormatDesc *desc, size_t width,
                            size_t height GPULINT_DEFAULT(0), unsigned int flags GPULINT_DEFAULT(0));
cudaError_t cudaMalloc3DArray(cudaArray_t *array, const struct cudaChannelFormatDesc *desc, struct cudaExtent extent,
                              unsigned int flags GPULINT_DEFAULT(0));
cudaError_t cudaMallocMipmappedArray(cudaMipmappedArray_t *mipmappedArray, const struct cudaChannelFormatDesc *desc,
                                     struct cudaExtent extent, unsigned int numLevels, unsigned int flags GPULINT_DEFAULT(0));
cudaError_t cudaGetMipmappedArrayLevel(cudaArray_t *levelArray, cudaMipmappedArray_const_t mipmappedArray, unsigned int level);
cudaError_t cudaFreeArray(cudaArray_t array);
cudaError_t cudaFreeMipmappedArray(cudaMipmappedArray_t mipmappedArray);
cudaError_t cudaMemcpyToArray(cudaArray_t dst, size_t wOffset, size_t hOffset, const void *src, size_t count,
                              enum cudaMemcpyKind kind);
cudaError_t cudaMemcpyFromArray(void *dst, cudaArray_const_t src, size_t wOffset, size_t hOffset, size_t count,
                                enum cudaMemcpyKind kind);
cudaError_t cudaMemcpy2DToArray(cudaArray_t dst, size_t wOffset, size_t hOffset, const void *src, size_t spitch,
                                size_t width, size_t height, enum cudaMemcpyKind kind);
cudaError_t cudaMemcpy2DFromArray(void *dst, size_t dpitch, cudaArray_const_t src, size_t wOffset, size_t hOffset,
                                  size_t width, size_t height, enum cudaMemcpyKind kind);
cudaError_t cudaMemcpy3D(const struct cudaMemcpy3DParms *p);
cudaError_t cudaMemcpy3DAsync(const struct cudaMemcpy3DParms *p, cudaStream_t stream GPULINT_DEFAULT(0));
cudaError_t cudaMemset3D(struct cudaPitchedPtr pitchedDevPtr, int value, struct cudaExtent extent);
cudaError_t cudaCreateTextureObject(cudaTextureObject_t *pTexObject, const struct cudaResourceDesc *pResDesc,
                                    const struct cudaTextureDesc *pTexDesc, const struct cudaResourceViewDesc *pResViewDesc);
cudaError_t cudaDestroyTextureObject(cudaTextureObject_t texObject);
cudaError_t cudaCreateSurfaceObject(cudaSurfaceObject_t *pSurfObject, const struct cudaResourceDesc *pResDesc);
cudaError_t cudaDestroySurfaceObject(cudaSurfaceObject_t surfObject);
struct cudaChannelFormatDesc cudaCreateChannelDesc(int x, int y, int z, int w, enum cudaChannelFormatKind f);

cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *memPool, int device);
cudaError_t cudaDeviceGetMemPool(cudaMemPool_t *memPool, int device);
cudaError_t cudaDeviceSetMemPool(int device, cudaMemPool_t memPool);
cudaError_t cudaMemPoolCreate(cudaMemPool_t *memPool, const struct cudaMemPoolProps *poolProps);
cudaError_t cudaMemPoolDestroy(cudaMemPool_t memPool);
cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr, void *value);
cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr, void *value);
cudaError_t cudaMemPoolSetAccess(cudaMemPool_t memPool, const struct cudaMemAccessDesc *descList, size_t count);
cudaError_t cudaMemPoolTrimTo(cudaMemPool_t memPool, size_t minBytesToKeep);

cudaError_t cudaGraphCreate(cudaGraph_t *pGraph, unsigned int flags);
cudaError_t cudaGraphAddKernelNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph, const cudaGraphNode_t *pDependencies,
                                   size_t numDependencies, const struct cudaKernelNodeParams *pNodeParams);
cudaError_t cudaGraphAddMemcpyNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph, const cudaGraphNode_t *pDependencies,
                                   size_t numDependencies, const struct cudaMemcpy3DParms *pCopyParams);
cudaError_t cudaGraphAddMemsetNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph, const cudaGraphNode_t *pDependencies,
                                   size_t numDependencies, const struct cudaMemsetParams *pMemsetParams);
cudaError_t cudaGraphAddHostNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph, const cudaGraphNode_t *pDependencies,
                                 size_t numDependencies, const struct cudaHostNodeParams *pNodeParams);
cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t *nodes, size_t *numNodes);
cudaError_t cudaGraphClone(cudaGraph_t *pGraphClone, cudaGraph_t originalGraph);
cudaError_t cudaStreamIsCapturing(cudaStream_t stream, int *pCaptureStatus);

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, const void *func, int blockSize,
                                                          size_t dynamicSMemSize);
cudaError_t cudaFuncSetAttribute(const void *func, enum cudaFuncAttribute attr, int value);
cudaError_t cudaFuncSetSharedMemConfig(const void *func, enum cudaSharedMemConfig config);
cudaError_t cudaLaunchCooperativeKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                                        size_t sharedMem, cudaStream_t stream);

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
template <class T> static __inline__ cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(
    int *numBlocks, T func, int blockSize, size_t dynamicSMemSize) {
  return ::cudaOccupancyMaxActiveBlocksPerMultiprocessor(numBlocks, (const void *)func, blockSize, dynamicSMemSize);
}
template <class T> static __inline__ cudaError_t cudaFuncSetAttribute(T *entry, enum cudaFuncAttribute attr, int value) {
  return ::cudaFuncSetAttribute((const void *)entry, attr, value);
}
template <class T> static __inline__ cudaError_t cudaLaunchCooperativeKernel(T *func, dim3 gridDim, dim3 blockDim,
                                                                             void **args, size_t sharedMem = 0,
                                                                             cudaStream_t stream = 0) {
  return ::cudaLaunchCooperativeKernel((const void *)func, gridDim, blockDim, args, sharedMem, stream);
}
template <class T> static __inline__ cudaError_t cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                                                                      cudaGraphNode_t *pErrorNode, char *pLogBuffer,
                                                                      T bufferSize) {
  return ::cudaGraphInstantiate(pGraphExec, graph, 0);
}
template <class T> static __inline__ cudaError_t cudaStreamAttachMemAsync(cudaStream_t stream, T *devPtr,
                                                                          size_t length = 0,
                                                                          unsigned int flags = cudaMemAttachSingle) {
  return ::cudaStreamAttachMemAsync(stream, (void *)devPtr, length, flags);
}
template <class T> static __inline__ struct cudaChannelFormatDesc cudaCreateChannelDesc(void) {
  return ::cudaCreateChannelDesc(8 * (int)sizeof(T), 0, 0, 0, cudaChannelFormatKindFloat);
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

#ifdef __cplusplus
/* device-side versions of the C library functions CUDA code calls in kernels */
__device__ int printf(const char *format, ...);
__device__ long clock(void);
__device__ void *malloc(size_t size);
__device__ void free(void *ptr);
__device__ void *memcpy(void *dst, const void *src, size_t n);
__device__ void *memset(void *dst, int value, size_t n);
__device__ void __assert_fail(const char *assertion, const char *file, unsigned int line, const char *function);
__device__ void __assertfail(const char *message, const char *file, unsigned int line, const char *function,
                             size_t charSize);
__device__ void __trap(void);
__device__ void __brkpt(void);
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
/* the mixed-type overloads of CUDA's math_functions.hpp */
#define GPULINT_MINMAX2(R, A, B)                                                          \
  static __inline__ __host__ __device__ R min(A a, B b) { return (R)a < (R)b ? (R)a : (R)b; } \
  static __inline__ __host__ __device__ R max(A a, B b) { return (R)a > (R)b ? (R)a : (R)b; }
GPULINT_MINMAX2(unsigned int, int, unsigned int)
GPULINT_MINMAX2(unsigned int, unsigned int, int)
GPULINT_MINMAX2(unsigned long long, long long, unsigned long long)
GPULINT_MINMAX2(unsigned long long, unsigned long long, long long)
GPULINT_MINMAX2(float, float, double)
GPULINT_MINMAX2(double, double, float)
GPULINT_MINMAX2(double, double, int)
GPULINT_MINMAX2(float, float, int)
#undef GPULINT_MINMAX2
__device__ unsigned int umin(unsigned int a, unsigned int b);
__device__ unsigned int umax(unsigned int a, unsigned int b);
__device__ long long llmin(long long a, long long b);
__device__ long long llmax(long long a, long long b);
__device__ unsigned long long ullmin(unsigned long long a, unsigned long long b);
__device__ unsigned long long ullmax(unsigned long long a, unsigned long long b);
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
GPULINT_DEV double frexp(double x, int *e);
GPULINT_DEV double ldexp(double x, int e);
GPULINT_DEV double modf(double x, double *i);
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
GPULINT_DEV int __mulhi(int x, int y);
GPULINT_DEV int __mul24(int x, int y);
GPULINT_DEV unsigned int __umul24(unsigned int x, unsigned int y);
GPULINT_DEV unsigned int __usad(unsigned int x, unsigned int y, unsigned int z);
GPULINT_DEV unsigned int __brev(unsigned int x);
GPULINT_DEV int __clzll(long long x);
GPULINT_DEV int __ffsll(long long x);
GPULINT_DEV unsigned int __byte_perm(unsigned int x, unsigned int y, unsigned int s);
GPULINT_DEV unsigned int __funnelshift_l(unsigned int lo, unsigned int hi, unsigned int shift);
GPULINT_DEV unsigned int __funnelshift_r(unsigned int lo, unsigned int hi, unsigned int shift);
GPULINT_DEV float __fdiv_rn(float x, float y);
GPULINT_DEV float __frcp_rn(float x);
GPULINT_DEV float __fsqrt_rn(float x);
GPULINT_DEV float __fsub_rn(float x, float y);
GPULINT_DEV float __exp10f(float x);
GPULINT_DEV float __log2f(float x);
GPULINT_DEV float __log10f(float x);
GPULINT_DEV float __tanf(float x);
GPULINT_DEV void __sincosf(float x, float *s, float *c);
GPULINT_DEV double __dadd_rn(double x, double y);
GPULINT_DEV double __dmul_rn(double x, double y);
GPULINT_DEV double __fma_rn(double x, double y, double z);
GPULINT_DEV int __float2int_rz(float x);
GPULINT_DEV int __float2int_rd(float x);
GPULINT_DEV int __float2int_ru(float x);
GPULINT_DEV unsigned int __float2uint_rn(float x);
GPULINT_DEV unsigned int __float2uint_rz(float x);
GPULINT_DEV float __uint2float_rn(unsigned int x);
GPULINT_DEV long long __double_as_longlong(double x);
GPULINT_DEV double __longlong_as_double(long long x);
GPULINT_DEV int __double2int_rn(double x);
GPULINT_DEV float __double2float_rn(double x);
GPULINT_DEV unsigned int __match_any_sync(unsigned int mask, int value);
GPULINT_DEV unsigned int __lanemask_lt(void);
GPULINT_DEV void __nanosleep(unsigned int ns);
GPULINT_DEV unsigned int __reduce_add_sync(unsigned int mask, unsigned int value);
GPULINT_DEV long long int clock64(void);

#ifdef __cplusplus
/* half precision (cuda_fp16.h / cuda_bf16.h), the common conversions and arithmetic */
__host__ __device__ __half __float2half(float f);
__host__ __device__ __half __float2half_rn(float f);
__host__ __device__ float __half2float(__half h);
__host__ __device__ __half2 __floats2half2_rn(float a, float b);
__host__ __device__ __half2 __float2half2_rn(float a);
__host__ __device__ __half2 __halves2half2(__half a, __half b);
__host__ __device__ __half2 __half2half2(__half a);
__host__ __device__ float2 __half22float2(__half2 h);
__host__ __device__ __half2 __float22half2_rn(float2 f);
__host__ __device__ float __low2float(__half2 h);
__host__ __device__ float __high2float(__half2 h);
__host__ __device__ __half __low2half(__half2 h);
__host__ __device__ __half __high2half(__half2 h);
__device__ __half __hadd(__half a, __half b);
__device__ __half __hsub(__half a, __half b);
__device__ __half __hmul(__half a, __half b);
__device__ __half __hdiv(__half a, __half b);
__device__ __half __hfma(__half a, __half b, __half c);
__device__ __half __hneg(__half a);
__device__ __half2 __hadd2(__half2 a, __half2 b);
__device__ __half2 __hsub2(__half2 a, __half2 b);
__device__ __half2 __hmul2(__half2 a, __half2 b);
__device__ __half2 __h2div(__half2 a, __half2 b);
__device__ __half2 __hfma2(__half2 a, __half2 b, __half2 c);
__device__ bool __hlt(__half a, __half b);
__device__ bool __hgt(__half a, __half b);
__device__ __half hsqrt(__half a);
__device__ __half hexp(__half a);
__host__ __device__ __half operator+(__half a, __half b);
__host__ __device__ __half operator-(__half a, __half b);
__host__ __device__ __half operator*(__half a, __half b);
__host__ __device__ __half operator/(__half a, __half b);
__host__ __device__ __half &operator+=(__half &a, __half b);
__host__ __device__ __half &operator*=(__half &a, __half b);
__host__ __device__ __half2 operator+(__half2 a, __half2 b);
__host__ __device__ __half2 operator*(__half2 a, __half2 b);
__host__ __device__ __half2 &operator+=(__half2 &a, __half2 b);
__host__ __device__ __nv_bfloat16 __float2bfloat16(float f);
__host__ __device__ float __bfloat162float(__nv_bfloat16 h);
__host__ __device__ __nv_bfloat162 __floats2bfloat162_rn(float a, float b);
__device__ __half __shfl_down_sync(unsigned int mask, __half var, unsigned int delta, int width = 32);
__device__ __half2 __shfl_down_sync(unsigned int mask, __half2 var, unsigned int delta, int width = 32);
__device__ __half2 __shfl_xor_sync(unsigned int mask, __half2 var, int laneMask, int width = 32);

/* texture and surface objects */
template <class T> __device__ T tex1Dfetch(cudaTextureObject_t texObject, int x);
template <class T> __device__ T tex1D(cudaTextureObject_t texObject, float x);
template <class T> __device__ T tex2D(cudaTextureObject_t texObject, float x, float y);
template <class T> __device__ T tex3D(cudaTextureObject_t texObject, float x, float y, float z);
template <class T> __device__ T tex1DLayered(cudaTextureObject_t texObject, float x, int layer);
template <class T> __device__ T tex2DLayered(cudaTextureObject_t texObject, float x, float y, int layer);
template <class T> __device__ T texCubemap(cudaTextureObject_t texObject, float x, float y, float z);
template <class T> __device__ T tex2DLod(cudaTextureObject_t texObject, float x, float y, float level);
template <class T> __device__ void tex1Dfetch(T *ptr, cudaTextureObject_t obj, int x);
template <class T> __device__ void tex2D(T *ptr, cudaTextureObject_t obj, float x, float y);
template <class T> __device__ T surf2Dread(cudaSurfaceObject_t surfObject, int x, int y,
                                           enum cudaSurfaceBoundaryMode boundaryMode = cudaBoundaryModeTrap);
template <class T> __device__ void surf2Dread(T *ptr, cudaSurfaceObject_t surfObject, int x, int y,
                                              enum cudaSurfaceBoundaryMode boundaryMode = cudaBoundaryModeTrap);
template <class T> __device__ void surf2Dwrite(T data, cudaSurfaceObject_t surfObject, int x, int y,
                                               enum cudaSurfaceBoundaryMode boundaryMode = cudaBoundaryModeTrap);
template <class T> __device__ void surf3Dwrite(T data, cudaSurfaceObject_t surfObject, int x, int y, int z,
                                               enum cudaSurfaceBoundaryMode boundaryMode = cudaBoundaryModeTrap);
template <class T> __device__ void surf1Dwrite(T data, cudaSurfaceObject_t surfObject, int x,
                                               enum cudaSurfaceBoundaryMode boundaryMode = cudaBoundaryModeTrap);
#endif

/* vector constructors */
#define GPULINT_MAKE(N, T)                                                                \
  static __inline__ __host__ __device__ N##2 make_##N##2(T x, T y) { N##2 t; t.x = x; t.y = y; return t; } \
  static __inline__ __host__ __device__ N##3 make_##N##3(T x, T y, T z) { N##3 t; t.x = x; t.y = y; t.z = z; return t; } \
  static __inline__ __host__ __device__ N##4 make_##N##4(T x, T y, T z, T w) { N##4 t; t.x = x; t.y = y; t.z = z; t.w = w; return t; }
#define GPULINT_MAKE1(N, T) \
  static __inline__ __host__ __device__ N##1 make_##N##1(T x) { N##1 t; t.x = x; return t; }
GPULINT_MAKE(char, signed char) GPULINT_MAKE1(char, signed char)
GPULINT_MAKE(uchar, unsigned char) GPULINT_MAKE1(uchar, unsigned char)
GPULINT_MAKE(short, short) GPULINT_MAKE1(short, short)
GPULINT_MAKE(ushort, unsigned short) GPULINT_MAKE1(ushort, unsigned short)
GPULINT_MAKE(int, int) GPULINT_MAKE1(int, int)
GPULINT_MAKE(uint, unsigned int) GPULINT_MAKE1(uint, unsigned int)
GPULINT_MAKE(long, long) GPULINT_MAKE1(long, long)
GPULINT_MAKE(ulong, unsigned long) GPULINT_MAKE1(ulong, unsigned long)
GPULINT_MAKE(longlong, long long) GPULINT_MAKE1(longlong, long long)
GPULINT_MAKE(ulonglong, unsigned long long) GPULINT_MAKE1(ulonglong, unsigned long long)
GPULINT_MAKE(float, float) GPULINT_MAKE1(float, float)
GPULINT_MAKE(double, double) GPULINT_MAKE1(double, double)
#undef GPULINT_MAKE
#undef GPULINT_MAKE1

#undef GPULINT_DEV
#endif /* GPULINT_CUDA_STUB_H */
