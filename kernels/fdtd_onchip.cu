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
// Storage: each component over what the updates read of it, padded
// positions from q = 1: E_c up to its own update range (n along c, n + 1
// across); H_c up to n + 1 along c and, across, n, one more on a PMC face
// (its mirror ghost). The ghost layer q = 0 is left out (H there is the PMC
// mirror of q = 1, or a ghost never written, read from the pool), and so are
// the other never-written H ghosts at n + 1 (zero when the launch says so,
// else read from the pool). Index (q0-1) + M0 ((q1-1) + M1 (q2-1)) with the
// component's extents M. The CPML memories use the same extents across their
// axis and the slab positions along it. The host (src/engine/cuda/onchip.rs,
// onchip_bytes) computes the same layout to size the dynamic shared memory.
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
// Flags: the never-written H ghosts are zero (the run started from zero
// fields; per launch); the material indices stay in the pool (per design,
// when the shared memory has no room for them).
#define EMV_OC_GHOSTS_ZERO 2
#define EMV_OC_MAT_POOL 4

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
    int n[3];
    int dims[3];
    int pmc;
    int coef;
    int ncoef;
    float db;
    int prof[3];
    int slab_n[3];
    int line[3];
    // Extents of E_c and H_c per axis, their offsets in the field area (floats).
    int me[3][3];
    int mh[3][3];
    int eo[3];
    int ho[3];
    // Offsets of the per-line tables of each axis in sL (words), CPML memory regions
    // (floats from the start of sP, -1 none) per (component, axis).
    int lt[3];
    int pe[9];
    int ph[9];
    int flags;
};

__device__ __forceinline__ int oc_r4(int x) { return (x + 3) & ~3; }

// Extent along axis a of E_c (h = 0) or H_c (h = 1).
__device__ __forceinline__ int oc_ext(const FdtdDesign* D, int h, int c, int a) {
    if (h) return a == c ? D->n[a] + 1 : D->n[a] + ((D->pmc >> (2 * a + 1)) & 1);
    return a == c ? D->n[a] : D->n[a] + 1;
}

// The layout of design D (onchip.rs onchip_bytes: the same order and sizes).
// Returns the floats of the field area; psi: floats of the CPML memories
// (E then H regions); tab: words of the per-line tables.
__device__ __forceinline__ int oc_layout(const FdtdDesign* D, Oc& K, int& psi, int& tab) {
    int f = 0;
    for (int h = 0; h < 2; ++h)
        for (int c = 0; c < 3; ++c) {
            int sz = 1;
            for (int a = 0; a < 3; ++a) {
                const int m = oc_ext(D, h, c, a);
                if (h) K.mh[c][a] = m; else K.me[c][a] = m;
                sz *= m;
            }
            if (h) K.ho[c] = f; else K.eo[c] = f;
            f += oc_r4(sz);
        }
    psi = 0;
    for (int h = 0; h < 2; ++h)
        for (int c = 0; c < 3; ++c)
            for (int a = 0; a < 3; ++a) {
                int o = -1;
                if (D->psi_off[c * 3 + a] >= 0) {
                    int sz = D->slab_n[a];
                    for (int b = 0; b < 3; ++b)
                        if (b != a) sz *= oc_ext(D, h, c, b);
                    o = psi;
                    psi += oc_r4(sz);
                }
                if (h) K.ph[c * 3 + a] = o; else K.pe[c * 3 + a] = o;
            }
    tab = 0;
    for (int a = 0; a < 3; ++a) {
        K.lt[a] = tab;
        tab += oc_r4(D->dims[a]) * (D->prof_off[a] >= 0 ? 10 : 2);
    }
    return f;
}

// What the step loop reads of the layout, in registers (the shared copy K
// costs a shared-memory load per use: the loop would be bound by those).
// The extents follow from n and the PMC faces (oc_ext).
struct Hot {
    int n[3];
    int pmc;
    int flags;
    float db;
    int eo[3];
    int ho[3];
    int lt[3];
    int w[3];
    int prof[3];
    long long off;
    int dims[3];
};

template <int C, int A>
__device__ __forceinline__ int me(const Hot& R) { return A == C ? R.n[A] : R.n[A] + 1; }
template <int C, int A>
__device__ __forceinline__ int mh(const Hot& R) { return A == C ? R.n[A] + 1 : R.n[A] + ((R.pmc >> (2 * A + 1)) & 1); }

