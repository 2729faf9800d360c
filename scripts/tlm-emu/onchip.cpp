// kernels/tlm_onchip.cu compiled as C++ for the CPU emulation of the CUDA
// device (src/engine/device/emu.rs loads this shared library next to the one
// of tlm.cu; scripts/tlm-emu.sh builds both). The block's threads run as
// coroutines with real barriers; the dynamic shared memory is the shim's
// buffer, sized by emu_set_shared.
#include "shim.h"
#include "../../kernels/tlm_onchip.cu"

#define EMU_STR2(x) #x
#define EMU_STR(x) EMU_STR2(x)

#ifndef EMU_MAX_SHARED
#define EMU_MAX_SHARED 232448
#endif

extern "C" const char* emu_module() { return "tlm_onchip"; }

extern "C" const char* emu_defines() { return "-DTLM_OC_NT=" EMU_STR(TLM_OC_NT) " -DEMU_MAX_SHARED=" EMU_STR(EMU_MAX_SHARED); }

// Dynamic shared memory of the next launches (bytes).
extern "C" void emu_set_shared(unsigned bytes) { emu_smem_bytes = bytes; }

// Kernel k in the order of src/engine/cuda/tlm/onchip.rs KERNELS.
extern "C" int emu_kernel(int k, const unsigned* g, const unsigned* b, void** a) {
    if (k != 0) return 1;
    const TlmPtrs P = *(const TlmPtrs*)a[0];
    const int* oc = *(const int* const*)a[1];
    const int kk = *(const int*)a[2];
    const int ce = *(const int*)a[3];
    double* en = *(double* const*)a[4];
    const int nd = *(const int*)a[5];
    emu::launch(g[0], b[0], true, [&] { tlm_shunt_onchip(P, oc, kk, ce, en, nd); });
    return 0;
}
