// kernels/tlm.cu compiled as C++ for the CPU emulation (src/engine/cuda/tlm/emu.rs
// loads this shared library; scripts/tlm-emu.sh builds it).
#include "shim.h"
#include "../../kernels/tlm.cu"

// Kernel k (order of src/engine/cuda/tlm/abi.rs KERNELS) on grid x block.
extern "C" int emu_tlm_launch(int k, unsigned grid, unsigned block, const TlmPtrs* p, int a0, int a1) {
    const TlmPtrs P = *p;
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

// The launch shape the library was built for: node threads, nodes per thread, port threads, split gather.
extern "C" void emu_tlm_config(int* out) {
    out[0] = TLM_THREADS;
    out[1] = TLM_NPT;
    out[2] = TLM_PORT_THREADS;
    out[3] = TLM_SPLIT;
}
