// The streaming FDTD module's per-step port, energy and DFT kernels:
// fdtd_inject, fdtd_sample_ports, fdtd_energy, fdtd_dft. Included by
// kernels/fdtd.cu after the fused step; compiled as part of that one NVRTC
// module (their order there is the launch index order, abi::KERNELS).

// ---------------------------------------------------------------------------
// Ports.

// CPU twin: cpu.rs fdtd_inject. One thread per source point of the driven
// ports: E += coef * g (lumped: coef = -src, g = Vs/len; guide: coef = amp).
extern "C" __global__ void __launch_bounds__(EMV_INJECT_THREADS) fdtd_inject(PortPtrs Q, int step) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= Q.n_src) return;
    const int d = Q.src_design[t];
    if (!Q.active[d]) return;
    const float g = Q.gval[(long long)d * Q.gstride + step];
    float* e = Q.e[Q.src_comp[t]] + Q.designs[d].off + Q.src_idx[t];
    *e = *e + Q.src_coef[t] * g;
}

// CPU twin: cpu.rs fdtd_sample_ports. One block per port; V and I in f64.
extern "C" __global__ void __launch_bounds__(EMV_SAMPLE_THREADS) fdtd_sample_ports(PortPtrs Q, int step) {
    __shared__ double sv[EMV_SAMPLE_THREADS];
    __shared__ double si[EMV_SAMPLE_THREADS];
    const FdtdPort* port = Q.ports + blockIdx.x;
    const int d = port->design;
    if (!Q.active[d]) return;  // block-uniform
    const long long off = Q.designs[d].off;
    const int kind = port->kind;
    const int n = port->n_terms;
    const int t0 = port->term_off;
    double v = 0.0, i = 0.0;
    if (kind == 0) {
        const float* e = Q.e[port->comp_e] + off;
        for (int m = threadIdx.x; m < n; m += EMV_SAMPLE_THREADS) v += Q.t_w[t0 + m] * (double)e[Q.t_idx0[t0 + m]];
    } else {
        const float* e = Q.e[port->comp_e] + off;
        const float* h = Q.h[port->comp_h] + off;
        for (int m = threadIdx.x; m < n; m += EMV_SAMPLE_THREADS) {
            const double w = Q.t_w[t0 + m];
            v += w * (double)e[Q.t_idx0[t0 + m]];
            i += w * 0.5 * ((double)h[Q.t_idx1[t0 + m]] + (double)h[Q.t_idx2[t0 + m]]);
        }
    }
    sv[threadIdx.x] = v;
    si[threadIdx.x] = i;
    __syncthreads();
    for (int s = EMV_SAMPLE_THREADS / 2; s > 0; s >>= 1) {
        if ((int)threadIdx.x < s) {
            sv[threadIdx.x] += sv[threadIdx.x + s];
            si[threadIdx.x] += si[threadIdx.x + s];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        double V, I;
        if (kind == 0) {
            const int c = port->comp_e;
            const float* ha = Q.h[(c + 1) % 3] + off;
            const float* hb = Q.h[(c + 2) % 3] + off;
            const int p = port->mid;
            V = -sv[0] * port->dl;
            I = ((double)hb[p] - (double)hb[p - port->s_a]) * port->d_b - ((double)ha[p] - (double)ha[p - port->s_b]) * port->d_a;
        } else {
            V = sv[0];
            I = port->i_sign * si[0];
        }
        const long long o = (long long)blockIdx.x * Q.tstride + step;
        Q.tv[o] = V;
        Q.ti[o] = I;
    }
}

// ---------------------------------------------------------------------------
// CPU twin: cpu.rs fdtd_energy. Per design: out[2d] += sum eps E^2,
// out[2d+1] += sum H^2 over every array position (f64; the host multiplies
// by eps0 and mu0). out must be zeroed first.
extern "C" __global__ void __launch_bounds__(EMV_NT) fdtd_energy(FdtdPtrs P, double* out) {
    __shared__ double se[EMV_NT];
    __shared__ double sh[EMV_NT];
    Dctx K;
    Blk B;
    load_ctx(P, K, B);
    const int tid = threadIdx.y * EMV_TX + threadIdx.x;
    const int qx = B.X0 + threadIdx.x;
    const int qy = B.Y0 + threadIdx.y;
    double ae = 0.0, ah = 0.0;
    if (qx < B.X1 && qy < B.Y1) {
        // Relative lengths of the column along x and y (primal: H side, dual: E side).
        const float xp = P.rel_h[K.line[0] + qx], xd = P.rel_e[K.line[0] + qx];
        const float yp = P.rel_h[K.line[1] + qy], yd = P.rel_e[K.line[1] + qy];
        for (int qz = B.z0; qz < B.z1; ++qz) {
            const long long p = K.off + qx + (long long)qy * K.s1 + (long long)qz * K.s2;
            const float zp = P.rel_h[K.line[2] + qz], zd = P.rel_e[K.line[2] + qz];
            // Each sample weighted by its own cell's volume: E_c primal along c,
            // dual across; H_c the other way round (cpu.rs fdtd_energy).
            const double we[3] = {(double)xp * (double)yd * (double)zd, (double)xd * (double)yp * (double)zd, (double)xd * (double)yd * (double)zp};
            const double wh[3] = {(double)xd * (double)yp * (double)zp, (double)xp * (double)yd * (double)zp, (double)xp * (double)yp * (double)zd};
#pragma unroll
            for (int c = 0; c < 3; ++c) {
                const double x = (double)P.e[c][p];
                ae += (double)P.eps[K.coef + P.mat[c][p]] * x * x * we[c];
                const double y = (double)P.h[c][p];
                ah += y * y * wh[c];
            }
        }
    }
    se[tid] = ae;
    sh[tid] = ah;
    __syncthreads();
    for (int s = EMV_NT / 2; s > 0; s >>= 1) {
        if (tid < s) {
            se[tid] += se[tid + s];
            sh[tid] += sh[tid + s];
        }
        __syncthreads();
    }
    if (tid == 0) {
        const int d = P.blocks[2 * blockIdx.x];
        atomicAdd(out + 2 * d, se[0]);
        atomicAdd(out + 2 * d + 1, sh[0]);
    }
}

// ---------------------------------------------------------------------------
// Field DFT monitors.

// CPU twin: cpu.rs fdtd_dft (dft.rs FieldDftMonitor::accumulate). One thread
// per sample of every monitor component of the batch: the mean of its taps
// (f64, in the CPU's order), times each frequency's phase factor of this step.
extern "C" __global__ void __launch_bounds__(EMV_DFT_THREADS) fdtd_dft(DftPtrs D, int step) {
    const long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= D.n_samples) return;
    const FdtdDftComp c = D.comps[D.sample_comp[g]];
    if (!D.active[c.design]) return;
    const long long s = g - c.sample_off;
    const float* f = (c.field < 3 ? D.e[c.field] : D.h[c.field - 3]) + D.designs[c.design].off;
    const int* t = D.tap + c.tap_off + s * c.taps;
    double x = 0.0;
    for (int k = 0; k < c.taps; ++k) x += (double)f[t[k]];
    x = x / (double)c.taps;
    const int hp = c.field < 3 ? 0 : 2;
    for (int q = 0; q < c.nf; ++q) {
        const double* ph = D.phase + ((long long)(c.slot + q) * D.pstride + step) * 4 + hp;
        const long long o = c.acc_off + (long long)q * c.n_samples + s;
        D.acc_re[o] = D.acc_re[o] + ph[0] * x;
        D.acc_im[o] = D.acc_im[o] + ph[1] * x;
    }
}

