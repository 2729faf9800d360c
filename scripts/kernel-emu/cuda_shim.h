// Minimal CUDA emulation for running kernels/*.cu on the CPU (no GPU needed):
// the blocks of a launch run one after another, the threads of a block run as
// OS threads and __syncthreads() is a std::barrier, so shared memory (static
// here), barriers and races between threads behave as on the device.
// Used by scripts/kernel-emu.sh only; not part of the shipped program.
#pragma once
#include <barrier>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

struct dim3 {
    unsigned x = 1, y = 1, z = 1;
};
inline thread_local dim3 threadIdx, blockIdx;
inline dim3 blockDim, gridDim;
inline std::barrier<>* emu_barrier = nullptr;

#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(...)

inline void __syncthreads() { emu_barrier->arrive_and_wait(); }

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
        std::barrier<> bar(nt);
        emu_barrier = &bar;
        std::vector<std::thread> ts;
        ts.reserve(nt);
        for (unsigned t = 0; t < nt; ++t) {
            ts.emplace_back([=]() {
                blockIdx.x = b;
                threadIdx.x = t % block.x;
                threadIdx.y = t / block.x;
                f(args...);
                // A thread that returned early must not block the others' barriers.
                emu_barrier->arrive_and_drop();
            });
        }
        for (auto& th : ts) th.join();
    }
}
