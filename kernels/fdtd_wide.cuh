// Two steps a pass for wide designs (fdtd_step2w): the trapezoid form of
// fdtd_step2 (fdtd_slim.cuh) for a plane too wide for one block. A block
// holds a tile of EMV_WD_TX x EMV_WD_TY padded positions (one a thread),
// walks a z-chunk and writes both steps' work back only for the tile's
// owned part: the tile less two positions on each side that has a
// neighbour tile (the halo; at the design's edges the tile owns up to the
// edge, whose positions no update range reaches beyond).
// Included by kernels/fdtd.cu after fdtd_slim.cuh, whose pipeline it shares.
//
// Why: the one-step pass moves every field once a step; the 256^3 CPML box
// needs about 1.5x its rate (docs/BENCHMARKS.md). Here the device moves each
// field once for two steps, at the price of recomputing the halo (a 32 x 16
// tile owns 28 x 12).
//
// CPU twin: cpu.rs fdtd_step2w (as fdtd_step2: two fdtd_step, the first with
// its source and port sample). Operands and order are fdtd_step's (h_core,
// e_core), so the fields agree with the CPU bit for bit.
//
// Dependencies (Yee, one axis): H^{n+1} at x needs E^n at x, x+1; E^{n+1} at
// x needs H^{n+1} at x, x-1. Owned E^{n+2}, H^{n+2} on [o0, o1) need level 1's
// H on [o0-1, o1), level 0's E on [o0-1, o1+1), level 0's H on [o0-2, o1+1)
// and the read set on [o0-2, o1+2): the tile. Positions at the tile's edge
// compute from neighbours outside it (wrong values, in bounds of the shared
// arrays) that no owned result reads. Along z the chunk walks as fdtd_step2.
//
// CPML along every axis, without races between blocks that recompute the
// same halo position: the read set's memories (psi_e, psi_h) are only read
// during the pass. Level 0's E memory goes to psi_e_out where the block owns
// the position (level 1 reads it back there and overwrites it); level 0's H
// memory goes to a per-thread shared slot (sPm, by plane parity), because
// level 1 also computes H at halo positions (the column o0-1, the row o0-1,
// the plane z0-1); level 1 writes psi_h_out where it owns the position. So
// chunk boundaries and tile edges may lie anywhere in the slabs.
//
// Ports as fdtd_step2: the first step's source on every tile position it
// hits (halo included), the port monitor's positions into the snapshot set
// by their owner. No PMC face (slim.rs fits).

#define EMV_WD_TX 32
#define EMV_WD_TY 16

// Threads of a block (one a tile position) and shared floats of one block
// (abi.rs WIDE_NT, WIDE_SMEM): fdtd_step2's layout for WIDE_NT positions, the
// design's 9 psi offsets (18 floats, 8-byte aligned), the x profiles of the
// tile's columns and the y profiles of its rows (E side, H side; 5 words a
// Prof), level 0's H memories [2][6][N].
#define EMV_WD_NT (EMV_WD_TX * EMV_WD_TY)
#define EMV_WD_FLOATS ((6 * EMV_SL_NS + 18) * EMV_WD_NT + 512 + 18 + 10 * (EMV_WD_TX + EMV_WD_TY) + 12 * EMV_WD_NT)

// Whether padded position q along axis a lies in the CPML (E or H side).
__device__ __forceinline__ bool wd_in_slab(const FdtdPtrs& P, const Dctx& K, int a, int q) {
    const int ie = prof_index(K, a, q, true), ih = prof_index(K, a, q, false);
    return (ie >= 0 && P.slab_e[ie] >= 0) || (ih >= 0 && P.slab_h[ih] >= 0);
}

