/* rk_cuda.h — public API of the CUDA runtime pieces (built only when nvcc is
 * there): device discovery and memory, event timing, and a bitwise tensor
 * comparison kernel used to check gradients on the device.  Plain C API; the
 * implementation is CUDA C (rk_cuda.cu) linked with the static CUDA runtime. */
#ifndef RK_CUDA_H
#define RK_CUDA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    char name[256];
    int major, minor;        /* compute capability */
    int64_t total_bytes;
    int multiprocessors;
} rk_cuda_device;

/* Number of usable CUDA devices (0 when there is no driver or no GPU). */
int rk_cuda_device_count(void);
/* 0 on success; on failure a message in msg (n bytes). */
int rk_cuda_device_info(int dev, rk_cuda_device *info, char *msg, size_t n);
/* Device memory in use (total - free) and total, bytes. */
int rk_cuda_memory(int64_t *used, int64_t *total, char *msg, size_t n);

/* Event timer on the default stream. */
typedef struct rk_cuda_timer rk_cuda_timer;
rk_cuda_timer *rk_cuda_timer_new(void);
void rk_cuda_timer_free(rk_cuda_timer *t);
int rk_cuda_timer_start(rk_cuda_timer *t);
/* Synchronizes on the stop event; elapsed microseconds in *us. */
int rk_cuda_timer_stop(rk_cuda_timer *t, double *us);

/* Compare two device buffers of n elements of `elem_size` bytes (4: float32,
 * 8: float64): the number of elements whose bits differ and the largest
 * absolute difference.  Pointers are device pointers. */
typedef struct {
    int64_t n_different;
    double max_abs_diff;
} rk_cuda_compare_result;
int rk_cuda_compare(const void *a, const void *b, size_t n, int elem_size, rk_cuda_compare_result *res, char *msg,
                    size_t msg_n);

/* Host convenience for tests: copy host arrays to the device, compare. */
int rk_cuda_compare_host(const void *a, const void *b, size_t n, int elem_size, rk_cuda_compare_result *res,
                         char *msg, size_t msg_n);

#ifdef __cplusplus
}
#endif
#endif
