// On-chip FDTD path: one thread block holds one whole design in shared
// memory and advances it a chunk of steps per launch (the stepping loop's
// chunk), with the driven port's source and the port monitor inside the
// loop; only the port samples (per step) and, at the chunk end, the fields
// and the energy go through global memory. For the GA's small designs
// (2.5D iris filters: a few thousand cells, thousands of steps), which the
// streaming kernels of fdtd.cu run at launch latency.
//
// CPU twins (src/engine/fdtd/cpu.rs): fdtd_onchip = fdtd_step + fdtd_inject
// + fdtd_sample_ports per step, fdtd_energy at the end; the per-cell
// arithmetic is fdtd_cell.cuh, shared with fdtd.cu, so the fields are bit
// for bit the CPU engine's.
//
// Storage: each component over the padded positions q = 1..dims-1 of every
// axis (the ghost layer q = 0 is left out: E there is never read by the H
// update, H there is a PMC mirror, taken as -H at q = 1, or a ghost never
// written, read from the global pool). Index (q0-1) + m0 ((q1-1) + m1 (q2-1)),
// m = dims - 1. The host (src/engine/cuda/onchip.rs, onchip_bytes) computes
// the same layout to size the dynamic shared memory.
//
// Work: warps 0..W-2 update rows (a row = the x positions of one (y, z) of
// the storage, lanes along x); the last warp is the port warp: it injects
// the sources between the E update and the next H update, samples the
// currents (H) while the others update E and the voltages (E) while they
// update H of the next step, one port per lane, terms summed in the CPU's
// order (bit-identical port traces).

#include "common.cuh"
#include "fdtd_cell.cuh"

#ifndef EMV_OC_NT
#define EMV_OC_NT 1024
#endif
#define EMV_OC_WARPS (EMV_OC_NT / 32)
#define EMV_OC_UW (EMV_OC_WARPS - 1)
// Coefficient table entries reserved (FdtdDesign::ncoef <= 256).
#define EMV_OC_NCOEF 256

#ifdef EMV_EMU
#define EMV_OC_SMEM unsigned char* smem = emu_dyn_smem();
#else
#define EMV_OC_SMEM                                              \
    extern __shared__ __align__(16) unsigned char emv_oc_smem[]; \
    unsigned char* smem = emv_oc_smem;
#endif

// One design as the block sees it.
struct Oc {
    long long off;
    long long psi_base;
    int n[3];
    int dims[3];
    int m[3];
    int sa[3];
    int ls;
    int npsi;
    int coef;
    int ncoef;
    int pmc;
    int prof[3];
    int slab_n[3];
    int line[3];
    float db;
    const long long* psi_off;
};

// Stored positions (a multiple of 4) and CPML memory elements of a design.
__device__ __forceinline__ void oc_sizes(const FdtdDesign* D, int& ls, int& npsi, long long& psi_base) {
    ls = ((D->dims[0] - 1) * (D->dims[1] - 1) * (D->dims[2] - 1) + 3) & ~3;
    npsi = 0;
    psi_base = -1;
    for (int c = 0; c < 3; ++c)
        for (int a = 0; a < 3; ++a)
            if (D->psi_off[c * 3 + a] >= 0) {
                if (psi_base < 0) psi_base = D->psi_off[c * 3 + a];
                npsi += D->slab_n[a] * D->dims[(a + 1) % 3] * D->dims[(a + 2) % 3];
            }
    if (psi_base < 0) psi_base = 0;
}

// Storage index of padded position p (relative to the design).
__device__ __forceinline__ int oc_store(const Oc& K, int p) {
    const int qx = p % K.dims[0];
    const int r = p / K.dims[0];
    const int qy = r % K.dims[1];
    const int qz = r / K.dims[1];
    return (qx - 1) + K.m[0] * ((qy - 1) + K.m[1] * (qz - 1));
}

