// Minimal CUDA emulation for running kernels/*.cu on the CPU (no GPU needed):
// the blocks of a launch run one after another on the calling OS thread, the
// threads of a block as coroutines (ucontext), and __syncthreads() /
// __syncwarp() switch until every thread of the block (of the warp) that has
// not returned reaches them, so shared memory (static here) and barriers
// behave as on the device. Between two barriers the threads run one after
// another, in thread order after even barriers and in reverse order after odd
// ones: a read that a missing barrier leaves unordered against another
// thread's write sees the wrong value in one of the two orders.
// (Coroutines, not OS threads: on two cores, a thread per device thread spent
// most of its time creating threads and waking them at barriers.)
// Used by scripts/kernel-emu.sh and the emulation tests only; not part of
// the shipped program.
#pragma once
#include <ucontext.h>

#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstdint>
#include <memory>
#include <functional>
#include <vector>

struct dim3 {
    unsigned x = 1, y = 1, z = 1;
};
inline dim3 threadIdx, blockIdx, blockDim, gridDim;

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

namespace emu {
// Where a device thread stands: ready to run, waiting at the block's
// barrier or its warp's, or returned.
enum class At { Ready, Block, Warp, Done };
inline void wait(At at);
}  // namespace emu

inline void __syncthreads() { emu::wait(emu::At::Block); }

// __syncwarp(): a barrier of the calling thread's warp (32 threads, fewer in
// a last partial warp), for the port warp's products in shared memory.
inline void __syncwarp(unsigned = 0xffffffffu) { emu::wait(emu::At::Warp); }

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
    __syncthreads();
    const double r = (t & 31) + d < 32 ? emu_shfl[t + d] : v;
    __syncthreads();
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
// The running thread's queues (each coroutine's own are swapped in and out).
inline std::vector<std::vector<EmuCopy>> emu_groups;
inline std::vector<EmuCopy> emu_open;
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
    double o = *a;
    *a += v;
    return o;
}

namespace emu {
struct Thread {
    ucontext_t ctx;
    std::vector<char> stack;
    At at = At::Ready;
    std::vector<std::vector<EmuCopy>> groups;
    std::vector<EmuCopy> open;
};
inline ucontext_t sched;
inline std::vector<Thread> threads;
inline unsigned cur = 0;
inline std::function<void()> body;

// A device thread stops at a barrier: back to the scheduler until released.
inline void wait(At at) {
    threads[cur].at = at;
    swapcontext(&threads[cur].ctx, &sched);
}

inline void trampoline() {
    body();
    if (!emu_groups.empty() || !emu_open.empty()) {
        fprintf(stderr, "cp.async copies still pending when thread %u of block %u ended\n", cur, blockIdx.x);
        abort();
    }
    threads[cur].at = At::Done;
}

// Run the device thread t until it stops at a barrier or returns.
inline void resume(unsigned t, dim3 block) {
    Thread& th = threads[t];
    cur = t;
    threadIdx.x = t % block.x;
    threadIdx.y = t / block.x;
    std::swap(emu_groups, th.groups);
    std::swap(emu_open, th.open);
    swapcontext(&sched, &th.ctx);
    std::swap(emu_groups, th.groups);
    std::swap(emu_open, th.open);
}
}  // namespace emu

// Launch kernel f(args...) on grid x block (x, y only).
template <class F, class... Args>
void emu_launch(F f, dim3 grid, dim3 block, Args... args) {
    using emu::At;
    gridDim = grid;
    blockDim = block;
    const unsigned nt = block.x * block.y;
    emu::body = [=]() { f(args...); };
    emu::threads.resize(std::max<size_t>(emu::threads.size(), nt));
    for (unsigned b = 0; b < grid.x; ++b) {
        blockIdx.x = b;
        emu_smem.assign(emu_smem_bytes + 16, 0xCD);
        for (unsigned t = 0; t < nt; ++t) {
            auto& th = emu::threads[t];
            th.stack.resize(256 * 1024);
            getcontext(&th.ctx);
            th.ctx.uc_stack.ss_sp = th.stack.data();
            th.ctx.uc_stack.ss_size = th.stack.size();
            th.ctx.uc_link = &emu::sched;
            makecontext(&th.ctx, emu::trampoline, 0);
            th.at = At::Ready;
            th.groups.clear();
            th.open.clear();
        }
        for (unsigned epoch = 0;; ++epoch) {
            for (unsigned k = 0; k < nt; ++k) {
                const unsigned t = epoch % 2 ? nt - 1 - k : k;
                if (emu::threads[t].at == At::Ready) emu::resume(t, block);
            }
            // Every thread now waits at a barrier or has returned: release the
            // warps whose live threads all wait at __syncwarp, else the block
            // once all its live threads wait at __syncthreads.
            bool live = false, released = false;
            for (unsigned w = 0; w * 32 < nt; ++w) {
                const unsigned lo = 32 * w, hi = std::min(nt, lo + 32);
                bool all = true, any = false;
                for (unsigned t = lo; t < hi; ++t) {
                    const At a = emu::threads[t].at;
                    live |= a != At::Done;
                    any |= a == At::Warp;
                    all &= a == At::Warp || a == At::Done;
                }
                if (any && all) {
                    for (unsigned t = lo; t < hi; ++t)
                        if (emu::threads[t].at == At::Warp) emu::threads[t].at = At::Ready;
                    released = true;
                }
            }
            if (!live) break;
            if (!released) {
                bool all = true;
                for (unsigned t = 0; t < nt; ++t) all &= emu::threads[t].at == At::Block || emu::threads[t].at == At::Done;
                if (!all) {
                    fprintf(stderr, "block %u: threads wait at different barriers (__syncthreads and __syncwarp)\n", b);
                    abort();
                }
                for (unsigned t = 0; t < nt; ++t)
                    if (emu::threads[t].at == At::Block) emu::threads[t].at = At::Ready;
            }
        }
    }
}
