// Two steps a pass for slim designs (fdtd_step2): one block holds a design's
// whole padded xy plane (at most EMV_SL_NT positions, one a thread) and walks
// a z-chunk, advancing every plane two full steps before it is written back.
// Included by kernels/fdtd.cu after fdtd_step (fdtd_fused.cuh), whose helpers it uses.
//
// Why: a design whose plane fits one block needs no xy halo, so the second
// step costs no ghost work (docs/BENCHMARKS.md, "Temporal blocking,
// measured": 1.66x the one-step pass on the population's geometry), and the
// device moves each field once for two steps.
//
// CPU twin: cpu.rs fdtd_step2 (fdtd_step, the driven port's source and the
// port sample of the first step, then fdtd_step). The operands and their
// order are fdtd_step's; the host compiles with --fmad=false, so the fields
// agree with the CPU bit for bit.
//
// The walk: iteration j computes level 0 (step n+1: H^{n+1/2}, E^{n+1}) at
// plane j and level 1 (step n+2) at plane j-1. Level 0's H of plane j reads
// the read set's E of planes j, j+1 and H of plane j (a pipeline of
// EMV_SL_NS stages, cp.async); its E reads level 0's H of planes j, j-1.
// Level 1 reads level 0's E and H the same way. A chunk [z0, z1) starts at
// j = z0-2 (level 0 recomputes two planes of the chunk below, level 1 one,
// whose E is not needed) and ends at j = z1 (level 0's plane z1, from the
// chunk above). Only level 1 of planes [z0, z1) is written, so blocks never
// read what another block writes (ping-pong sets, as fdtd_step).
//
// CPML (along z only: the host admits no PML along x or y, no PMC): level 0
// updates psi_h in place and writes psi_e_out (from psi_e), level 1 updates
// what level 0 wrote, by the same thread.
// The host keeps every chunk boundary b away from the slabs (b-2, b-1 and b
// carry no CPML term: slim.rs chunks), so no block recomputes a
// position whose memory another block updates. psi_h: level 0 updates the
// read set's array in place, level 1 writes psi_h_out (the set the next pass
// reads, as after fdtd_step).
//
// Ports: the first step's source (fdtd_inject at step `step`) is added to
// level 0's E of its plane in shared memory, on every block that computes
// that plane (halo planes included), and the positions that the port monitor
// reads are copied (E after the source, H) into the snapshot set S.se, S.sh
// by the plane's owner: fdtd_sample_ports then samples the first step there.
// The second step's source and sample are the usual kernels after the pass.

#ifndef EMV_SL_NT
#define EMV_SL_NT 512
#endif
#define EMV_SL_NS 3

#ifdef EMV_EMU
#define EMV_SL_SMEM float* sm = (float*)emu_dyn_smem();
#else
#define EMV_SL_SMEM                                         \
    extern __shared__ __align__(16) float emv_sl_smem[];    \
    float* sm = emv_sl_smem;
#endif

// Shared floats of one block (the host's abi.rs SLIM_SMEM, in bytes): the
// stages (E and H of the read set), level 0's H and E and level 1's H (two
// planes each, by parity), the coefficient table.
#define EMV_SL_FLOATS ((6 * EMV_SL_NS + 18) * EMV_SL_NT + 512)

__device__ __forceinline__ int sl_slot(int p) { return ((p % EMV_SL_NS) + EMV_SL_NS) % EMV_SL_NS; }

// Copies of one read-set plane's E and H at element g of the pools into
// stage st ([6][n], at the thread's slot tid; zeros when !ok), one group.
__device__ __forceinline__ void sl_issue(const FdtdPtrs& P, float* st, long long g, bool ok, int tid, int n) {
    cp4(st + tid, P.e[0] + g, ok);
    cp4(st + n + tid, P.e[1] + g, ok);
    cp4(st + 2 * n + tid, P.e[2] + g, ok);
    cp4(st + 3 * n + tid, P.h[0] + g, ok);
    cp4(st + 4 * n + tid, P.h[1] + g, ok);
    cp4(st + 5 * n + tid, P.h[2] + g, ok);
    cp_commit();
}

// The design's coefficient table into shared memory (nt threads).
__device__ __forceinline__ void sl_coefs(const FdtdPtrs& P, const Dctx& K, float* sCa, float* sCb, int tid, int nt) {
    for (int t = tid; t < K.D->ncoef; t += nt) {
        sCa[t] = P.ca[K.coef + t];
        sCb[t] = P.cb[K.coef + t];
    }
}

