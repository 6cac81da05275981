// rk_cuda.cu — CUDA runtime pieces: devices, memory, event timing and the
// bitwise comparison kernel (see rk_cuda.h).
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rk_cuda.h"

static int fail(char *msg, size_t n, const char *what, cudaError_t e) {
    if (msg && n) snprintf(msg, n, "%s: %s", what, cudaGetErrorString(e));
    return 1;
}

extern "C" int rk_cuda_device_count(void) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return n;
}

extern "C" int rk_cuda_device_info(int dev, rk_cuda_device *info, char *msg, size_t n) {
    cudaDeviceProp p;
    cudaError_t e = cudaGetDeviceProperties(&p, dev);
    if (e != cudaSuccess) return fail(msg, n, "cudaGetDeviceProperties", e);
    memset(info, 0, sizeof *info);
    snprintf(info->name, sizeof info->name, "%s", p.name);
    info->major = p.major;
    info->minor = p.minor;
    info->total_bytes = (int64_t)p.totalGlobalMem;
    info->multiprocessors = p.multiProcessorCount;
    return 0;
}

extern "C" int rk_cuda_memory(int64_t *used, int64_t *total, char *msg, size_t n) {
    size_t f = 0, t = 0;
    cudaError_t e = cudaMemGetInfo(&f, &t);
    if (e != cudaSuccess) return fail(msg, n, "cudaMemGetInfo", e);
    *used = (int64_t)(t - f);
    *total = (int64_t)t;
    return 0;
}

struct rk_cuda_timer {
    cudaEvent_t start, stop;
};

extern "C" rk_cuda_timer *rk_cuda_timer_new(void) {
    rk_cuda_timer *t = (rk_cuda_timer *)calloc(1, sizeof *t);
    if (!t) return NULL;
    if (cudaEventCreate(&t->start) != cudaSuccess || cudaEventCreate(&t->stop) != cudaSuccess) {
        free(t);
        return NULL;
    }
    return t;
}

extern "C" void rk_cuda_timer_free(rk_cuda_timer *t) {
    if (!t) return;
    cudaEventDestroy(t->start);
    cudaEventDestroy(t->stop);
    free(t);
}

extern "C" int rk_cuda_timer_start(rk_cuda_timer *t) { return cudaEventRecord(t->start, 0) != cudaSuccess; }

extern "C" int rk_cuda_timer_stop(rk_cuda_timer *t, double *us) {
    if (cudaEventRecord(t->stop, 0) != cudaSuccess || cudaEventSynchronize(t->stop) != cudaSuccess) return 1;
    float ms = 0;
    if (cudaEventElapsedTime(&ms, t->start, t->stop) != cudaSuccess) return 1;
    *us = 1000.0 * ms;
    return 0;
}

// One block-level partial result per block: count of differing bit patterns
// and the largest |a - b|; reduced on the host (few blocks).
template <typename T, typename U>
__global__ void compare_kernel(const T *a, const T *b, size_t n, unsigned long long *count, double *maxdiff) {
    __shared__ unsigned long long s_count[256];
    __shared__ double s_max[256];
    unsigned long long c = 0;
    double m = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        U ua = reinterpret_cast<const U *>(a)[i], ub = reinterpret_cast<const U *>(b)[i];
        if (ua != ub) {
            c++;
            double d = fabs((double)a[i] - (double)b[i]);
            if (d > m || d != d) m = (d != d) ? INFINITY : d;
        }
    }
    s_count[threadIdx.x] = c;
    s_max[threadIdx.x] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if ((int)threadIdx.x < s) {
            s_count[threadIdx.x] += s_count[threadIdx.x + s];
            s_max[threadIdx.x] = fmax(s_max[threadIdx.x], s_max[threadIdx.x + s]);
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        count[blockIdx.x] = s_count[0];
        maxdiff[blockIdx.x] = s_max[0];
    }
}

extern "C" int rk_cuda_compare(const void *a, const void *b, size_t n, int elem_size, rk_cuda_compare_result *res,
                               char *msg, size_t msg_n) {
    const int threads = 256, blocks = 128;
    unsigned long long *d_count = NULL;
    double *d_max = NULL;
    cudaError_t e;
    if (elem_size != 4 && elem_size != 8) {
        if (msg && msg_n) snprintf(msg, msg_n, "rk_cuda_compare: element size %d is not 4 or 8", elem_size);
        return 1;
    }
    if ((e = cudaMalloc(&d_count, blocks * sizeof *d_count)) != cudaSuccess) return fail(msg, msg_n, "cudaMalloc", e);
    if ((e = cudaMalloc(&d_max, blocks * sizeof *d_max)) != cudaSuccess) {
        cudaFree(d_count);
        return fail(msg, msg_n, "cudaMalloc", e);
    }
    if (elem_size == 4)
        compare_kernel<float, unsigned int><<<blocks, threads>>>((const float *)a, (const float *)b, n, d_count, d_max);
    else
        compare_kernel<double, unsigned long long>
            <<<blocks, threads>>>((const double *)a, (const double *)b, n, d_count, d_max);
    unsigned long long h_count[blocks];
    double h_max[blocks];
    e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaMemcpy(h_count, d_count, sizeof h_count, cudaMemcpyDeviceToHost);
    if (e == cudaSuccess) e = cudaMemcpy(h_max, d_max, sizeof h_max, cudaMemcpyDeviceToHost);
    cudaFree(d_count);
    cudaFree(d_max);
    if (e != cudaSuccess) return fail(msg, msg_n, "compare kernel", e);
    res->n_different = 0;
    res->max_abs_diff = 0;
    for (int i = 0; i < blocks; i++) {
        res->n_different += (int64_t)h_count[i];
        if (h_max[i] > res->max_abs_diff) res->max_abs_diff = h_max[i];
    }
    return 0;
}

extern "C" int rk_cuda_compare_host(const void *a, const void *b, size_t n, int elem_size, rk_cuda_compare_result *res,
                                    char *msg, size_t msg_n) {
    void *da = NULL, *db = NULL;
    size_t bytes = n * (size_t)elem_size;
    cudaError_t e = cudaMalloc(&da, bytes ? bytes : 1);
    if (e == cudaSuccess) e = cudaMalloc(&db, bytes ? bytes : 1);
    if (e == cudaSuccess) e = cudaMemcpy(da, a, bytes, cudaMemcpyHostToDevice);
    if (e == cudaSuccess) e = cudaMemcpy(db, b, bytes, cudaMemcpyHostToDevice);
    int r = e == cudaSuccess ? rk_cuda_compare(da, db, n, elem_size, res, msg, msg_n) : fail(msg, msg_n, "copy", e);
    cudaFree(da);
    cudaFree(db);
    return r;
}
