// kernels/fdtd_onchip.cu compiled as C++ for the CPU emulation of the CUDA
// device (src/engine/device/emu.rs loads this shared library next to the
// one of fdtd.cu; scripts/kernel-emu.sh builds both). The block's threads
// run as OS threads with real barriers; the dynamic shared memory is the
// shim's per-block buffer, sized by emu_set_shared.
#include "cuda_shim.h"
#include "../../kernels/fdtd_onchip.cu"

#define EMU_STR2(x) #x
#define EMU_STR(x) EMU_STR2(x)

#ifndef EMU_MAX_SHARED
#define EMU_MAX_SHARED 232448
#endif

extern "C" const char* emu_module() { return "fdtd_onchip"; }

extern "C" const char* emu_defines() { return "-DEMV_OC_NT=" EMU_STR(EMV_OC_NT) " -DEMU_MAX_SHARED=" EMU_STR(EMU_MAX_SHARED); }

// Dynamic shared memory of the next launches (bytes).
extern "C" void emu_set_shared(unsigned bytes) { emu_smem_bytes = bytes; }

// Kernel k in the order of src/engine/cuda/onchip.rs KERNELS.
extern "C" int emu_kernel(int k, const unsigned* g, const unsigned* b, void** a) {
    const dim3 grid{g[0], g[1], g[2]};
    const dim3 block{b[0], b[1], b[2]};
    switch (k) {
        case 0:
            emu_launch(fdtd_onchip, grid, block, *(const FdtdPtrs*)a[0], *(const PortPtrs*)a[1], *(const int* const*)a[2],
                       *(const int*)a[3], *(const int*)a[4], *(double* const*)a[5], *(const int*)a[6], *(const int*)a[7]);
            break;
        default: return 1;
    }
    return 0;
}