// One item of the snapshot set: field fld (0..2: E x,y,z; 3..5: H x,y,z) of
// level 0 at index li of the plane arrays eA, hA ([3][n]), to element g of S.se / S.sh.
__device__ __forceinline__ void sl_snap(const SlimPtrs& S, const float* eA, const float* hA, int fld, int li,
                                        long long g, int n) {
    if (fld < 3) {
        const float v = eA[fld * n + li];
        if (fld == 0) S.se[0][g] = v; else if (fld == 1) S.se[1][g] = v; else S.se[2][g] = v;
    } else {
        const float v = hA[(fld - 3) * n + li];
        if (fld == 3) S.sh[0][g] = v; else if (fld == 4) S.sh[1][g] = v; else S.sh[2][g] = v;
    }
}

// The z profile of plane q on one side (prof_at along z; no dependent loads).
__device__ __forceinline__ Prof sl_prof(const FdtdPtrs& P, const Dctx& K, int q, bool e_side) {
    return prof_at(P, K, 2, q, e_side);
}

// stretch() along z with the memory at index x of psi_in, written to psi_out when own.
__device__ __forceinline__ float sl_stretch(float t, const Prof& pz, long long x, const float* psi_in, float* psi_out,
                                            bool own) {
    if (pz.sl < 0) return t;
    const float s = pz.b * psi_in[x] + pz.c * t;
    if (own) psi_out[x] = s;
    return t * pz.k + s;
}

// New H of the thread's position at plane q from E of planes q (Ec) and q+1
// (En) and the old H (Ho), each [3][EMV_SL_NT]; h_core's operands in order.
__device__ __forceinline__ void sl_h(const Dctx& K, int in, int q, int i, int d0, const float* Ec, const float* En,
                                     const float* Ho, float idx, float idy, const Prof& pz, long long pxi,
                                     long long pyi, const float* psi_in, float* psi_out, bool own, float* hn) {
    constexpr int N = EMV_SL_NT;
    float h0 = 0.f, h1 = 0.f, h2 = 0.f;
    if (h_in_z<0>(K, in, q)) {
        const float t1 = (Ec[2 * N + i + d0] - Ec[2 * N + i]) * idy;
        float t2 = (En[N + i] - Ec[N + i]) * pz.id;
        t2 = sl_stretch(t2, pz, pxi, psi_in, psi_out, own);
        h0 = Ho[i] - K.db * (t1 - t2);
    }
    if (h_in_z<1>(K, in, q)) {
        float t1 = (En[i] - Ec[i]) * pz.id;
        t1 = sl_stretch(t1, pz, pyi, psi_in, psi_out, own);
        const float t2 = (Ec[2 * N + i + 1] - Ec[2 * N + i]) * idx;
        h1 = Ho[N + i] - K.db * (t1 - t2);
    }
    if (h_in_z<2>(K, in, q)) {
        const float t1 = (Ec[N + i + 1] - Ec[N + i]) * idx;
        const float t2 = (Ec[i + d0] - Ec[i]) * idy;
        h2 = Ho[2 * N + i] - K.db * (t1 - t2);
    }
    hn[i] = h0;
    hn[N + i] = h1;
    hn[2 * N + i] = h2;
}

// New E of the thread's position at plane q from H of planes q (Hc) and q-1
// (Hp); e = the old E (kept where a component is outside its range); m =
// material bytes packed (E_x | E_y << 8 | E_z << 16); e_core's operands in order.
__device__ __forceinline__ void sl_e(const Dctx& K, int in, int q, int i, int d0, const float* Hc, const float* Hp,
                                     const float* sCa, const float* sCb, int m, float ixe, float iye, const Prof& pz,
                                     long long pxi, long long pyi, const float* psi_in, float* psi_out, bool own,
                                     float* e) {
    constexpr int N = EMV_SL_NT;
    if (e_in_z<0>(K, in, q)) {
        const int mm = m & 255;
        const float t1 = (Hc[2 * N + i] - Hc[2 * N + i - d0]) * iye;
        float t2 = (Hc[N + i] - Hp[N + i]) * pz.id;
        t2 = sl_stretch(t2, pz, pxi, psi_in, psi_out, own);
        e[0] = sCa[mm] * e[0] + sCb[mm] * (t1 - t2);
    }
    if (e_in_z<1>(K, in, q)) {
        const int mm = (m >> 8) & 255;
        float t1 = (Hc[i] - Hp[i]) * pz.id;
        t1 = sl_stretch(t1, pz, pyi, psi_in, psi_out, own);
        const float t2 = (Hc[2 * N + i] - Hc[2 * N + i - 1]) * ixe;
        e[1] = sCa[mm] * e[1] + sCb[mm] * (t1 - t2);
    }
    if (e_in_z<2>(K, in, q)) {
        const int mm = m >> 16;
        const float t1 = (Hc[N + i] - Hc[N + i - 1]) * ixe;
        const float t2 = (Hc[i] - Hc[i - d0]) * iye;
        e[2] = sCa[mm] * e[2] + sCb[mm] * (t1 - t2);
    }
}