// stretch() of H_C along A (slot k = 0 for A = C+1, 1 for A = C+2) at the
// thread's position: level 0 reads the read set's memory and keeps the new
// one in its slot; level 1 reads the slot and stores where it owns.
template <int C, int A, bool L1>
__device__ __forceinline__ float wd_sh(const Dctx& K, float t, const Prof& pr, int qx, int qy, int qz, float* slot,
                                       const float* psi_in, float* psi_out) {
    if (pr.sl < 0) return t;
    const float v = L1 ? *slot : psi_in[psi_index<C, A>(K, pr.sl, qx, qy, qz)];
    const float s = pr.b * v + pr.c * t;
    if (L1) {
        if (psi_out) psi_out[psi_index<C, A>(K, pr.sl, qx, qy, qz)] = s;
    } else {
        *slot = s;
    }
    return t * pr.k + s;
}

// New H of the thread's position (tile index i, row pitch W) at plane q from
// E of planes q (Ec) and q+1 (En) and the old H (Ho), each [3][N]; px, py:
// the H-side profiles in shared memory, read only when XY (the position lies
// in the CPML along x or y; else ix, iy are the inverse spacings and no x or
// y term is stretched, as stretch() does outside the slabs); pz: along z;
// sm: the thread's slots of this plane's parity ([6][N] from slot 0).
template <bool L1, bool XY>
__device__ __forceinline__ void wd_h(const Dctx& K, int in, int qx, int qy, int q, int i, int W, const float* Ec,
                                     const float* En, const float* Ho, float ix, float iy, const Prof* px,
                                     const Prof* py, const Prof& pz, float* sm, const float* psi_in, float* psi_out,
                                     float* hn) {
    constexpr int N = EMV_WD_NT;
    float h0 = 0.f, h1 = 0.f, h2 = 0.f;
    if (h_in_z<0>(K, in, q)) {
        float t1 = (Ec[2 * N + i + W] - Ec[2 * N + i]) * (XY ? py->id : iy);
        float t2 = (En[N + i] - Ec[N + i]) * pz.id;
        if (XY) t1 = wd_sh<0, 1, L1>(K, t1, *py, qx, qy, q, sm + i, psi_in, psi_out);
        t2 = wd_sh<0, 2, L1>(K, t2, pz, qx, qy, q, sm + N + i, psi_in, psi_out);
        h0 = Ho[i] - K.db * (t1 - t2);
    }
    if (h_in_z<1>(K, in, q)) {
        float t1 = (En[i] - Ec[i]) * pz.id;
        float t2 = (Ec[2 * N + i + 1] - Ec[2 * N + i]) * (XY ? px->id : ix);
        t1 = wd_sh<1, 2, L1>(K, t1, pz, qx, qy, q, sm + 2 * N + i, psi_in, psi_out);
        if (XY) t2 = wd_sh<1, 0, L1>(K, t2, *px, qx, qy, q, sm + 3 * N + i, psi_in, psi_out);
        h1 = Ho[N + i] - K.db * (t1 - t2);
    }
    if (h_in_z<2>(K, in, q)) {
        float t1 = (Ec[N + i + 1] - Ec[N + i]) * (XY ? px->id : ix);
        float t2 = (Ec[i + W] - Ec[i]) * (XY ? py->id : iy);
        if (XY) {
            t1 = wd_sh<2, 0, L1>(K, t1, *px, qx, qy, q, sm + 4 * N + i, psi_in, psi_out);
            t2 = wd_sh<2, 1, L1>(K, t2, *py, qx, qy, q, sm + 5 * N + i, psi_in, psi_out);
        }
        h2 = Ho[2 * N + i] - K.db * (t1 - t2);
    }
    hn[i] = h0;
    hn[N + i] = h1;
    hn[2 * N + i] = h2;
}

