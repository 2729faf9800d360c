// The edge currents of dispersive media and lumped loads (fdtd_edges),
// launched after fdtd_inject and before fdtd_sample_ports on the streaming
// path. CPU twin: cpu.rs fdtd_edges (src/engine/fdtd/edges.rs apply, where
// the model and the meaning of every table are written down). One thread per
// listed edge; its poles are its own, so no two threads share a memory.
// Same f32 operations in the same order as the twin (--fmad=false).

extern "C" __global__ void __launch_bounds__(EMV_EDGE_THREADS) fdtd_edges(EdgePtrs X) {
    const int m = blockIdx.x * blockDim.x + threadIdx.x;
    if (m >= X.n_edges) return;
    const int d = X.design[m];
    if (!X.active[d]) return;
    float* e = X.e[X.comp[m]] + X.designs[d].off + X.idx[m];
    const float en = X.e_prev[m];
    const int k0 = X.first[m], k1 = X.first[m + 1];
    float acc = X.g0[m] * en;
    for (int k = k0; k < k1; ++k) {
        acc = acc + ((X.kp[k] * X.p[k] + X.kd[k] * X.dd[k]) + X.q0[k] * en);
    }
    const float en1 = (*e - X.s[m] * acc) * X.inv_den[m];
    for (int k = k0; k < k1; ++k) {
        const float dn = ((X.kp[k] * X.p[k] + X.kd[k] * X.dd[k]) + X.q0[k] * en) + X.q1[k] * en1;
        X.p[k] = X.p[k] + dn;
        X.dd[k] = dn;
    }
    *e = en1;
    X.e_prev[m] = en1;
}
