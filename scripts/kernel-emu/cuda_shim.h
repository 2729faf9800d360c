// Minimal CUDA emulation for running kernels/*.cu on the CPU (no GPU needed):
// the blocks of a launch run one after another, the threads of a block run as
// OS threads and __syncthreads() is a std::barrier, so shared memory (static
// here), barriers and races between threads behave as on the device.
// Used by scripts/kernel-emu.sh only; not part of the shipped program.
#pragma once
#include <barrier>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

struct dim3 {
    unsigned x = 1, y = 1, z = 1;
};
inline thread_local dim3 threadIdx, blockIdx;
inline dim3 blockDim, gridDim;
inline std::barrier<>* emu_barrier = nullptr;

// Dynamic shared memory (extern __shared__ on the device): one buffer per
// block, sized by emu_set_shared before the launch and filled with a
// pattern (0xCD bytes: a large negative float) so that a read of a position
// never written shows in the results.
inline std::vector<unsigned char> emu_smem;
inline size_t emu_smem_bytes = 0;
inline unsigned char* emu_dyn_smem() { return emu_smem.data(); }

#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(...)
#define __align__(n) alignas(n)

inline void __syncthreads() { emu_barrier->arrive_and_wait(); }

// __syncwarp(): a barrier of the calling thread's warp (32 threads, fewer in
// a last partial warp), for the port warp's products in shared memory.
inline std::vector<std::barrier<>*> emu_warp_barriers;
inline void __syncwarp(unsigned = 0xffffffffu) { emu_warp_barriers[(threadIdx.x + threadIdx.y * blockDim.x) / 32]->arrive_and_wait(); }

// Vector types (shared-memory loads of 2 and 4 words).
struct alignas(8) float2 {
    float x, y;
};
struct alignas(16) float4 {
    float x, y, z, w;
};

// __shfl_down_sync over a whole block: every thread of the block must call it
// together (the kernels use it only in block-wide reductions), each passes its
// value through a per-block slot between two barriers and reads its lane + d
// of the same warp (its own value past the warp's end, as on the device).
inline double emu_shfl[1024];
inline double __shfl_down_sync(unsigned, double v, unsigned d) {
    const unsigned t = threadIdx.x + threadIdx.y * blockDim.x;
    emu_shfl[t] = v;
    emu_barrier->arrive_and_wait();
    const double r = (t & 31) + d < 32 ? emu_shfl[t + d] : v;
    emu_barrier->arrive_and_wait();
    return r;
}

#include <cstring>
inline int __float_as_int(float x) {
    int i;
    std::memcpy(&i, &x, 4);
    return i;
}
inline float __int_as_float(int i) {
    float x;
    std::memcpy(&x, &i, 4);
    return x;
}

// cp.async model: a thread's copies are queued per commit group and land
// only at cp_wait, the latest moment the hardware may complete them, so a
// read of a stage before its wait (or a refill that lands under a reader)
// changes the results.
#define EMV_EMU 1
struct EmuCopy {
    float* dst;
    const float* src;
    bool ok;
};
inline thread_local std::vector<std::vector<EmuCopy>> emu_groups;
inline thread_local std::vector<EmuCopy> emu_open;
inline void cp4(float* dst, const float* src, bool ok) { emu_open.push_back({dst, src, ok}); }
inline void cp_commit() {
    emu_groups.push_back(std::move(emu_open));
    emu_open.clear();
}
template <int N>
inline void cp_wait() {
    while ((int)emu_groups.size() > N) {
        for (auto& c : emu_groups.front()) *c.dst = c.ok ? *c.src : 0.f;
        emu_groups.erase(emu_groups.begin());
    }
}

inline double atomicAdd(double* a, double v) {
    static std::mutex m;
    std::lock_guard<std::mutex> g(m);
    double o = *a;
    *a += v;
    return o;
}

// Launch kernel f(args...) on grid x block (x, y only).
template <class F, class... Args>
void emu_launch(F f, dim3 grid, dim3 block, Args... args) {
    gridDim = grid;
    blockDim = block;
    const unsigned nt = block.x * block.y;
    for (unsigned b = 0; b < grid.x; ++b) {
        emu_smem.assign(emu_smem_bytes + 16, 0xCD);
        std::barrier<> bar(nt);
        emu_barrier = &bar;
        std::vector<std::unique_ptr<std::barrier<>>> warps;
        emu_warp_barriers.clear();
        for (unsigned w = 0; w * 32 < nt; ++w) {
            warps.push_back(std::make_unique<std::barrier<>>(std::min(32u, nt - 32 * w)));
            emu_warp_barriers.push_back(warps.back().get());
        }
        std::vector<std::thread> ts;
        ts.reserve(nt);
        for (unsigned t = 0; t < nt; ++t) {
            ts.emplace_back([=]() {
                blockIdx.x = b;
                threadIdx.x = t % block.x;
                threadIdx.y = t / block.x;
                emu_groups.clear();
                emu_open.clear();
                f(args...);
                if (!emu_groups.empty() || !emu_open.empty()) {
                    fprintf(stderr, "cp.async copies still pending when a thread of block %u ended\n", b);
                    abort();
                }
                // A thread that returned early must not block the others' barriers.
                emu_barrier->arrive_and_drop();
                emu_warp_barriers[t / 32]->arrive_and_drop();
            });
        }
        for (auto& th : ts) th.join();
    }
}