// New E of the thread's position at plane q from H of planes q (Hc) and q-1
// (Hp); e = the old E; m = material bytes packed (E_x | E_y << 8 | E_z << 16);
// ix, iy, px, py, XY as wd_h (E side); pz: along z.
template <bool XY>
__device__ __forceinline__ void wd_e(const Dctx& K, int in, int qx, int qy, int q, int i, int W, const float* Hc,
                                     const float* Hp, const float* sCa, const float* sCb, int m, float ix, float iy,
                                     const Prof* px, const Prof* py, const Prof& pz, const float* psi_in,
                                     float* psi_out, float* e) {
    constexpr int N = EMV_WD_NT;
    if (e_in_z<0>(K, in, q)) {
        const int mm = m & 255;
        float t1 = (Hc[2 * N + i] - Hc[2 * N + i - W]) * (XY ? py->id : iy);
        float t2 = (Hc[N + i] - Hp[N + i]) * pz.id;
        if (XY) t1 = stretch<0, 1>(K, t1, *py, qx, qy, q, psi_in, psi_out);
        t2 = stretch<0, 2>(K, t2, pz, qx, qy, q, psi_in, psi_out);
        e[0] = sCa[mm] * e[0] + sCb[mm] * (t1 - t2);
    }
    if (e_in_z<1>(K, in, q)) {
        const int mm = (m >> 8) & 255;
        float t1 = (Hc[i] - Hp[i]) * pz.id;
        float t2 = (Hc[2 * N + i] - Hc[2 * N + i - 1]) * (XY ? px->id : ix);
        t1 = stretch<1, 2>(K, t1, pz, qx, qy, q, psi_in, psi_out);
        if (XY) t2 = stretch<1, 0>(K, t2, *px, qx, qy, q, psi_in, psi_out);
        e[1] = sCa[mm] * e[1] + sCb[mm] * (t1 - t2);
    }
    if (e_in_z<2>(K, in, q)) {
        const int mm = m >> 16;
        float t1 = (Hc[N + i] - Hc[N + i - 1]) * (XY ? px->id : ix);
        float t2 = (Hc[i] - Hc[i - W]) * (XY ? py->id : iy);
        if (XY) {
            t1 = stretch<2, 0>(K, t1, *px, qx, qy, q, psi_in, psi_out);
            t2 = stretch<2, 1>(K, t2, *py, qx, qy, q, psi_in, psi_out);
        }
        e[2] = sCa[mm] * e[2] + sCb[mm] * (t1 - t2);
    }
}

// The lean forms of wd_h and wd_e, for a lean block (slim.rs SlimPlan::
// block_table): every position of its tile on every plane it walks is in
// every update range and free of CPML, and none carries a source or a tap.
// Operands and order as wd_h and wd_e (stretch() passes t through there).
__device__ __forceinline__ void wd_h_lean(const Dctx& K, int i, int W, const float* Ec, const float* En,
                                          const float* Ho, float ix, float iy, float iz, float* hn) {
    constexpr int N = EMV_WD_NT;
    hn[i] = Ho[i] - K.db * ((Ec[2 * N + i + W] - Ec[2 * N + i]) * iy - (En[N + i] - Ec[N + i]) * iz);
    hn[N + i] = Ho[N + i] - K.db * ((En[i] - Ec[i]) * iz - (Ec[2 * N + i + 1] - Ec[2 * N + i]) * ix);
    hn[2 * N + i] = Ho[2 * N + i] - K.db * ((Ec[N + i + 1] - Ec[N + i]) * ix - (Ec[i + W] - Ec[i]) * iy);
}

__device__ __forceinline__ void wd_e_lean(int i, int W, const float* Hc, const float* Hp, const float* sCa,
                                          const float* sCb, int m, float ix, float iy, float iz, float* e) {
    constexpr int N = EMV_WD_NT;
    int mm = m & 255;
    e[0] = sCa[mm] * e[0] + sCb[mm] * ((Hc[2 * N + i] - Hc[2 * N + i - W]) * iy - (Hc[N + i] - Hp[N + i]) * iz);
    mm = (m >> 8) & 255;
    e[1] = sCa[mm] * e[1] + sCb[mm] * ((Hc[i] - Hp[i]) * iz - (Hc[2 * N + i] - Hc[2 * N + i - 1]) * ix);
    mm = m >> 16;
    e[2] = sCa[mm] * e[2] + sCb[mm] * ((Hc[N + i] - Hc[N + i - 1]) * ix - (Hc[i] - Hc[i - W]) * iy);
}

