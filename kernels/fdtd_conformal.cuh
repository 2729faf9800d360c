// Conformal metal (Dey & Mittra 1997): the faces that perfect cylinders,
// prisms, discs and polygons cut off the mesh lines, on the streaming path,
// in three kernels: fdtd_conformal (after fdtd_inject, before the lossy
// faces; one thread per cut face: its pending change added to its H),
// fdtd_conformal_e (one thread per E edge reading such a face: the changes
// gathered in the faces' order) and fdtd_conformal_rec (after the edge
// currents, once E(n+1) is final: each face's change for the next step,
// the weighted sum of its four edges). CPU twins: cpu.rs fdtd_conformal,
// fdtd_conformal_e, fdtd_conformal_rec (src/engine/fdtd/conformal.rs,
// where the model and every table are written down). Same f32 operations in
// the same order (--fmad=false).

extern "C" __global__ void __launch_bounds__(EMV_SURF_THREADS) fdtd_conformal(ConformalPtrs X) {
    const int m = blockIdx.x * blockDim.x + threadIdx.x;
    if (m >= X.n_terms) return;
    const int d = X.design[m];
    if (!X.active[d]) return;
    float* h = X.h[X.comp[m]] + X.designs[d].off + X.idx[m];
    *h = *h + X.pending[m];
}

extern "C" __global__ void __launch_bounds__(EMV_SURF_THREADS) fdtd_conformal_e(ConformalPtrs X) {
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= X.n_reads) return;
    const int d = X.e_design[j];
    if (!X.active[d]) return;
    float* e = X.e[X.e_comp[j]] + X.designs[d].off + X.e_idx[j];
    float v = *e;
    for (int k = X.e_first[j]; k < X.e_first[j + 1]; ++k) {
        v = v + X.e_w[k] * X.pending[X.e_term[k]];
    }
    *e = v;
}

extern "C" __global__ void __launch_bounds__(EMV_SURF_THREADS) fdtd_conformal_rec(ConformalPtrs X) {
    const int m = blockIdx.x * blockDim.x + threadIdx.x;
    if (m >= X.n_terms) return;
    const int d = X.design[m];
    if (!X.active[d]) return;
    const long long off = X.designs[d].off;
    float v = 0.0f;
    for (int k = 4 * m; k < 4 * m + 4; ++k) {
        v = v + X.src_w[k] * X.e[X.src_comp[k]][off + X.src_idx[k]];
    }
    X.pending[m] = v;
}