// The CPML stretching of the derivative t along axis A of component C at
// padded position q (cpu.rs stretch(); fdtd.cu prof_at + stretch): the
// profile of the E (node) or H (half-node) side, the memory in psi.
template <int C, int A>
__device__ __forceinline__ float oc_stretch(const Oc& K, const FdtdPtrs& P, float t, const int q[3], bool e_side, float* psi) {
    if (K.prof[A] < 0) return t;
    const int qa = q[A];
    if (qa < 1 || qa > K.n[A] + (e_side ? 1 : 0)) return t;
    const int i = K.prof[A] + qa - 1;
    const int sl = (e_side ? P.slab_e : P.slab_h)[i];
    if (sl < 0) return t;
    const float b = (e_side ? P.pe_b : P.ph_b)[i];
    const float c = (e_side ? P.pe_c : P.ph_c)[i];
    const float k = (e_side ? P.pe_k : P.ph_k)[i];
    int qq[3] = {q[0], q[1], q[2]};
    int cd[3] = {K.dims[0], K.dims[1], K.dims[2]};
    qq[A] = sl;
    cd[A] = K.slab_n[A];
    const long long x = K.psi_off[C * 3 + A] - K.psi_base + qq[0] + (long long)cd[0] * (qq[1] + (long long)cd[1] * qq[2]);
    float s = psi[x];
    const float r = emv_stretch(t, b, c, k, s);
    psi[x] = s;
    return r;
}

// H_c at storage s, padded q (cpu.rs fdtd_update_h), in place; on a PMC
// face the ghost beyond it mirrors the new value (cpu.rs fdtd_pmc_ghosts).
template <int C>
__device__ __forceinline__ void oc_h(const Oc& K, const FdtdPtrs& P, float* const* sE, float* const* sH, float* psiH, const int q[3], int s, const float ih[3]) {
    constexpr int A = (C + 1) % 3;
    constexpr int B = (C + 2) % 3;
#pragma unroll
    for (int a = 0; a < 3; ++a) {
        const int hi = a == C ? K.n[a] + 1 : K.n[a];
        if (q[a] < 1 || q[a] > hi) return;
    }
    float t1 = (sE[B][s + K.sa[A]] - sE[B][s]) * ih[A];
    float t2 = (sE[A][s + K.sa[B]] - sE[A][s]) * ih[B];
    t1 = oc_stretch<C, A>(K, P, t1, q, false, psiH);
    t2 = oc_stretch<C, B>(K, P, t2, q, false, psiH);
    const float h = emv_h_new(sH[C][s], K.db, t1, t2);
    sH[C][s] = h;
#pragma unroll
    for (int a = 0; a < 3; ++a)
        if (a != C && q[a] == K.n[a] && ((K.pmc >> (2 * a + 1)) & 1)) sH[C][s + K.sa[a]] = -h;
}

// H_X one position below s along axis a: the ghost q[a] = 0 is the PMC
// mirror of q[a] = 1 or, elsewhere, the never-written value in the pool.
__device__ __forceinline__ float oc_h_below(const Oc& K, const FdtdPtrs& P, float* const* sH, int X, int a, const int q[3], int s) {
    if (q[a] > 1) return sH[X][s - K.sa[a]];
    if ((K.pmc >> (2 * a)) & 1) return -sH[X][s];
    int qq[3] = {q[0], q[1], q[2]};
    qq[a] = 0;
    return P.h[X][K.off + qq[0] + (long long)K.dims[0] * (qq[1] + (long long)K.dims[1] * qq[2])];
}

// E_c at storage s, padded q (cpu.rs fdtd_update_e), in place.
template <int C>
__device__ __forceinline__ void oc_e(const Oc& K, const FdtdPtrs& P, float* const* sE, float* const* sH, const unsigned char* sM, const float* sCa, const float* sCb, float* psiE, const int q[3], int s, const float ie[3]) {
    constexpr int A = (C + 1) % 3;
    constexpr int B = (C + 2) % 3;
#pragma unroll
    for (int a = 0; a < 3; ++a) {
        const int hi = a == C ? K.n[a] : K.n[a] + 1;
        if (q[a] < 1 || q[a] > hi) return;
    }
    float t1 = (sH[B][s] - oc_h_below(K, P, sH, B, A, q, s)) * ie[A];
    float t2 = (sH[A][s] - oc_h_below(K, P, sH, A, B, q, s)) * ie[B];
    t1 = oc_stretch<C, A>(K, P, t1, q, true, psiE);
    t2 = oc_stretch<C, B>(K, P, t2, q, true, psiE);
    const int m = sM[C * K.ls + s];
    sE[C][s] = emv_e_new(sE[C][s], sCa[m], sCb[m], t1, t2);
}