// CPU twin: cpu.rs fdtd_step2w (two fdtd_step, the first with its source and
// port sample). Block b: design S.blocks[6b], tile origin (S.blocks[6b+1],
// S.blocks[6b+2]) in padded positions, planes [S.blocks[6b+3], S.blocks[6b+4]),
// tile width | height << 16 | lean << 30 in S.blocks[6b+5] (lean: the block
// takes wd_h_lean and wd_e_lean).
extern "C" __global__ void __launch_bounds__(EMV_WD_NT, 1024 / EMV_WD_NT) fdtd_step2w(FdtdPtrs P, PortPtrs Q, SlimPtrs S, int step) {
    constexpr int N = EMV_WD_NT;
    constexpr int NS = EMV_SL_NS;
    EMV_SL_SMEM
    float* sSt = sm;                  // [NS][6][N]: E x,y,z then H x,y,z of a read-set tile plane
    float* sHA = sSt + NS * 6 * N;    // [2][3][N]: level 0's H, plane parity
    float* sEA = sHA + 6 * N;         // [2][3][N]: level 0's E
    float* sHB = sEA + 6 * N;         // [2][3][N]: level 1's H
    float* sCa = sHB + 6 * N;         // [256]
    float* sCb = sCa + 256;           // [256]
    long long* sPo = (long long*)(sCb + 256);                  // [9]
    Prof* sPx = (Prof*)(sCb + 256 + 18);                       // [2][EMV_WD_TX]: E side, H side
    Prof* sPy = sPx + 2 * EMV_WD_TX;                           // [2][EMV_WD_TY]
    float* sPm = (float*)(sPy + 2 * EMV_WD_TY);                // [2][6][N]: level 0's H memories

    const int* bt = S.blocks + 6 * blockIdx.x;
    const int d = bt[0];
    const int X0 = bt[1], Y0 = bt[2];
    const int z0 = bt[3], z1 = bt[4];
    const int W = bt[5] & 0xffff, H = (bt[5] >> 16) & 0x3fff;  // <= EMV_WD_TX, EMV_WD_TY (slim.rs tiles_along)
    const bool lean = (bt[5] >> 30) & 1;  // block-uniform
    Dctx K;
    load_design(P, d, K);  // K.pmc == 0 (slim.rs fits)
    const FdtdDesign* D = K.D;
    const int d0 = K.dims[0], d1 = K.dims[1];
    // The owned part: two positions in from each edge that has a neighbour tile.
    const int ox0 = X0 == 0 ? 0 : X0 + 2, ox1 = X0 + W == d0 ? d0 : X0 + W - 2;
    const int oy0 = Y0 == 0 ? 0 : Y0 + 2, oy1 = Y0 + H == d1 ? d1 : Y0 + H - 2;

    const int tid = threadIdx.x;
    const bool mine = tid < W * H;
    const int i = mine ? tid : 0;
    const int lx = i % W;
    const int ly = i / W;
    const int qx = X0 + lx;
    const int qy = Y0 + ly;
    const int xy = qx + qy * d0;  // in-design offset in the plane
    const bool oxy = mine && qx >= ox0 && qx < ox1 && qy >= oy0 && qy < oy1;
    const int nz = K.dims[2];
    const long long s2 = K.s2;

    auto issue = [&](int p) {
        const bool ok = mine && p >= 0 && p < nz && p <= z1 + 1;
        sl_issue(P, sSt + sl_slot(p) * 6 * N, ok ? K.off + p * s2 + xy : 0, ok, tid, N);
    };
    const int js = z0 - 2;
    for (int k = 0; k < NS; ++k) issue(js + k);
    sl_coefs(P, K, sCa, sCb, tid, N);
    if (tid < 9) sPo[tid] = D->psi_off[tid];
    for (int t = tid; t < 2 * (EMV_WD_TX + EMV_WD_TY); t += N) {
        const int side = t & 1;  // 0: E, 1: H
        const int u = t >> 1;
        if (u < EMV_WD_TX) {
            sPx[side * EMV_WD_TX + u] = u < W ? prof_at(P, K, 0, X0 + u, side == 0) : no_prof();
        } else {
            const int v = u - EMV_WD_TX;
            sPy[side * EMV_WD_TY + v] = v < H ? prof_at(P, K, 1, Y0 + v, side == 0) : no_prof();
        }
    }
    K.psi_off = sPo;  // read after the loop's first barrier
    int in = 0, cnt, face;
    classify<0>(K, qx, qy, in, cnt, face);
    classify<1>(K, qx, qy, in, cnt, face);
    classify<2>(K, qx, qy, in, cnt, face);
    if (!mine) in = 0;
    const Prof* pxe = sPx + lx;
    const Prof* pxh = sPx + EMV_WD_TX + lx;
    const Prof* pye = sPy + ly;
    const Prof* pyh = sPy + EMV_WD_TY + ly;
    // In the CPML along x or y (the shared profiles are read only there).
    const bool pxy = mine && (wd_in_slab(P, K, 0, qx) || wd_in_slab(P, K, 1, qy));
    const float ixh = inv_at(P, K, 0, qx, false), iyh = inv_at(P, K, 1, qy, false);
    const float ixe = inv_at(P, K, 0, qx, true), iye = inv_at(P, K, 1, qy, true);
    int gs = S.dgrp[4 * d], ge = S.dgrp[4 * d + 1];
    int ts = S.dgrp[4 * d + 2], te = S.dgrp[4 * d + 3];
    const float gval = Q.gval[(long long)d * Q.gstride + step];

    int m1 = 0;
    Prof ph1 = no_prof(), pe1 = no_prof();
    for (int j = js; j <= z1; ++j) {
        const bool v0 = j >= 0 && j < nz;
        int m0 = 0;
        if (v0 && mine) {
            const long long g = K.off + j * s2 + xy;
            m0 = P.mat[0][g] | (P.mat[1][g] << 8) | (P.mat[2][g] << 16);
        }
        const Prof ph0 = v0 ? sl_prof(P, K, j, false) : no_prof();
        const Prof pe0 = v0 ? sl_prof(P, K, j, true) : no_prof();
        cp_wait<NS - 2>();
        __syncthreads();
        // Level 0, H of plane j (memories of every tile position into the slots).
        const float* Ec = sSt + sl_slot(j) * 6 * N;
        const float* En = sSt + sl_slot(j + 1) * 6 * N;
        float e[3] = {Ec[i], Ec[N + i], Ec[2 * N + i]};
        float* hA = sHA + (j & 1) * 3 * N;
        const bool own0 = oxy && j >= z0 && j < z1;
        if (lean) {
            if (mine) wd_h_lean(K, i, W, Ec, En, Ec + 3 * N, ixh, iyh, ph0.id, hA);
        } else if (pxy) {
            wd_h<false, true>(K, v0 ? in : 0, qx, qy, j, i, W, Ec, En, Ec + 3 * N, ixh, iyh, pxh, pyh, ph0,
                              sPm + (j & 1) * 6 * N, P.psi_h, (float*)0, hA);
        } else if (mine) {
            wd_h<false, false>(K, v0 ? in : 0, qx, qy, j, i, W, Ec, En, Ec + 3 * N, ixh, iyh, pxh, pyh, ph0,
                               sPm + (j & 1) * 6 * N, P.psi_h, (float*)0, hA);
        }
        __syncthreads();
        issue(j + NS);
        // Level 0, E of plane j (not needed at j = z0-2).
        float* eA = sEA + (j & 1) * 3 * N;
        if (mine) {
            if (j >= z0 - 1) {
                float* po = own0 ? P.psi_e_out : (float*)0;
                const float* hp = sHA + ((j - 1) & 1) * 3 * N;
                if (lean) wd_e_lean(i, W, hA, hp, sCa, sCb, m0, ixe, iye, pe0.id, e);
                else if (pxy) wd_e<true>(K, v0 ? in : 0, qx, qy, j, i, W, hA, hp, sCa, sCb, m0, ixe, iye, pxe, pye, pe0, P.psi_e, po, e);
                else wd_e<false>(K, v0 ? in : 0, qx, qy, j, i, W, hA, hp, sCa, sCb, m0, ixe, iye, pxe, pye, pe0, P.psi_e, po, e);
            }
            eA[i] = e[0];
            eA[N + i] = e[1];
            eA[2 * N + i] = e[2];
        }
        __syncthreads();
        // The first step's source on plane j, on every tile position it hits.
        while (gs < ge && S.grp[3 * gs] < j) ++gs;
        if (gs < ge && S.grp[3 * gs] == j) {  // block-uniform
            const int f = S.grp[3 * gs + 1], c = S.grp[3 * gs + 2];
            for (int u = tid; u < c; u += N) {
                const int it = S.src_item[f + u];
                const int sxy = Q.src_idx[it] - j * (int)s2;
                const int sy = sxy / d0 - Y0;
                const int sx = sxy % d0 - X0;
                if (sx >= 0 && sx < W && sy >= 0 && sy < H) {
                    float* x = eA + Q.src_comp[it] * N + sx + sy * W;
                    *x = *x + Q.src_coef[it] * gval;
                }
            }
            ++gs;
            __syncthreads();
        }
        // What the port monitor reads of plane j, into the snapshot set (owner only).
        while (ts < te && S.grp[3 * ts] < j) ++ts;
        if (ts < te && S.grp[3 * ts] == j) {
            if (j >= z0 && j < z1) {
                const int f = S.grp[3 * ts + 1], c = S.grp[3 * ts + 2];
                for (int u = tid; u < c; u += N) {
                    const int fld = S.tap[2 * (f + u)];
                    const int idx = S.tap[2 * (f + u) + 1];
                    const int txy = idx - j * (int)s2;
                    const int gx = txy % d0, gy = txy / d0;
                    if (gx >= ox0 && gx < ox1 && gy >= oy0 && gy < oy1) {
                        sl_snap(S, eA, hA, fld, (gx - X0) + (gy - Y0) * W, K.off + idx, N);
                    }
                }
            }
            ++ts;
        }
        // Level 1 at plane p = j-1: H on the whole tile (the halo's feeds the
        // owned E), E and the stores where the block owns the position.
        const int p = j - 1;
        if (j >= z0) {  // block-uniform
            const bool v1 = p >= 0 && p < nz;
            const bool own1 = oxy && p >= z0;
            const float* Ec1 = sEA + (p & 1) * 3 * N;
            const float* Hc1 = sHA + (p & 1) * 3 * N;
            float* hB = sHB + (p & 1) * 3 * N;
            float* po = own1 ? P.psi_h_out : (float*)0;
            if (lean) {
                if (mine) wd_h_lean(K, i, W, Ec1, eA, Hc1, ixh, iyh, ph1.id, hB);
            } else if (pxy) {
                wd_h<true, true>(K, v1 ? in : 0, qx, qy, p, i, W, Ec1, eA, Hc1, ixh, iyh, pxh, pyh, ph1,
                                 sPm + (p & 1) * 6 * N, (const float*)0, po, hB);
            } else if (mine) {
                wd_h<true, false>(K, v1 ? in : 0, qx, qy, p, i, W, Ec1, eA, Hc1, ixh, iyh, pxh, pyh, ph1,
                                  sPm + (p & 1) * 6 * N, (const float*)0, po, hB);
            }
            __syncthreads();
            if (own1) {
                float e1[3] = {Ec1[i], Ec1[N + i], Ec1[2 * N + i]};
                const float* hp = sHB + ((p - 1) & 1) * 3 * N;
                if (lean) wd_e_lean(i, W, hB, hp, sCa, sCb, m1, ixe, iye, pe1.id, e1);
                else if (pxy) wd_e<true>(K, v1 ? in : 0, qx, qy, p, i, W, hB, hp, sCa, sCb, m1, ixe, iye, pxe, pye, pe1, P.psi_e_out, P.psi_e_out, e1);
                else wd_e<false>(K, v1 ? in : 0, qx, qy, p, i, W, hB, hp, sCa, sCb, m1, ixe, iye, pxe, pye, pe1, P.psi_e_out, P.psi_e_out, e1);
                store_fields(P, K.off + p * s2 + xy, e1[0], e1[1], e1[2], hB[i], hB[N + i], hB[2 * N + i]);
            }
        }
        m1 = m0;
        ph1 = ph0;
        pe1 = pe0;
    }
    cp_wait<0>();
}