// Storage index of padded q in E_C's (h = false) or H_C's extents.
template <int C, bool H>
__device__ __forceinline__ int oc_at(const Hot& R, int q0, int q1, int q2) {
    const int m0 = H ? mh<C, 0>(R) : me<C, 0>(R);
    const int m1 = H ? mh<C, 1>(R) : me<C, 1>(R);
    return (q0 - 1) + m0 * ((q1 - 1) + m1 * (q2 - 1));
}
// Stride along axis A in E_C's / H_C's storage.
template <int C, bool H, int A>
__device__ __forceinline__ int oc_st(const Hot& R) {
    if (A == 0) return 1;
    const int m0 = H ? mh<C, 0>(R) : me<C, 0>(R);
    if (A == 1) return m0;
    return m0 * (H ? mh<C, 1>(R) : me<C, 1>(R));
}

// Per-line tables of axis a at padded q (words from lt[a], dims rounded to 4 = w):
// [0, w) 1/dual spacing (E side), [w, 2w) 1/primal (H side); with PML on the
// axis: slab number E, H (ints), b, c, 1/kappa of the E side, of the H side.
struct OcLine {
    float inv;
    int sl;
    float b;
    float c;
    float k;
};

template <int A>
__device__ __forceinline__ OcLine oc_line(const Hot& R, const float* sL, int q, bool e_side) {
    const int w = R.w[A];
    const float* t = sL + R.lt[A];
    OcLine r;
    r.inv = t[(e_side ? 0 : w) + q];
    r.sl = -1;
    r.b = 0.f;
    r.c = 0.f;
    r.k = 1.f;
    if (R.prof[A] >= 0) {
        r.sl = __float_as_int(t[(e_side ? 2 : 3) * w + q]);
        if (r.sl >= 0) {
            const int o = e_side ? 4 : 7;
            r.b = t[o * w + q];
            r.c = t[(o + 1) * w + q];
            r.k = t[(o + 2) * w + q];
        }
    }
    return r;
}

// Storage index of padded q in extents m (q >= 1 on every axis).
__device__ __forceinline__ int oc_idx(const int m[3], int q0, int q1, int q2) { return (q0 - 1) + m[0] * ((q1 - 1) + m[1] * (q2 - 1)); }

// Absolute index in the field area of padded position p (relative to the
// design) of E_c (h = 0) or H_c (h = 1); the host checked it is stored.
__device__ __forceinline__ int oc_store(const Oc& K, int h, int c, int p) {
    const int qx = p % K.dims[0];
    const int r = p / K.dims[0];
    const int qy = r % K.dims[1];
    const int qz = r / K.dims[1];
    int m[3] = {1, 1, 1}, o = 0;
    for (int cc = 0; cc < 3; ++cc)
        if (cc == c) {
            for (int a = 0; a < 3; ++a) m[a] = h ? K.mh[cc][a] : K.me[cc][a];
            o = h ? K.ho[cc] : K.eo[cc];
        }
    return o + oc_idx(m, qx, qy, qz);
}

// The CPML stretching of the derivative t along axis A of component C
// (cpu.rs stretch()); ln: the line data of q[A] (sl >= 0: inside the slab);
// the memory region of (C, A) from K (pe / ph), extents of the component.
template <int C, int A, bool H>
__device__ __forceinline__ float oc_stretch(const Hot& R, const Oc& K, float t, const OcLine& ln, const int q[3], float* psi) {
    if (ln.sl < 0) return t;
    const int e0 = A == 0 ? K.slab_n[0] : (H ? mh<C, 0>(R) : me<C, 0>(R));
    const int e1 = A == 1 ? K.slab_n[1] : (H ? mh<C, 1>(R) : me<C, 1>(R));
    const int x0 = A == 0 ? ln.sl : q[0] - 1;
    const int x1 = A == 1 ? ln.sl : q[1] - 1;
    const int x2 = A == 2 ? ln.sl : q[2] - 1;
    float* ps = psi + (H ? K.ph[C * 3 + A] : K.pe[C * 3 + A]) + x0 + e0 * (x1 + e1 * x2);
    float s = *ps;
    const float r = emv_stretch(t, ln.b, ln.c, ln.k, s);
    *ps = s;
    return r;
}

