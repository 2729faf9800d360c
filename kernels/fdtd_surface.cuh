// The surface impedance of lossy metal faces, launched after fdtd_inject
// and before fdtd_edges on the streaming path, in two halves: fdtd_surface
// (one thread per H node beside a lossy face: its new H, its memories, its
// change dh) and fdtd_surface_e (one thread per E edge reading such a node:
// the changes gathered in the nodes' order). Gathering rather than scattering
// (atomic adds) keeps the order of every sum, so the results are the twin's
// to the bit. CPU twins: cpu.rs fdtd_surface and fdtd_surface_e
// (src/engine/fdtd/surface.rs apply_h, apply_e, where the model and the
// meaning of every table are written down). Same f32 operations in the same
// order (--fmad=false).

extern "C" __global__ void __launch_bounds__(EMV_SURF_THREADS) fdtd_surface(SurfacePtrs X) {
    const int m = blockIdx.x * blockDim.x + threadIdx.x;
    if (m >= X.n_terms) return;
    const int d = X.design[m];
    if (!X.active[d]) return;
    float* h = X.h[X.comp[m]] + X.designs[d].off + X.idx[m];
    const int q0 = X.first[m], nq = X.first[m + 1] - q0, c0 = X.cell0[m];
    const float h_star = *h;
    const float h_old = X.h_prev[m];
    float rest = 0.0f;
    for (int q = 0; q < nq; ++q) {
        rest = rest + X.rho[c0 + q] * X.psi[q0 + q];
    }
    const float h_new = X.inv_den[m] * ((h_star - X.kb[m] * h_old) - X.k[m] * rest);
    const float dht = h_new - h_old;
    for (int q = 0; q < nq; ++q) {
        X.psi[q0 + q] = X.alpha[c0 + q] * X.psi[q0 + q] + X.beta[c0 + q] * dht;
    }
    X.h_prev[m] = h_new;
    *h = h_new;
    X.dh[m] = h_new - h_star;
}

extern "C" __global__ void __launch_bounds__(EMV_SURF_THREADS) fdtd_surface_e(SurfacePtrs X) {
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= X.n_reads) return;
    const int d = X.e_design[j];
    if (!X.active[d]) return;
    float* e = X.e[X.e_comp[j]] + X.designs[d].off + X.e_idx[j];
    float v = *e;
    for (int k = X.e_first[j]; k < X.e_first[j + 1]; ++k) {
        v = v + X.e_w[k] * X.dh[X.e_term[k]];
    }
    *e = v;
}