// The port warp's samples (cpu.rs fdtd_sample_ports, the same order of
// terms): voltages from E, currents from H, of port p at step s.
__device__ __forceinline__ void oc_sample_v(const PortPtrs& Q, float* const* sE, const int* sT, int term0, int p, int s) {
    const FdtdPort* port = Q.ports + p;
    const float* e = sE[port->comp_e];
    const int t0 = port->term_off;
    double v = 0.0;
    for (int m = 0; m < port->n_terms; ++m) v += Q.t_w[t0 + m] * (double)e[sT[t0 - term0 + m]];
    Q.tv[(long long)p * Q.tstride + s] = port->kind == 0 ? -v * port->dl : v;
}

__device__ __forceinline__ void oc_sample_i(const Oc& K, const PortPtrs& Q, float* const* sH, const int* sT, int nterm, const int* sMid, int term0, int p, int pb, int s) {
    const FdtdPort* port = Q.ports + p;
    double I;
    if (port->kind == 0) {
        const int c = port->comp_e;
        const int a = (c + 1) % 3, b = (c + 2) % 3;
        const float* ha = sH[a];
        const float* hb = sH[b];
        const int mid = sMid[p - pb];
        I = ((double)hb[mid] - (double)hb[mid - K.sa[a]]) * port->d_b - ((double)ha[mid] - (double)ha[mid - K.sa[b]]) * port->d_a;
    } else {
        const float* h = sH[port->comp_h];
        const int t0 = port->term_off - term0;
        double i = 0.0;
        for (int m = 0; m < port->n_terms; ++m) i += Q.t_w[port->term_off + m] * 0.5 * ((double)h[sT[nterm + t0 + m]] + (double)h[sT[2 * nterm + t0 + m]]);
        I = port->i_sign * i;
    }
    Q.ti[(long long)p * Q.tstride + s] = I;
}

