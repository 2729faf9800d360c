// Lean fused step for the blocks of a design's plain interior: no CPML term,
// no PMC ghost and no out-of-range plane anywhere in the block (the host's
// test: src/engine/cuda/batch.rs lean_block). Included by kernels/fdtd_fused.cuh
// before fdtd_step, whose pipeline, stages, copies and halo layout it shares.
//
// CPU twin: cpu.rs fdtd_step, as for fdtd_step. The operands and their order
// are fdtd_step's with the CPML stretch passed through (cpu.rs stretch()
// returns t outside the layer), so both kernels and the CPU agree bit for bit.
// What it leaves out is the per-position generality that made fdtd_step
// instruction-bound (docs/BENCHMARKS.md, "Streaming FDTD kernel: what bounds
// it"): the CPML memories and their tests, the PMC ghost values, the z range
// tests (every plane of the block is inside every component's range); the
// x/y range tests remain as per-column flags fixed before the loop (a tile
// may hold a PEC wall: the guide designs' tiles all do).
//
// fdtd_step runs it for the block-table entries the host flagged (bit 30 of
// the local block number).

#include "fdtd_cell.cuh"

// New H_C without CPML at ring (rx, ry) of planes Sc (z) and Sn (z+1); h is
// the old value; idx, idy, idz the H-side inverse spacings. fused_h's
// operands in fused_h's order.
template <int C>
__device__ __forceinline__ float lean_h(float db, const Stage& Sc, const Stage& Sn, int rx, int ry, float h, float idx,
                                        float idy, float idz) {
    float t1, t2;
    if (C == 0) {
        t1 = (Sc.e[2][ry + 1][rx] - Sc.e[2][ry][rx]) * idy;
        t2 = (Sn.e[1][ry][rx] - Sc.e[1][ry][rx]) * idz;
    } else if (C == 1) {
        t1 = (Sn.e[0][ry][rx] - Sc.e[0][ry][rx]) * idz;
        t2 = (Sc.e[2][ry][rx + 1] - Sc.e[2][ry][rx]) * idx;
    } else {
        t1 = (Sc.e[1][ry][rx + 1] - Sc.e[1][ry][rx]) * idx;
        t2 = (Sc.e[0][ry + 1][rx] - Sc.e[0][ry][rx]) * idy;
    }
    return emv_h_new(h, db, t1, t2);
}