// CPU twin: cpu.rs fdtd_step2 (two fdtd_step, the first with its source and
// port sample). Block b: design S.blocks[3b], planes [S.blocks[3b+1], S.blocks[3b+2]).
extern "C" __global__ void __launch_bounds__(EMV_SL_NT, 2) fdtd_step2(FdtdPtrs P, PortPtrs Q, SlimPtrs S, int step) {
    constexpr int N = EMV_SL_NT;
    constexpr int NS = EMV_SL_NS;
    EMV_SL_SMEM
    float* sSt = sm;                  // [NS][6][N]: E x,y,z then H x,y,z of a read-set plane
    float* sHA = sSt + NS * 6 * N;    // [2][3][N]: level 0's H, plane parity
    float* sEA = sHA + 6 * N;         // [2][3][N]: level 0's E
    float* sHB = sEA + 6 * N;         // [2][3][N]: level 1's H
    float* sCa = sHB + 6 * N;         // [256]
    float* sCb = sCa + 256;           // [256]

    const int d = S.blocks[3 * blockIdx.x];
    const int z0 = S.blocks[3 * blockIdx.x + 1];
    const int z1 = S.blocks[3 * blockIdx.x + 2];
    Dctx K;
    load_design(P, d, K);  // K.pmc == 0: slim designs have no PMC face (slim::fits)

    const int tid = threadIdx.x;
    const int d0 = K.dims[0];
    const int np = K.dims[0] * K.dims[1];  // <= N (host: slim_fits)
    const bool mine = tid < np;
    const int i = mine ? tid : 0;
    const int qx = i % d0;
    const int qy = i / d0;
    const int nz = K.dims[2];
    const long long s2 = K.s2;

    // Copies of read-set plane p (zeros outside the array and past z1+1, the last plane read).
    auto issue = [&](int p) {
        const bool ok = mine && p >= 0 && p < nz && p <= z1 + 1;
        sl_issue(P, sSt + sl_slot(p) * 6 * N, ok ? K.off + p * s2 + i : 0, ok, tid, N);
    };
    const int js = z0 - 2;
    for (int k = 0; k < NS; ++k) issue(js + k);
    sl_coefs(P, K, sCa, sCb, tid, N);
    int in = 0, cnt, face;
    classify<0>(K, qx, qy, in, cnt, face);
    classify<1>(K, qx, qy, in, cnt, face);
    classify<2>(K, qx, qy, in, cnt, face);
    if (!mine) in = 0;
    const float ixh = inv_at(P, K, 0, qx, false), iyh = inv_at(P, K, 1, qy, false);
    const float ixe = inv_at(P, K, 0, qx, true), iye = inv_at(P, K, 1, qy, true);
    // CPML memories along z (psi_index<C, 2>): the in-plane part; + slab * np.
    const long long po_ex = K.psi_off[0 * 3 + 2], po_ey = K.psi_off[1 * 3 + 2];
    // Source and tap groups of the design (sorted by plane; uniform cursors).
    int gs = S.dgrp[4 * d], ge = S.dgrp[4 * d + 1];
    int ts = S.dgrp[4 * d + 2], te = S.dgrp[4 * d + 3];
    const float gval = Q.gval[(long long)d * Q.gstride + step];

    int m1 = 0;     // material bytes of plane j-1 (level 1's)
    Prof ph1 = no_prof(), pe1 = no_prof();  // z profiles of plane j-1
    for (int j = js; j <= z1; ++j) {
        const bool v0 = j >= 0 && j < nz;
        int m0 = 0;
        if (v0 && mine) {
            const long long g = K.off + j * s2 + i;
            m0 = P.mat[0][g] | (P.mat[1][g] << 8) | (P.mat[2][g] << 16);
        }
        const Prof ph0 = v0 ? sl_prof(P, K, j, false) : no_prof();
        const Prof pe0 = v0 ? sl_prof(P, K, j, true) : no_prof();
        cp_wait<NS - 2>();
        __syncthreads();
        // Level 0, H of plane j.
        const float* Ec = sSt + sl_slot(j) * 6 * N;
        const float* En = sSt + sl_slot(j + 1) * 6 * N;
        float e[3] = {Ec[i], Ec[N + i], Ec[2 * N + i]};
        float* hA = sHA + (j & 1) * 3 * N;
        const bool own0 = j >= z0 && j < z1;
        if (mine) {
            const long long sl = ph0.sl >= 0 ? (long long)ph0.sl * np + i : 0;
            sl_h(K, v0 ? in : 0, j, i, d0, Ec, En, Ec + 3 * N, ixh, iyh, ph0, po_ex + sl, po_ey + sl, P.psi_h, P.psi_h,
                 own0, hA);
        }
        __syncthreads();
        issue(j + NS);
        // Level 0, E of plane j (from H of planes j and j-1; not needed at j = z0-2).
        float* eA = sEA + (j & 1) * 3 * N;
        if (mine) {
            if (j >= z0 - 1) {
                const long long sl = pe0.sl >= 0 ? (long long)pe0.sl * np + i : 0;
                sl_e(K, v0 ? in : 0, j, i, d0, hA, sHA + ((j - 1) & 1) * 3 * N, sCa, sCb, m0, ixe, iye, pe0,
                     po_ex + sl, po_ey + sl, P.psi_e, P.psi_e_out, own0, e);
            }
            eA[i] = e[0];
            eA[N + i] = e[1];
            eA[2 * N + i] = e[2];
        }
        __syncthreads();
        // The first step's source on plane j (cpu.rs fdtd_inject: E += coef g);
        // groups below the chunk's first plane are passed over.
        while (gs < ge && S.grp[3 * gs] < j) ++gs;
        if (gs < ge && S.grp[3 * gs] == j) {  // block-uniform
            const int f = S.grp[3 * gs + 1], c = S.grp[3 * gs + 2];
            for (int u = tid; u < c; u += N) {
                const int it = S.src_item[f + u];
                float* x = eA + Q.src_comp[it] * N + (Q.src_idx[it] - j * (int)s2);
                *x = *x + Q.src_coef[it] * gval;
            }
            ++gs;
            __syncthreads();
        }
        // What the port monitor reads of plane j, into the snapshot set (owner only).
        while (ts < te && S.grp[3 * ts] < j) ++ts;
        if (ts < te && S.grp[3 * ts] == j) {
            if (own0) {
                const int f = S.grp[3 * ts + 1], c = S.grp[3 * ts + 2];
                for (int u = tid; u < c; u += N) {
                    const int fld = S.tap[2 * (f + u)];
                    const int idx = S.tap[2 * (f + u) + 1];
                    sl_snap(S, eA, hA, fld, idx - j * (int)s2, K.off + idx, N);
                }
            }
            ++ts;
        }
        // Level 1 at plane p = j-1 (from j = z0: H of plane z0-1, then E and stores from plane z0).
        const int p = j - 1;
        if (j >= z0) {  // block-uniform
            const bool v1 = p >= 0 && p < nz;
            const bool own1 = p >= z0;  // p < z1 always
            const float* Ec1 = sEA + (p & 1) * 3 * N;
            const float* Hc1 = sHA + (p & 1) * 3 * N;
            float* hB = sHB + (p & 1) * 3 * N;
            if (mine) {
                const long long sl = ph1.sl >= 0 ? (long long)ph1.sl * np + i : 0;
                sl_h(K, v1 ? in : 0, p, i, d0, Ec1, eA, Hc1, ixh, iyh, ph1, po_ex + sl, po_ey + sl, P.psi_h,
                     P.psi_h_out, own1, hB);
            }
            __syncthreads();
            if (own1 && mine) {
                float e1[3] = {Ec1[i], Ec1[N + i], Ec1[2 * N + i]};
                const long long sl = pe1.sl >= 0 ? (long long)pe1.sl * np + i : 0;
                sl_e(K, v1 ? in : 0, p, i, d0, hB, sHB + ((p - 1) & 1) * 3 * N, sCa, sCb, m1, ixe, iye, pe1,
                     po_ex + sl, po_ey + sl, P.psi_e_out, P.psi_e_out, true, e1);
                store_fields(P, K.off + p * s2 + i, e1[0], e1[1], e1[2], hB[i], hB[N + i], hB[2 * N + i]);
            }
        }
        m1 = m0;
        ph1 = ph0;
        pe1 = pe0;
    }
    cp_wait<0>();
}