// H_c at padded q (cpu.rs fdtd_update_h), in place; on a PMC face the ghost
// beyond it mirrors the new value (cpu.rs fdtd_pmc_ghosts).
template <int C>
__device__ __forceinline__ void oc_h(const Hot& R, const Oc& K, float* F, float* psi, const int q[3], const OcLine* lh) {
    constexpr int A = (C + 1) % 3;
    constexpr int B = (C + 2) % 3;
#pragma unroll
    for (int a = 0; a < 3; ++a) {
        const int hi = a == C ? R.n[a] + 1 : R.n[a];
        if (q[a] > hi) return;
    }
    const int sB = R.eo[B] + oc_at<B, false>(R, q[0], q[1], q[2]);
    const int sA = R.eo[A] + oc_at<A, false>(R, q[0], q[1], q[2]);
    float t1 = (F[sB + oc_st<B, false, A>(R)] - F[sB]) * lh[A].inv;
    float t2 = (F[sA + oc_st<A, false, B>(R)] - F[sA]) * lh[B].inv;
    t1 = oc_stretch<C, A, true>(R, K, t1, lh[A], q, psi);
    t2 = oc_stretch<C, B, true>(R, K, t2, lh[B], q, psi);
    const int s = R.ho[C] + oc_at<C, true>(R, q[0], q[1], q[2]);
    const float h = emv_h_new(F[s], R.db, t1, t2);
    F[s] = h;
    if (R.pmc) {
        if (A != C && q[A] == R.n[A] && ((R.pmc >> (2 * A + 1)) & 1)) F[s + oc_st<C, true, A>(R)] = -h;
        if (B != C && q[B] == R.n[B] && ((R.pmc >> (2 * B + 1)) & 1)) F[s + oc_st<C, true, B>(R)] = -h;
    }
}

// H_X at padded q read by an E update whose derivative runs along Ax: the
// position itself (below = false; at q[Ax] = n+1 a ghost: the stored PMC mirror,
// or a never-written ghost) or one below along Ax (below = true; at q[Ax] = 1
// the ghost q[Ax] = 0: -H at q[Ax] = 1 on a PMC face, else never written).
template <int X, int Ax>
__device__ __forceinline__ float oc_hread(const Hot& R, const FdtdPtrs& P, const float* F, const int q[3], bool below) {
    const int s = R.ho[X] + oc_at<X, true>(R, q[0], q[1], q[2]);
    int qq[3] = {q[0], q[1], q[2]};
    if (below) {
        if (q[Ax] > 1) return F[s - oc_st<X, true, Ax>(R)];
        if ((R.pmc >> (2 * Ax)) & 1) return -F[s];
        if (R.flags & EMV_OC_GHOSTS_ZERO) return 0.f;
        qq[Ax] = 0;
        return P.h[X][R.off + qq[0] + (long long)R.dims[0] * (qq[1] + (long long)R.dims[1] * qq[2])];
    }
    if (q[Ax] == R.n[Ax] + 1 && !((R.pmc >> (2 * Ax + 1)) & 1)) {
        if (R.flags & EMV_OC_GHOSTS_ZERO) return 0.f;
        return P.h[X][R.off + qq[0] + (long long)R.dims[0] * (qq[1] + (long long)R.dims[1] * qq[2])];
    }
    return F[s];
}

// E_c at padded q (cpu.rs fdtd_update_e), in place.
template <int C>
__device__ __forceinline__ void oc_e(const Hot& R, const Oc& K, const FdtdPtrs& P, float* F, const unsigned char* sM, const float* sCa, const float* sCb, float* psi, const int q[3], const OcLine* le) {
    constexpr int A = (C + 1) % 3;
    constexpr int B = (C + 2) % 3;
#pragma unroll
    for (int a = 0; a < 3; ++a) {
        const int hi = a == C ? R.n[a] : R.n[a] + 1;
        if (q[a] > hi) return;
    }
    float t1 = (oc_hread<B, A>(R, P, F, q, false) - oc_hread<B, A>(R, P, F, q, true)) * le[A].inv;
    float t2 = (oc_hread<A, B>(R, P, F, q, false) - oc_hread<A, B>(R, P, F, q, true)) * le[B].inv;
    t1 = oc_stretch<C, A, false>(R, K, t1, le[A], q, psi);
    t2 = oc_stretch<C, B, false>(R, K, t2, le[B], q, psi);
    const int s = R.eo[C] + oc_at<C, false>(R, q[0], q[1], q[2]);
    const int m = (R.flags & EMV_OC_MAT_POOL) ? P.mat[C][R.off + q[0] + (long long)R.dims[0] * (q[1] + (long long)R.dims[1] * q[2])] : sM[s];
    F[s] = emv_e_new(F[s], sCa[m], sCb[m], t1, t2);
}