// k steps of the designs P.blocks[2b] (one block each), from the field set
// of P (updated in place, psi_e and psi_h too). idx[4d..4d+4]: the design's
// ports [pb, pe) and sources [sb, se) in Q's tables. flags bit 0: the CPML
// memories live in shared memory (else in the pools). energy[2d], [2d+1]:
// sum eps E^2, sum H^2 (weighted as fdtd_energy) after the k steps.
extern "C" __global__ void __launch_bounds__(EMV_OC_NT, 1) fdtd_onchip(FdtdPtrs P, PortPtrs Q, const int* idx, int k, int flags, double* energy) {
    EMV_OC_SMEM
    const int tid = threadIdx.x;
    const int warp = tid >> 5;
    const int lane = tid & 31;
    const int d = P.blocks[2 * blockIdx.x];
    const FdtdDesign* D = P.designs + d;
    Oc K;
    K.off = D->off;
    oc_sizes(D, K.ls, K.npsi, K.psi_base);
    for (int a = 0; a < 3; ++a) {
        K.n[a] = D->n[a];
        K.dims[a] = D->dims[a];
        K.m[a] = D->dims[a] - 1;
        K.prof[a] = D->prof_off[a];
        K.slab_n[a] = D->slab_n[a];
        K.line[a] = D->line_off[a];
    }
    K.sa[0] = 1;
    K.sa[1] = K.m[0];
    K.sa[2] = K.m[0] * K.m[1];
    K.coef = D->coef_off;
    K.ncoef = D->ncoef;
    K.pmc = D->pmc;
    K.db = D->db;
    K.psi_off = D->psi_off;
    const int pb = idx[4 * d], pe = idx[4 * d + 1], sb = idx[4 * d + 2], se = idx[4 * d + 3];
    const int term0 = pe > pb ? Q.ports[pb].term_off : 0;
    const int nterm = pe > pb ? Q.ports[pe - 1].term_off + Q.ports[pe - 1].n_terms - term0 : 0;
    const int nsrc = se - sb;
    const bool psi_sh = flags & 1;
    const int ls = K.ls;

    // Carve the shared memory (onchip.rs onchip_bytes: the same order and sizes).
    float* base = (float*)smem;
    float* const sE[3] = {base, base + ls, base + 2 * ls};
    float* const sH[3] = {base + 3 * ls, base + 4 * ls, base + 5 * ls};
    float* sCa = base + 6 * ls;
    float* sCb = sCa + EMV_OC_NCOEF;
    float* sG = sCb + EMV_OC_NCOEF;
    float* sPsi = sG + Q.gstride;
    int* sT = (int*)(sPsi + (psi_sh ? 2 * K.npsi : 0));
    int* sSrc = sT + 3 * nterm;
    int* sMid = sSrc + nsrc;
    unsigned char* sM = (unsigned char*)(sMid + (pe - pb));
    float* psiE = psi_sh ? sPsi : P.psi_e + K.psi_base;
    float* psiH = psi_sh ? sPsi + K.npsi : P.psi_h + K.psi_base;

    // Load: fields and materials of the stored positions, tables.
    const int nst = K.m[0] * K.m[1] * K.m[2];
    for (int s = tid; s < nst; s += EMV_OC_NT) {
        const int x = s % K.m[0];
        const int r = s / K.m[0];
        const int y = r % K.m[1];
        const int z = r / K.m[1];
        const long long p = K.off + (x + 1) + (long long)K.dims[0] * ((y + 1) + (long long)K.dims[1] * (z + 1));
#pragma unroll
        for (int c = 0; c < 3; ++c) {
            sE[c][s] = P.e[c][p];
            sH[c][s] = P.h[c][p];
            sM[c * ls + s] = P.mat[c][p];
        }
    }
    for (int i = tid; i < K.ncoef; i += EMV_OC_NT) {
        sCa[i] = P.ca[K.coef + i];
        sCb[i] = P.cb[K.coef + i];
    }
    for (int i = tid; i < k; i += EMV_OC_NT) sG[i] = Q.gval[(long long)d * Q.gstride + i];
    if (psi_sh) {
        for (int i = tid; i < K.npsi; i += EMV_OC_NT) {
            sPsi[i] = P.psi_e[K.psi_base + i];
            sPsi[K.npsi + i] = P.psi_h[K.psi_base + i];
        }
    }
    for (int i = tid; i < nterm; i += EMV_OC_NT) {
        sT[i] = oc_store(K, Q.t_idx0[term0 + i]);
        sT[nterm + i] = oc_store(K, Q.t_idx1[term0 + i]);
        sT[2 * nterm + i] = oc_store(K, Q.t_idx2[term0 + i]);
    }
    for (int i = tid; i < nsrc; i += EMV_OC_NT) sSrc[i] = oc_store(K, Q.src_idx[sb + i]);
    for (int i = tid; i < pe - pb; i += EMV_OC_NT) sMid[i] = oc_store(K, Q.ports[pb + i].mid);
    __syncthreads();

    const int rows = K.m[1] * K.m[2];
    for (int st = 0; st < k; ++st) {
        // H half step (and the PMC ghosts above); the port warp samples the
        // voltages of the previous step (E is not written in this phase).
        if (warp < EMV_OC_UW) {
            for (int r = warp; r < rows; r += EMV_OC_UW) {
                const int qy = r % K.m[1] + 1;
                const int qz = r / K.m[1] + 1;
                const float ihy = P.inv_h[K.line[1] + qy];
                const float ihz = P.inv_h[K.line[2] + qz];
                for (int x = lane; x < K.m[0]; x += 32) {
                    const int q[3] = {x + 1, qy, qz};
                    const float ih[3] = {P.inv_h[K.line[0] + x + 1], ihy, ihz};
                    const int s = x + K.m[0] * r;
                    oc_h<0>(K, P, sE, sH, psiH, q, s, ih);
                    oc_h<1>(K, P, sE, sH, psiH, q, s, ih);
                    oc_h<2>(K, P, sE, sH, psiH, q, s, ih);
                }
            }
        } else if (st > 0) {
            for (int p = pb + lane; p < pe; p += 32) oc_sample_v(Q, sE, sT, term0, p, st - 1);
        }
        __syncthreads();
        // E full step; the port warp samples the currents of this step.
        if (warp < EMV_OC_UW) {
            for (int r = warp; r < rows; r += EMV_OC_UW) {
                const int qy = r % K.m[1] + 1;
                const int qz = r / K.m[1] + 1;
                const float iey = P.inv_e[K.line[1] + qy];
                const float iez = P.inv_e[K.line[2] + qz];
                for (int x = lane; x < K.m[0]; x += 32) {
                    const int q[3] = {x + 1, qy, qz};
                    const float ie[3] = {P.inv_e[K.line[0] + x + 1], iey, iez};
                    const int s = x + K.m[0] * r;
                    oc_e<0>(K, P, sE, sH, sM, sCa, sCb, psiE, q, s, ie);
                    oc_e<1>(K, P, sE, sH, sM, sCa, sCb, psiE, q, s, ie);
                    oc_e<2>(K, P, sE, sH, sM, sCa, sCb, psiE, q, s, ie);
                }
            }
        } else {
            for (int p = pb + lane; p < pe; p += 32) oc_sample_i(K, Q, sH, sT, nterm, sMid, term0, p, pb, st);
        }
        __syncthreads();
        // The driven port's source (cpu.rs fdtd_inject; distinct points, checked by the host).
        if (warp == EMV_OC_UW) {
            const float g = sG[st];
            for (int i = lane; i < nsrc; i += 32) {
                float* e = sE[Q.src_comp[sb + i]] + sSrc[i];
                *e = *e + Q.src_coef[sb + i] * g;
            }
        }
        __syncthreads();
    }
    if (warp == EMV_OC_UW && k > 0) {
        for (int p = pb + lane; p < pe; p += 32) oc_sample_v(Q, sE, sT, term0, p, k - 1);
    }

    // Write back: fields, CPML memories, PMC ghosts of the low faces.
    for (int s = tid; s < nst; s += EMV_OC_NT) {
        const int x = s % K.m[0];
        const int r = s / K.m[0];
        const int y = r % K.m[1];
        const int z = r / K.m[1];
        const int q[3] = {x + 1, y + 1, z + 1};
        const long long p = K.off + q[0] + (long long)K.dims[0] * (q[1] + (long long)K.dims[1] * q[2]);
#pragma unroll
        for (int c = 0; c < 3; ++c) {
            P.e[c][p] = sE[c][s];
            P.h[c][p] = sH[c][s];
        }
        // cpu.rs fdtd_pmc_ghosts: H_c (c != a) in range, q[a] = 1, face a low a PMC.
        for (int a = 0; a < 3; ++a) {
            if (q[a] != 1 || !((K.pmc >> (2 * a)) & 1)) continue;
            const long long sa = a == 0 ? 1 : (a == 1 ? (long long)K.dims[0] : (long long)K.dims[0] * K.dims[1]);
            for (int c = 0; c < 3; ++c) {
                if (c == a) continue;
                bool in = true;
                for (int b = 0; b < 3; ++b) in = in && q[b] >= 1 && q[b] <= (b == c ? K.n[b] + 1 : K.n[b]);
                if (in) P.h[c][p - sa] = -sH[c][s];
            }
        }
    }
    if (psi_sh) {
        for (int i = tid; i < K.npsi; i += EMV_OC_NT) {
            P.psi_e[K.psi_base + i] = sPsi[i];
            P.psi_h[K.psi_base + i] = sPsi[K.npsi + i];
        }
    }
    __syncthreads();  // the pool holds the fields (global writes of the block visible)

    // Energy (fdtd.cu fdtd_energy, over every padded position of the pool).
    double* red = (double*)smem;
    double ae = 0.0, ah = 0.0;
    const int L = K.dims[0] * K.dims[1] * K.dims[2];
    for (int p = tid; p < L; p += EMV_OC_NT) {
        const int qx = p % K.dims[0];
        const int r = p / K.dims[0];
        const int qy = r % K.dims[1];
        const int qz = r / K.dims[1];
        const float xp = P.rel_h[K.line[0] + qx], xd = P.rel_e[K.line[0] + qx];
        const float yp = P.rel_h[K.line[1] + qy], yd = P.rel_e[K.line[1] + qy];
        const float zp = P.rel_h[K.line[2] + qz], zd = P.rel_e[K.line[2] + qz];
        const double we[3] = {(double)xp * (double)yd * (double)zd, (double)xd * (double)yp * (double)zd, (double)xd * (double)yd * (double)zp};
        const double wh[3] = {(double)xd * (double)yp * (double)zp, (double)xp * (double)yd * (double)zp, (double)xp * (double)yp * (double)zd};
#pragma unroll
        for (int c = 0; c < 3; ++c) {
            const double x = (double)P.e[c][K.off + p];
            ae += (double)P.eps[K.coef + P.mat[c][K.off + p]] * x * x * we[c];
            const double y = (double)P.h[c][K.off + p];
            ah += y * y * wh[c];
        }
    }
    red[tid] = ae;
    red[EMV_OC_NT + tid] = ah;
    __syncthreads();
    for (int s = EMV_OC_NT / 2; s > 0; s >>= 1) {
        if (tid < s) {
            red[tid] += red[tid + s];
            red[EMV_OC_NT + tid] += red[EMV_OC_NT + tid + s];
        }
        __syncthreads();
    }
    if (tid == 0) {
        energy[2 * d] = red[0];
        energy[2 * d + 1] = red[EMV_OC_NT];
    }
}
