// kernels/tlm.cu compiled as C++ for the CPU emulation of the CUDA device
// (src/engine/device/emu.rs loads this shared library; scripts/tlm-emu.sh
// builds it for one launch shape).
#include "shim.h"
#include "../../kernels/tlm.cu"

#define EMU_STR2(x) #x
#define EMU_STR(x) EMU_STR2(x)

extern "C" const char* emu_module() { return "tlm"; }

// The options this library fixes (a batch built for another launch shape is refused).
extern "C" const char* emu_defines() {
    return "-DTLM_THREADS=" EMU_STR(TLM_THREADS) " -DTLM_NPT=" EMU_STR(TLM_NPT) " -DTLM_SPLIT=" EMU_STR(TLM_SPLIT) " -DTLM_PORT_THREADS=" EMU_STR(TLM_PORT_THREADS);
}

// Kernel k (order of src/engine/cuda/tlm/abi.rs KERNELS) on grid x block, with
// the parameters' addresses as cuLaunchKernel takes them: (TlmPtrs, int, int).
extern "C" int emu_kernel(int k, const unsigned* g, const unsigned* b, void** a) {
    const TlmPtrs P = *(const TlmPtrs*)a[0];
    const int a0 = *(const int*)a[1];
    const int a1 = *(const int*)a[2];
    const unsigned grid = g[0], block = b[0];
    switch (k) {
        case 0: emu::launch(grid, block, false, [&] { tlm_scn_step(P, a0, a1); }); break;
        case 1: emu::launch(grid, block, true, [&] { tlm_scn_ports(P, a0, a1); }); break;
        case 2: emu::launch(grid, block, true, [&] { tlm_scn_sample(P, a0, a1); }); break;
        case 3: emu::launch(grid, block, true, [&] { tlm_scn_energy(P, a0, a1); }); break;
        case 4: emu::launch(grid, block, false, [&] { tlm_shunt_step(P, a0, a1); }); break;
        case 5: emu::launch(grid, block, true, [&] { tlm_shunt_ports(P, a0, a1); }); break;
        case 6: emu::launch(grid, block, true, [&] { tlm_shunt_sample(P, a0, a1); }); break;
        case 7: emu::launch(grid, block, true, [&] { tlm_shunt_energy(P, a0, a1); }); break;
        default: return 1;
    }
    return 0;
}