// The port warp's samples (cpu.rs fdtd_sample_ports, the same order of
// terms), from shared memory only: absolute field-area indices of the terms
// (sT), their weights (sW), per port sPd = (dl, d_a, d_b, i_sign) and
// sPi = (kind, n_terms, first term relative to the design's first).
__device__ __forceinline__ void oc_sample_v(const PortPtrs& Q, const float* F, const int* sT, const double* sW, const double* sPd, const int* sPi, int i, int p, int s) {
    const int kind = sPi[3 * i], n = sPi[3 * i + 1], t0 = sPi[3 * i + 2];
    double v = 0.0;
#pragma unroll 4
    for (int m = 0; m < n; ++m) v += sW[t0 + m] * (double)F[sT[t0 + m]];
    Q.tv[(long long)p * Q.tstride + s] = kind == 0 ? -v * sPd[4 * i] : v;
}

__device__ __forceinline__ void oc_sample_i(const PortPtrs& Q, const float* F, const int* sT, int nterm, const double* sW, const double* sPd, const int* sPi, const int* sMid, int i, int p, int s) {
    const int kind = sPi[3 * i], n = sPi[3 * i + 1], t0 = sPi[3 * i + 2];
    double I;
    if (kind == 0) {
        const int* mi = sMid + 4 * i;  // H_b at mid, below along a; H_a at mid, below along b
        I = ((double)F[mi[0]] - (double)F[mi[1]]) * sPd[4 * i + 2] - ((double)F[mi[2]] - (double)F[mi[3]]) * sPd[4 * i + 1];
    } else {
        double a = 0.0;
#pragma unroll 4
        for (int m = 0; m < n; ++m) a += sW[t0 + m] * 0.5 * ((double)F[sT[nterm + t0 + m]] + (double)F[sT[2 * nterm + t0 + m]]);
        I = sPd[4 * i + 3] * a;
    }
    Q.ti[(long long)p * Q.tstride + s] = I;
}

// Pool index of the CPML memory element x (in the shared region's extents)
// of (component c, axis a), side h.
__device__ __forceinline__ long long oc_psi_pool(const Oc& K, const FdtdDesign* D, int h, int c, int a, int x) {
    int e[3], q[3];
    for (int b = 0; b < 3; ++b) e[b] = b == a ? K.slab_n[a] : (h ? K.mh[c][b] : K.me[c][b]);
    q[0] = x % e[0];
    q[1] = (x / e[0]) % e[1];
    q[2] = x / (e[0] * e[1]);
    for (int b = 0; b < 3; ++b)
        if (b != a) q[b] += 1;
    int cd[3] = {K.dims[0], K.dims[1], K.dims[2]};
    cd[a] = K.slab_n[a];
    return D->psi_off[c * 3 + a] + q[0] + (long long)cd[0] * (q[1] + (long long)cd[1] * q[2]);
}

// Copy the CPML memories between the pool and shared memory (to_pool: back).
__device__ __forceinline__ void oc_psi_copy(const Oc& K, const FdtdDesign* D, const FdtdPtrs& P, float* sPsi, bool to_pool, int tid) {
    for (int h = 0; h < 2; ++h)
        for (int c = 0; c < 3; ++c)
            for (int a = 0; a < 3; ++a) {
                const int o = h ? K.ph[c * 3 + a] : K.pe[c * 3 + a];
                if (o < 0) continue;
                int sz = K.slab_n[a];
                for (int b = 0; b < 3; ++b)
                    if (b != a) sz *= h ? K.mh[c][b] : K.me[c][b];
                float* sp = sPsi + o;
                float* gp = h ? P.psi_h : P.psi_e;
                for (int x = tid; x < sz; x += EMV_OC_NT) {
                    const long long g = oc_psi_pool(K, D, h, c, a, x);
                    if (to_pool) gp[g] = sp[x];
                    else sp[x] = gp[g];
                }
            }
}

