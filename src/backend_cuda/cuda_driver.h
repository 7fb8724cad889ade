/*
 * The CUDA Driver API and NVRTC, loaded with dlopen on first use
 * (cuda_driver.c). Private to src/backend_cuda and the runtime's device
 * arrays (src/runtime/array.c).
 *
 * The few types and entry points tex uses are declared here, not taken from
 * cuda.h / nvrtc.h, so that tex builds without the CUDA toolkit and never
 * links libcuda or libnvrtc. They follow the CUDA 12/13 ABI: handles are
 * opaque pointers, CUdevice an int, CUdeviceptr 64 bits, results ints; the
 * driver functions the API versions are bound by their _v2 names.
 */
#ifndef TEX_BACKEND_CUDA_CUDA_DRIVER_H
#define TEX_BACKEND_CUDA_CUDA_DRIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef uint64_t texi_cu_ptr; /* CUdeviceptr */

/* The driver's functions (their CUDA names without the _v2 suffix). */
typedef struct {
    int (*cuInit)(unsigned flags);
    int (*cuDriverGetVersion)(int *version);
    int (*cuDeviceGetCount)(int *count);
    int (*cuDeviceGet)(int *device, int ordinal);
    int (*cuDeviceGetAttribute)(int *value, int attribute, int device);
    int (*cuDevicePrimaryCtxRetain)(void **ctx, int device);
    int (*cuCtxSetCurrent)(void *ctx);
    int (*cuCtxSynchronize)(void);
    int (*cuModuleLoadDataEx)(void **module, const void *image, unsigned n_options, int *options,
                              void **values);
    int (*cuModuleUnload)(void *module);
    int (*cuModuleGetFunction)(void **function, void *module, const char *name);
    int (*cuLaunchKernel)(void *function, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                          unsigned by, unsigned bz, unsigned shared_bytes, void *stream,
                          void **params, void **extra);
    int (*cuMemAlloc)(texi_cu_ptr *ptr, size_t bytes);
    int (*cuMemFree)(texi_cu_ptr ptr);
    int (*cuMemsetD8)(texi_cu_ptr ptr, unsigned char value, size_t n);
    int (*cuMemcpyHtoD)(texi_cu_ptr dst, const void *src, size_t bytes);
    int (*cuMemcpyDtoH)(void *dst, texi_cu_ptr src, size_t bytes);
    int (*cuMemcpyDtoD)(texi_cu_ptr dst, texi_cu_ptr src, size_t bytes);
    int (*cuGetErrorName)(int result, const char **name);
    int (*cuGetErrorString)(int result, const char **text);
} texi_cuda_api;

/* The driver: libcuda.so.1 loaded, cuInit(0) succeeded and a device
 * exists. NULL otherwise, with the reason in texi_cuda_driver_why. Loaded
 * once per process (thread-safe); the table is immutable afterwards. */
const texi_cuda_api *texi_cuda_driver(void);

/* Why texi_cuda_driver is NULL ("libcuda.so.1 not found (...)", "cuInit
 * failed: CUDA_ERROR_NO_DEVICE (...)", ...); "" when it is not. Static. */
const char *texi_cuda_driver_why(void);

/* Makes device's primary context current on the calling thread (retained
 * once per device and kept for the process). 0, TEX_EUNAVAILABLE (no
 * driver, no such device) or TEX_EDEVICE; the reason goes to msg. */
int texi_cuda_enter(int device, char *msg, size_t cap);

/* "CALL failed: CUDA_ERROR_NAME (description)" for driver result rc. */
void texi_cuda_result_text(int rc, const char *call, char *msg, size_t cap);

/* The compute capability of device as "sm_MAJORMINOR". 0 or as texi_cuda_enter. */
int texi_cuda_device_arch(int device, char *arch, size_t cap, char *msg, size_t cap_msg);

/* 1 when an NVRTC library could be loaded (once per process), else 0 with
 * the reason in texi_nvrtc_why. */
int texi_nvrtc_available(void);
const char *texi_nvrtc_why(void);

/* The libraries tried for NVRTC, in order: libnvrtc.so.DRIVER_MAJOR when
 * driver_major > 0, the sonames of CUDA 13 and 12, then the files
 * CUDA_HOME/lib64/libnvrtc.so* and /usr/local/cuda/lib64/libnvrtc.so*
 * (versioned names first; anything under a stubs directory left out).
 * Fills at most cap malloc'ed strings into out; returns how many. */
int texi_nvrtc_candidates(const char *cuda_home, int driver_major, char **out, int cap);

/* Compiles CUDA C src with NVRTC for arch ("sm_80": PTX for compute_80),
 * C++17, the toolkit's include directory on the path (cuda_fp16.h and
 * cuda_bf16.h); strict_float adds --fmad=false (no a*b+c contraction). 0 with *ptx malloc'ed;
 * TEX_ECOMPILE with NVRTC's log in *log (malloc'ed); TEX_EUNAVAILABLE (no NVRTC; *log says why),
 * TEX_EINVAL (arch is not sm_NN; *log says so) or TEX_ENOMEM. Either out pointer may be NULL; *ptx
 * and *log start NULL. */
int texi_nvrtc_compile(const char *src, const char *arch, bool strict_float, char **ptx,
                       char **log);

/* The newest architecture NVRTC can compile for that is not newer than
 * "sm_NN" arch (a device's), written back into arch; unchanged when NVRTC
 * cannot list its architectures. */
void texi_nvrtc_clamp_arch(char *arch, size_t cap);

#endif