// The lean blocks' whole step, called by fdtd_step (one launch for all
// blocks keeps the waves of blocks balanced; two kernels in a row left the
// second one's single wave half empty). It uses fdtd_step's shared arrays:
// the stages, sH, sCa, sCb, and of sPx, sPy only the inverse spacings.
__device__ __forceinline__ void lean_step(const FdtdPtrs& P, const Dctx& K, const Blk& B, Stage* sS,
                                          float (*sH)[EMV_HH][EMV_HW], Prof (*sPx)[EMV_TX + 1],
                                          Prof (*sPy)[EMV_TY + 1], float* sCa, float* sCb) {
    const int lx = threadIdx.x;
    const int ly = threadIdx.y;
    const int tid = ly * EMV_TX + lx;
    const int qx = B.X0 + lx;
    const int qy = B.Y0 + ly;
    // Lean blocks are whole tiles (never a narrowed first tile: batch.rs
    // LeanInfo::axis_tiles), so the array's end bounds them as Blk::X1, Y1 would.
    const bool inside = qx < K.dims[0] && qy < K.dims[1];
    const int zs = B.z0 - 1;  // >= 1: lean blocks have z0 >= 2
    const int hx = lx + 1;
    const int hy = ly + 1;

    Slots sl;
    make_slots(K, B, tid, sl);
    for (int k = 0; k < EMV_NS; ++k) {
        const int pz = zs + k;
        stage_issue(P, K, sS[k], pz, tid, pz <= B.z1, pz < B.z1, sl);
    }
    if (tid <= EMV_TX) {
        sPx[0][tid].id = inv_at(P, K, 0, B.X0 - 1 + tid, true);
        sPx[1][tid].id = inv_at(P, K, 0, B.X0 - 1 + tid, false);
    } else if (tid - (EMV_TX + 1) <= EMV_TY) {
        const int j = tid - (EMV_TX + 1);
        sPy[0][j].id = inv_at(P, K, 1, B.Y0 - 1 + j, true);
        sPy[1][j].id = inv_at(P, K, 1, B.Y0 - 1 + j, false);
    }
    load_coefs(P, K, tid, sCa, sCb);
    // Column flags (every plane is inside the z ranges): bit C for E_C, 3+C for H_C.
    int in = 0, cnt, face;
    classify<0>(K, qx, qy, in, cnt, face);
    classify<1>(K, qx, qy, in, cnt, face);
    classify<2>(K, qx, qy, in, cnt, face);
    if (!inside) in = 0;
    // The thread's halo positions (the layout of fdtd_step's halo work) and
    // whether each is inside its H range.
#if EMV_HALO_SPREAD
    // Rows 0, 1: Hz, Hx of the row y = Y0-1; rows 2, 3 (first TY lanes): Hy, Hz of the column x = X0-1.
    bool hal = false;
    if (ly == 0) hal = B.Y0 > 0 && qx < K.dims[0] && h_in_axis<2>(K, 0, qx) && h_in_axis<2>(K, 1, B.Y0 - 1);
    else if (ly == 1) hal = B.Y0 > 0 && qx < K.dims[0] && h_in_axis<0>(K, 0, qx) && h_in_axis<0>(K, 1, B.Y0 - 1);
    else if (ly == 2 && lx < EMV_TY) hal = B.X0 > 0 && B.Y0 + lx < K.dims[1] && h_in_axis<1>(K, 0, B.X0 - 1) && h_in_axis<1>(K, 1, B.Y0 + lx);
    else if (ly == 3 && lx < EMV_TY) hal = B.X0 > 0 && B.Y0 + lx < K.dims[1] && h_in_axis<2>(K, 0, B.X0 - 1) && h_in_axis<2>(K, 1, B.Y0 + lx);
#else
    // The first row: Hz, Hx of the row y = Y0-1; the next TY threads: Hy, Hz of the column x = X0-1.
    const int xl = tid - EMV_TX;
    const bool xhalo = xl >= 0 && xl < EMV_TY;
    const bool rowok = ly == 0 && B.Y0 > 0 && qx < K.dims[0];
    const bool r2 = rowok && h_in_axis<2>(K, 0, qx) && h_in_axis<2>(K, 1, B.Y0 - 1);
    const bool r0 = rowok && h_in_axis<0>(K, 0, qx) && h_in_axis<0>(K, 1, B.Y0 - 1);
    const bool colok = xhalo && B.X0 > 0 && B.Y0 + xl < K.dims[1];
    const bool c1 = colok && h_in_axis<1>(K, 0, B.X0 - 1) && h_in_axis<1>(K, 1, B.Y0 + xl);
    const bool c2 = colok && h_in_axis<2>(K, 0, B.X0 - 1) && h_in_axis<2>(K, 1, B.Y0 + xl);
#endif
    const float db = K.db;
    unsigned char mc[3] = {0, 0, 0}, mn[3] = {0, 0, 0};
    long long p = K.off + qx + (long long)qy * K.s1 + (long long)zs * K.s2;
    if (inside) {
        mc[0] = P.mat[0][p];
        mc[1] = P.mat[1][p];
        mc[2] = P.mat[2][p];
    }
    __syncthreads();  // sPx, sPy, sCa, sCb
    const float ixh = sPx[1][hx].id, iyh = sPy[1][hy].id;
    const float ixe = sPx[0][hx].id, iye = sPy[0][hy].id;
    int sc = 0;
    float prev_x = 0.f, prev_y = 0.f;
    for (int qz = zs; qz < B.z1; ++qz, p += K.s2) {
        const bool owned = qz >= B.z0;  // block-uniform: false on the first plane only
        cp_wait<EMV_NS - 2>();
        __syncthreads();
        if (inside) {  // qz + 1 <= n_z + 1 < dims[2]
            mn[0] = P.mat[0][p + K.s2];
            mn[1] = P.mat[1][p + K.s2];
            mn[2] = P.mat[2][p + K.s2];
        }
        const Stage& Sc = sS[sc];
        const Stage& Sn = sS[sc + 1 == EMV_NS ? 0 : sc + 1];
        const float izh = Sc.pz[1].id;
        const float ize = Sc.pz[0].id;
        const float eo0 = Sc.e[0][hy][hx];
        const float eo1 = Sc.e[1][hy][hx];
        const float eo2 = Sc.e[2][hy][hx];
        float h0 = 0.f, h1 = 0.f, h2 = 0.f;
        if (in & 8) h0 = lean_h<0>(db, Sc, Sn, hx, hy, Sc.h[0][hy][hx], ixh, iyh, izh);
        if (in & 16) h1 = lean_h<1>(db, Sc, Sn, hx, hy, Sc.h[1][hy][hx], ixh, iyh, izh);
        if (in & 32) h2 = lean_h<2>(db, Sc, Sn, hx, hy, Sc.h[2][hy][hx], ixh, iyh, izh);
        sH[0][hy][hx] = h0;
        sH[1][hy][hx] = h1;
        sH[2][hy][hx] = h2;
        if (owned) {
#if EMV_HALO_SPREAD
            if (ly == 0) {
                sH[2][0][hx] = hal ? lean_h<2>(db, Sc, Sn, hx, 0, Sc.h[2][0][hx], ixh, sPy[1][0].id, izh) : 0.f;
            } else if (ly == 1) {
                sH[0][0][hx] = hal ? lean_h<0>(db, Sc, Sn, hx, 0, Sc.h[0][0][hx], ixh, sPy[1][0].id, izh) : 0.f;
            } else if (ly == 2 && lx < EMV_TY) {
                sH[1][lx + 1][0] = hal ? lean_h<1>(db, Sc, Sn, 0, lx + 1, Sc.h[1][lx + 1][0], sPx[1][0].id, sPy[1][lx + 1].id, izh) : 0.f;
            } else if (ly == 3 && lx < EMV_TY) {
                sH[2][lx + 1][0] = hal ? lean_h<2>(db, Sc, Sn, 0, lx + 1, Sc.h[2][lx + 1][0], sPx[1][0].id, sPy[1][lx + 1].id, izh) : 0.f;
            }
#else
            if (ly == 0) {
                sH[2][0][hx] = r2 ? lean_h<2>(db, Sc, Sn, hx, 0, Sc.h[2][0][hx], ixh, sPy[1][0].id, izh) : 0.f;
                sH[0][0][hx] = r0 ? lean_h<0>(db, Sc, Sn, hx, 0, Sc.h[0][0][hx], ixh, sPy[1][0].id, izh) : 0.f;
            }
            if (xhalo) {
                sH[1][xl + 1][0] = c1 ? lean_h<1>(db, Sc, Sn, 0, xl + 1, Sc.h[1][xl + 1][0], sPx[1][0].id, sPy[1][xl + 1].id, izh) : 0.f;
                sH[2][xl + 1][0] = c2 ? lean_h<2>(db, Sc, Sn, 0, xl + 1, Sc.h[2][xl + 1][0], sPx[1][0].id, sPy[1][xl + 1].id, izh) : 0.f;
            }
#endif
        }
        __syncthreads();  // sH complete; stage sc is no longer read
        {
            const int pz = qz + EMV_NS;
            stage_issue(P, K, sS[sc], pz, tid, pz <= B.z1, pz < B.z1, sl);
        }
        if (owned && inside) {
            float e0 = eo0, e1 = eo1, e2 = eo2;
            if (in & 1) {
                const float t1 = (h2 - sH[2][hy - 1][hx]) * iye;
                const float t2 = (h1 - prev_y) * ize;
                e0 = emv_e_new(eo0, sCa[mc[0]], sCb[mc[0]], t1, t2);
            }
            if (in & 2) {
                const float t1 = (h0 - prev_x) * ize;
                const float t2 = (h2 - sH[2][hy][hx - 1]) * ixe;
                e1 = emv_e_new(eo1, sCa[mc[1]], sCb[mc[1]], t1, t2);
            }
            if (in & 4) {
                const float t1 = (h1 - sH[1][hy][hx - 1]) * ixe;
                const float t2 = (h0 - sH[0][hy - 1][hx]) * iye;
                e2 = emv_e_new(eo2, sCa[mc[2]], sCb[mc[2]], t1, t2);
            }
            store_fields(P, p, e0, e1, e2, h0, h1, h2);
        }
        prev_x = h0;
        prev_y = h1;
        mc[0] = mn[0];
        mc[1] = mn[1];
        mc[2] = mn[2];
        sc = sc + 1 == EMV_NS ? 0 : sc + 1;
    }
    cp_wait<0>();
}