// k steps of the designs P.blocks[2b] (one block each), from the field set
// of P (updated in place, psi_e and psi_h too). idx[5d..5d+5]: the design's
// ports [pb, pe) and sources [sb, se) in Q's tables, its flags. flags: EMV_OC_*.
// energy[2d], [2d+1]: sum eps E^2, sum H^2 (weighted as fdtd_energy) after the k steps.
extern "C" __global__ void __launch_bounds__(EMV_OC_NT, 1) fdtd_onchip(FdtdPtrs P, PortPtrs Q, const int* idx, int k, int flags, double* energy) {
    EMV_OC_SMEM
    const int tid = threadIdx.x;
    const int warp = tid >> 5;
    const int lane = tid & 31;
    const int d = P.blocks[2 * blockIdx.x];
    const FdtdDesign* D = P.designs + d;
    // The design's layout, computed once into shared memory (read by all).
    __shared__ Oc K;
    __shared__ int sNf, sNpsi, sNtab;
    if (tid == 0) {
        K.off = D->off;
        for (int a = 0; a < 3; ++a) {
            K.n[a] = D->n[a];
            K.dims[a] = D->dims[a];
            K.prof[a] = D->prof_off[a];
            K.slab_n[a] = D->slab_n[a];
            K.line[a] = D->line_off[a];
        }
        K.coef = D->coef_off;
        K.ncoef = D->ncoef;
        K.pmc = D->pmc;
        K.db = D->db;
        K.flags = flags | idx[5 * d + 4];
        sNf = oc_layout(D, K, sNpsi, sNtab);
    }
    __syncthreads();
    const int nf = sNf, npsi = sNpsi, ntab = sNtab;
    Hot R;
#pragma unroll
    for (int a = 0; a < 3; ++a) {
        R.n[a] = K.n[a];
        R.eo[a] = K.eo[a];
        R.ho[a] = K.ho[a];
        R.lt[a] = K.lt[a];
        R.w[a] = oc_r4(K.dims[a]);
        R.prof[a] = K.prof[a];
        R.dims[a] = K.dims[a];
    }
    R.pmc = K.pmc;
    R.flags = K.flags;
    R.db = K.db;
    R.off = K.off;
    const int pb = idx[5 * d], pe = idx[5 * d + 1], sb = idx[5 * d + 2], se = idx[5 * d + 3];
    const bool mat_sh = !(idx[5 * d + 4] & EMV_OC_MAT_POOL);
    const int term0 = pe > pb ? Q.ports[pb].term_off : 0;
    const int nterm = pe > pb ? Q.ports[pe - 1].term_off + Q.ports[pe - 1].n_terms - term0 : 0;
    const int nsrc = se - sb;

    // Carve the shared memory (onchip.rs onchip_bytes: the same order and sizes).
    float* F = (float*)smem;
    double* sW = (double*)(F + nf);
    double* sPd = sW + nterm;
    float* sCa = (float*)(sPd + 4 * (pe - pb));
    float* sCb = sCa + EMV_OC_NCOEF;
    float* sG = sCb + EMV_OC_NCOEF;
    float* sL = sG + oc_r4(Q.gstride);
    float* sPsi = sL + ntab;
    int* sT = (int*)(sPsi + npsi);
    int* sSrc = sT + 3 * nterm;
    int* sMid = sSrc + nsrc;
    int* sPi = sMid + 4 * (pe - pb);
    float* sSc = (float*)(sPi + 3 * (pe - pb));
    unsigned char* sM = (unsigned char*)(sSc + nsrc);
    // The CPML regions' offsets (K.pe, K.ph) count from sPsi.
    float* psiE = sPsi;
    float* psiH = sPsi;

    // Load: fields (their stored extents), materials (E extents), tables.
    const int mx = K.n[0] + 1, my = K.n[1] + 1, mz = K.n[2] + 1;
    const int nall = mx * my * mz;
    for (int s = tid; s < nall; s += EMV_OC_NT) {
        const int q[3] = {s % mx + 1, (s / mx) % my + 1, s / (mx * my) + 1};
        const long long p = K.off + q[0] + (long long)K.dims[0] * (q[1] + (long long)K.dims[1] * q[2]);
#pragma unroll
        for (int c = 0; c < 3; ++c) {
            if (q[0] <= K.me[c][0] && q[1] <= K.me[c][1] && q[2] <= K.me[c][2]) {
                const int i = K.eo[c] + oc_idx(K.me[c], q[0], q[1], q[2]);
                F[i] = P.e[c][p];
                if (mat_sh) sM[i] = P.mat[c][p];
            }
            if (q[0] <= K.mh[c][0] && q[1] <= K.mh[c][1] && q[2] <= K.mh[c][2]) F[K.ho[c] + oc_idx(K.mh[c], q[0], q[1], q[2])] = P.h[c][p];
        }
    }
    for (int i = tid; i < K.ncoef; i += EMV_OC_NT) {
        sCa[i] = P.ca[K.coef + i];
        sCb[i] = P.cb[K.coef + i];
    }
    for (int i = tid; i < k; i += EMV_OC_NT) sG[i] = Q.gval[(long long)d * Q.gstride + i];
    for (int a = 0; a < 3; ++a) {
        const int w = oc_r4(K.dims[a]);
        float* t = sL + K.lt[a];
        for (int q = tid; q < K.dims[a]; q += EMV_OC_NT) {
            t[q] = P.inv_e[K.line[a] + q];
            t[w + q] = P.inv_h[K.line[a] + q];
            if (K.prof[a] >= 0) {
                // E side: nodes q = 1..n+1; H side: half nodes q = 1..n (fdtd.cu prof_index).
                const bool ie = q >= 1 && q <= K.n[a] + 1, ih = q >= 1 && q <= K.n[a];
                const int i = K.prof[a] + q - 1;
                t[2 * w + q] = __int_as_float(ie ? P.slab_e[i] : -1);
                t[3 * w + q] = __int_as_float(ih ? P.slab_h[i] : -1);
                t[4 * w + q] = ie ? P.pe_b[i] : 0.f;
                t[5 * w + q] = ie ? P.pe_c[i] : 0.f;
                t[6 * w + q] = ie ? P.pe_k[i] : 1.f;
                t[7 * w + q] = ih ? P.ph_b[i] : 0.f;
                t[8 * w + q] = ih ? P.ph_c[i] : 0.f;
                t[9 * w + q] = ih ? P.ph_k[i] : 1.f;
            }
        }
    }
    oc_psi_copy(K, D, P, sPsi, false, tid);
    for (int i = tid; i < nterm; i += EMV_OC_NT) {
        // Port terms: E of the port's component (t_idx0), H below/above (guides).
        int pi = pb;
        while (pi + 1 < pe && Q.ports[pi + 1].term_off <= term0 + i) ++pi;
        const FdtdPort* port = Q.ports + pi;
        sT[i] = oc_store(K, 0, port->comp_e, Q.t_idx0[term0 + i]);
        sT[nterm + i] = port->kind == 1 ? oc_store(K, 1, port->comp_h, Q.t_idx1[term0 + i]) : 0;
        sT[2 * nterm + i] = port->kind == 1 ? oc_store(K, 1, port->comp_h, Q.t_idx2[term0 + i]) : 0;
    }
    for (int i = tid; i < nsrc; i += EMV_OC_NT) {
        sSrc[i] = oc_store(K, 0, Q.src_comp[sb + i], Q.src_idx[sb + i]);
        sSc[i] = Q.src_coef[sb + i];
    }
    for (int i = tid; i < nterm; i += EMV_OC_NT) sW[i] = Q.t_w[term0 + i];
    for (int i = tid; i < pe - pb; i += EMV_OC_NT) {
        const FdtdPort* port = Q.ports + pb + i;
        sPd[4 * i] = port->dl;
        sPd[4 * i + 1] = port->d_a;
        sPd[4 * i + 2] = port->d_b;
        sPd[4 * i + 3] = port->i_sign;
        sPi[3 * i] = port->kind;
        sPi[3 * i + 1] = port->n_terms;
        sPi[3 * i + 2] = port->term_off - term0;
        if (port->kind == 0) {
            const int c = port->comp_e, a = (c + 1) % 3, b = (c + 2) % 3;
            sMid[4 * i] = oc_store(K, 1, b, port->mid);
            sMid[4 * i + 1] = oc_store(K, 1, b, port->mid - port->s_a);
            sMid[4 * i + 2] = oc_store(K, 1, a, port->mid);
            sMid[4 * i + 3] = oc_store(K, 1, a, port->mid - port->s_b);
        }
    }
    __syncthreads();

    const int rows = my * mz;
    for (int st = 0; st < k; ++st) {
        // H half step (and the PMC ghosts above); the port warp samples the
        // voltages of the previous step (E is not written in this phase).
        if (warp < EMV_OC_UW) {
            for (int r = warp; r < rows; r += EMV_OC_UW) {
                const int qy = r % my + 1;
                const int qz = r / my + 1;
                OcLine lh[3];
                lh[1] = oc_line<1>(R, sL, qy, false);
                lh[2] = oc_line<2>(R, sL, qz, false);
                for (int x = lane + 1; x <= mx; x += 32) {
                    const int q[3] = {x, qy, qz};
                    lh[0] = oc_line<0>(R, sL, x, false);
                    oc_h<0>(R, K, F, psiH, q, lh);
                    oc_h<1>(R, K, F, psiH, q, lh);
                    oc_h<2>(R, K, F, psiH, q, lh);
                }
            }
        } else if (st > 0) {
            for (int p = pb + lane; p < pe; p += 32) oc_sample_v(Q, F, sT, sW, sPd, sPi, p - pb, p, st - 1);
        }
        __syncthreads();
        // E full step; the port warp samples the currents of this step.
        if (warp < EMV_OC_UW) {
            for (int r = warp; r < rows; r += EMV_OC_UW) {
                const int qy = r % my + 1;
                const int qz = r / my + 1;
                OcLine le[3];
                le[1] = oc_line<1>(R, sL, qy, true);
                le[2] = oc_line<2>(R, sL, qz, true);
                for (int x = lane + 1; x <= mx; x += 32) {
                    const int q[3] = {x, qy, qz};
                    le[0] = oc_line<0>(R, sL, x, true);
                    oc_e<0>(R, K, P, F, sM, sCa, sCb, psiE, q, le);
                    oc_e<1>(R, K, P, F, sM, sCa, sCb, psiE, q, le);
                    oc_e<2>(R, K, P, F, sM, sCa, sCb, psiE, q, le);
                }
            }
        } else {
            for (int p = pb + lane; p < pe; p += 32) oc_sample_i(Q, F, sT, nterm, sW, sPd, sPi, sMid, p - pb, p, st);
        }
        __syncthreads();
        // The driven port's source (cpu.rs fdtd_inject; distinct points, checked by the host).
        if (warp == EMV_OC_UW) {
            const float g = sG[st];
            for (int i = lane; i < nsrc; i += 32) {
                float* e = F + sSrc[i];
                *e = *e + sSc[i] * g;
            }
        }
        __syncthreads();
    }
    if (warp == EMV_OC_UW && k > 0) {
        for (int p = pb + lane; p < pe; p += 32) oc_sample_v(Q, F, sT, sW, sPd, sPi, p - pb, p, k - 1);
    }

    // Write back: fields, CPML memories, PMC ghosts of the low faces.
    for (int s = tid; s < nall; s += EMV_OC_NT) {
        const int q[3] = {s % mx + 1, (s / mx) % my + 1, s / (mx * my) + 1};
        const long long p = K.off + q[0] + (long long)K.dims[0] * (q[1] + (long long)K.dims[1] * q[2]);
#pragma unroll
        for (int c = 0; c < 3; ++c) {
            if (q[0] <= K.me[c][0] && q[1] <= K.me[c][1] && q[2] <= K.me[c][2]) P.e[c][p] = F[K.eo[c] + oc_idx(K.me[c], q[0], q[1], q[2])];
            if (q[0] <= K.mh[c][0] && q[1] <= K.mh[c][1] && q[2] <= K.mh[c][2]) {
                const float hv = F[K.ho[c] + oc_idx(K.mh[c], q[0], q[1], q[2])];
                P.h[c][p] = hv;
                // cpu.rs fdtd_pmc_ghosts: H_c (c != a) in range, q[a] = 1, face a low a PMC.
                bool in = true;
                for (int b = 0; b < 3; ++b) in = in && q[b] <= (b == c ? K.n[b] + 1 : K.n[b]);
                for (int a = 0; a < 3; ++a) {
                    if (a == c || q[a] != 1 || !((K.pmc >> (2 * a)) & 1) || !in) continue;
                    const long long sa = a == 0 ? 1 : (a == 1 ? (long long)K.dims[0] : (long long)K.dims[0] * K.dims[1]);
                    P.h[c][p - sa] = -hv;
                }
            }
        }
    }
    oc_psi_copy(K, D, P, sPsi, true, tid);
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
