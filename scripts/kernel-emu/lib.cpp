// kernels/fdtd.cu compiled as C++ for the CPU emulation of the CUDA device
// (src/engine/device/emu.rs loads this shared library; scripts/kernel-emu.sh
// builds it for one tile). The threads of a block run as OS threads with real
// barriers and the cp.async copies land at their waits (cuda_shim.h).
#include "cuda_shim.h"
#include "../../kernels/fdtd.cu"

#define EMU_STR2(x) #x
#define EMU_STR(x) EMU_STR2(x)

extern "C" const char* emu_module() { return "fdtd"; }

// The options this library fixes (a batch built for another tile is refused).
extern "C" const char* emu_defines() {
    return "-DEMV_TX=" EMU_STR(EMV_TX) " -DEMV_TY=" EMU_STR(EMV_TY) " -DEMV_NS=" EMU_STR(EMV_NS);
}

// Dynamic shared memory of the next launches (bytes; fdtd_step2's).
extern "C" void emu_set_shared(unsigned bytes) { emu_smem_bytes = bytes; }

// Kernel k in the order of src/engine/cuda/abi.rs KERNELS, with the
// parameters' addresses as cuLaunchKernel takes them.
extern "C" int emu_kernel(int k, const unsigned* g, const unsigned* b, void** a) {
    const dim3 grid{g[0], g[1], g[2]};
    const dim3 block{b[0], b[1], b[2]};
    switch (k) {
        case 0: emu_launch(fdtd_update_h, grid, block, *(const FdtdPtrs*)a[0]); break;
        case 1: emu_launch(fdtd_pmc_ghosts, grid, block, *(const FdtdPtrs*)a[0]); break;
        case 2: emu_launch(fdtd_update_e, grid, block, *(const FdtdPtrs*)a[0]); break;
        case 3: emu_launch(fdtd_step, grid, block, *(const FdtdPtrs*)a[0]); break;
        case 4: emu_launch(fdtd_inject, grid, block, *(const PortPtrs*)a[0], *(const int*)a[1]); break;
        case 5: emu_launch(fdtd_sample_ports, grid, block, *(const PortPtrs*)a[0], *(const int*)a[1]); break;
        case 6: emu_launch(fdtd_energy, grid, block, *(const FdtdPtrs*)a[0], *(double* const*)a[1]); break;
        case 7: emu_launch(fdtd_dft, grid, block, *(const DftPtrs*)a[0], *(const int*)a[1]); break;
        case 8:
            emu_launch(fdtd_step2, grid, block, *(const FdtdPtrs*)a[0], *(const PortPtrs*)a[1], *(const SlimPtrs*)a[2],
                       *(const int*)a[3]);
            break;
        case 9: emu_launch(fdtd_edges, grid, block, *(const EdgePtrs*)a[0]); break;
        case 10: emu_launch(fdtd_surface, grid, block, *(const SurfacePtrs*)a[0]); break;
        case 11: emu_launch(fdtd_surface_e, grid, block, *(const SurfacePtrs*)a[0]); break;
        case 12: emu_launch(fdtd_conformal, grid, block, *(const ConformalPtrs*)a[0]); break;
        case 13: emu_launch(fdtd_conformal_e, grid, block, *(const ConformalPtrs*)a[0]); break;
        case 14: emu_launch(fdtd_conformal_rec, grid, block, *(const ConformalPtrs*)a[0]); break;
        default: return 1;
    }
    return 0;
}
