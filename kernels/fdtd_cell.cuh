// The per-cell arithmetic of the Yee update, shared by the FDTD kernels
// (kernels/fdtd.cu, kernels/fdtd_onchip.cu). CPU twin: src/engine/fdtd/cpu.rs
// (stretch(), fdtd_update_h, fdtd_update_e), written in the same order; the
// host compiles with --fmad=false, so the products round as on the CPU and
// the fields agree bit for bit.

#ifndef EMV_FDTD_CELL_CUH
#define EMV_FDTD_CELL_CUH

// CPML-stretched derivative inside the layer (b > 0): psi = b psi + c t,
// result t / kappa + psi (kinv = 1 / kappa). cpu.rs stretch().
__device__ __forceinline__ float emv_stretch(float t, float b, float c, float kinv, float& psi) {
    const float s = b * psi + c * t;
    psi = s;
    return t * kinv + s;
}

// H_c -= db (t1 - t2): t1 = dE_B/dA, t2 = dE_A/dB, (A, B) cyclic after c.
__device__ __forceinline__ float emv_h_new(float h, float db, float t1, float t2) { return h - db * (t1 - t2); }

// E_c = ca E_c + cb (t1 - t2): t1 = dH_B/dA, t2 = dH_A/dB.
__device__ __forceinline__ float emv_e_new(float e, float ca, float cb, float t1, float t2) { return ca * e + cb * (t1 - t2); }

#endif
