// Minimal CUDA emulation for running kernels/tlm.cu on the CPU (no GPU
// needed), used by scripts/tlm-emu.sh only. The blocks of a launch run one
// after another on one OS thread. Kernels without __syncthreads run their
// threads one after another; cooperative kernels (reductions) run each thread
// as a coroutine (ucontext) and __syncthreads() switches until every thread
// that has not returned reaches it, so shared memory and barriers behave as
// on the device (a missing barrier shows up as a wrong sum).
#pragma once
#include <ucontext.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

struct dim3 {
    unsigned x = 1, y = 1, z = 1;
};
inline dim3 threadIdx, blockIdx, blockDim, gridDim;

#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(...)
#define __restrict__ __restrict

// Dynamic shared memory (extern __shared__ on the device): one buffer, sized
// by emu_set_shared before a launch and refilled per block with 0xCD bytes (a
// large negative float), so a read of a position never written shows.
#define EMV_EMU 1
#define __align__(n) alignas(n)
inline std::vector<unsigned char> emu_smem;
inline size_t emu_smem_bytes = 0;
inline unsigned char* emu_dyn_smem() { return emu_smem.data(); }

namespace emu {
inline bool coop = false;
inline ucontext_t sched;
inline std::vector<ucontext_t> ctx;
inline std::vector<std::vector<char>> stacks;
inline std::vector<int> state;  // 0 ready, 1 at a barrier, 2 returned
inline int cur = 0;
inline std::function<void()> body;

inline void trampoline() {
    body();
    state[cur] = 2;
}

// Run `f` for every thread of every block of the grid.
inline void launch(unsigned grid, unsigned block, bool cooperative, const std::function<void()>& f) {
    gridDim.x = grid;
    blockDim.x = block;
    coop = cooperative;
    body = f;
    if (!cooperative) {
        for (unsigned b = 0; b < grid; ++b) {
            blockIdx.x = b;
            for (unsigned t = 0; t < block; ++t) {
                threadIdx.x = t;
                f();
            }
        }
        return;
    }
    ctx.resize(block);
    state.assign(block, 0);
    stacks.resize(block);
    for (auto& s : stacks) s.resize(256 * 1024);
    for (unsigned b = 0; b < grid; ++b) {
        blockIdx.x = b;
        if (emu_smem_bytes) emu_smem.assign(emu_smem_bytes + 16, 0xCD);
        for (unsigned t = 0; t < block; ++t) {
            getcontext(&ctx[t]);
            ctx[t].uc_stack.ss_sp = stacks[t].data();
            ctx[t].uc_stack.ss_size = stacks[t].size();
            ctx[t].uc_link = &sched;
            makecontext(&ctx[t], trampoline, 0);
            state[t] = 0;
        }
        for (;;) {
            for (unsigned t = 0; t < block; ++t) {
                if (state[t] != 0) continue;
                cur = t;
                threadIdx.x = t;
                swapcontext(&sched, &ctx[t]);
            }
            bool waiting = false;
            for (unsigned t = 0; t < block; ++t) waiting |= state[t] == 1;
            if (!waiting) break;
            for (unsigned t = 0; t < block; ++t)
                if (state[t] == 1) state[t] = 0;
        }
    }
}
}  // namespace emu

inline void __syncthreads() {
    if (!emu::coop) {
        fprintf(stderr, "__syncthreads in a kernel launched as non-cooperative\n");
        abort();
    }
    emu::state[emu::cur] = 1;
    swapcontext(&emu::ctx[emu::cur], &emu::sched);
}

// __shfl_down_sync over a whole block: every thread of the block calls it
// together (the on-chip kernel uses it only in block-wide reductions); each
// passes its value through a slot between two barriers and reads lane + d of
// its own warp (its own value past the warp's end, as on the device).
inline double emu_shfl[1024];
inline double __shfl_down_sync(unsigned, double v, unsigned d) {
    const unsigned t = threadIdx.x;
    emu_shfl[t] = v;
    __syncthreads();
    const double r = (t & 31) + d < 32 && t + d < blockDim.x ? emu_shfl[t + d] : v;
    __syncthreads();
    return r;
}

inline double atomicAdd(double* a, double v) {
    double o = *a;
    *a += v;
    return o;
}
