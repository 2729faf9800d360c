// On-chip FDTD path: one thread block holds one whole design in shared
// memory and advances it a chunk of steps per launch (one or several energy
// checks' worth), with the driven port's source, the port monitor and the
// energy checks inside the loop; only the port samples (per step), the
// energies (per check) and, at the chunk end, the fields go through global
// memory. For the GA's small designs (2.5D iris filters: a few thousand
// cells, thousands of steps), which the streaming kernels of fdtd.cu run at
// launch latency.
//
// CPU twins (src/engine/fdtd/cpu.rs): fdtd_onchip = fdtd_step + fdtd_inject
// + fdtd_sample_ports per step, fdtd_energy at each check; the per-cell
// arithmetic is fdtd_cell.cuh, shared with fdtd.cu, so the fields are bit
// for bit the CPU engine's.
//
// Stored components: a mask U (bits E0 E1 E2 H0 H1 H2) chosen by the host
// (src/engine/cuda/onchip.rs pattern): every component the CPU updates
// (onto rows that are not all PEC), every one a source writes, every one
// holding a non-zero value; the others stay zero for the whole run and are
// neither stored nor updated (a 2.5D job keeps 3 of 6: half the work, a
// third of the memory). The step loop is compiled for each mask of
// EMV_OC_PATTERNS (U known at compile time: the reads of a dropped
// component are the constant 0, the updates of one are gone).
//
// Storage: every stored component over one box of padded positions, q[a]
// from lo[a] to hi[a], the same index for the same q in every component
// (neighbour offsets 1, m0, m0 m1): lo = 0 where an E update reads the H
// ghost layer below (then the ghosts at q = 0 and n + 1 are stored: PMC
// mirrors written by the H update, else the pool's never-written values),
// hi the largest update range of a stored component. The CPML memories:
// the slab positions along their axis and the box across. The host
// (onchip.rs Layout) computes the same layout to size the shared memory.
//
// Work: a thread owns a column (x, y) of the box and every zs-th z plane
// from its own, every component there, in both half steps, with its
// column's inverse spacings and CPML slab numbers in registers; z walks the
// line table. Consecutive threads hold consecutive box positions (after a
// column's last x the next y, after the last y the next plane), so a warp's
// shared-memory accesses fall on 32 consecutive words: no bank conflicts.
// The thread also adds the sources of its own E positions right after
// updating them (no extra barrier; where a thread would own them out of
// order, the port warp adds them after the E half step behind a barrier).
// The last warp is the port warp: it samples the currents (H) while the
// others update E and the voltages (E) while they update H of the next
// step, one port per lane, terms summed in the CPU's order (bit-identical
// port traces; the terms' products first formed on all lanes where they fit
// a small scratch). Two barriers a step, one more at an energy check.
//
// The GA's 2.5D designs (E_y, H_x, H_z stored, one cell along y, CPML along
// z only) take oc_loop25, the same updates written for that one case; every
// other design the general loop (oc_loop).

#include "common.cuh"
#include "fdtd_cell.cuh"

#ifndef EMV_OC_NT
#define EMV_OC_NT 1024
#endif
#define EMV_OC_WARPS (EMV_OC_NT / 32)
// Threads updating fields (all but the port warp).
#define EMV_OC_NTU (EMV_OC_NT - 32)
// Coefficient table entries reserved (FdtdDesign::ncoef <= 256).
#define EMV_OC_NCOEF 256
// Launch flag: the never-written ghosts and the dropped components are
// zero and every field outside the updates is zero (the run started from
// zero fields): no constant energy term to add.
#define EMV_OC_GHOSTS_ZERO 2

#ifdef EMV_EMU
#define EMV_OC_SMEM unsigned char* smem = emu_dyn_smem();
#else
#define EMV_OC_SMEM                                              \
    extern __shared__ __align__(16) unsigned char emv_oc_smem[]; \
    unsigned char* smem = emv_oc_smem;
#endif

__device__ constexpr int oc_popc(int x) { return x ? (x & 1) + oc_popc(x >> 1) : 0; }
// Slot of component bit b (E_c: c, H_c: 3 + c) among the stored ones.
__device__ constexpr int oc_slot(int U, int b) { return oc_popc(U & ((1 << b) - 1)); }
// H_c is read along axis a (a != c) by a stored E update: E_(3-a-c).
__device__ constexpr bool oc_ghost(int U, int c, int a) { return a != c && ((U >> (3 - a - c)) & 1); }

// One design as the block sees it (computed by thread 0 into shared memory).
struct Oc {
    long long off;
    int n[3];
    int dims[3];
    // The box: padded q from lo[a], m[a] positions; top: the union of the
    // stored components' update ranges (q from 1 to top[a]).
    int lo[3];
    int m[3];
    int top[3];
    // Floats per stored component (the box rounded up to 4).
    int bs;
    int U;
    int pmc;
    int flags;
    float db;
    int coef;
    int ncoef;
    int line[3];
    int prof[3];
    int slab_n[3];
    // Per axis: float offsets in sL of its line table (4 words a padded
    // position: 1/dual, E slab, 1/primal, H slab) and, with PML, of its
    // profile (8 words: b, c, 1/kappa E side, 0, then the H side), else -1.
    int lt[3];
    int lp[3];
    // CPML memory regions, [h * 9 + c * 3 + a]: floats from sPsi, -1 none.
    int psi[18];
    int npsi;
    int ntab;
    int nf;
    // Thread mapping: a unit is a column (x, y) of the box and every zs-th z
    // plane from its own; units = box columns x zs.
    int zs;
    int nunits;
    // 1: the port warp adds the sources (a third barrier a step).
    int inj;
    // Energy of the pool positions no update writes (non-zero starts only).
    double rest_e;
    double rest_h;
};

__device__ __forceinline__ int oc_r4(int x) { return (x + 3) & ~3; }

// Top of the update range along a of E_c (h = 0) or H_c (h = 1) (cpu.rs e_range, h_range; padded).
__device__ __forceinline__ int oc_utop(const int n[3], int h, int c, int a) {
    if (h) return a == c ? n[a] + 1 : n[a];
    return a == c ? n[a] : n[a] + 1;
}

// The layout of design D with stored mask U (onchip.rs Layout::new: the same
// order and sizes).
__device__ __forceinline__ void oc_layout(const FdtdDesign* D, Oc& K) {
    const int U = K.U;
    for (int a = 0; a < 3; ++a) {
        bool g = false;
        int hi = 0, top = 0;
        for (int c = 0; c < 3; ++c) {
            if ((U >> (3 + c)) & 1) {
                const bool gc = oc_ghost(U, c, a);
                g = g || gc;
                const int h = a == c ? K.n[a] + 1 : K.n[a] + (gc ? 1 : 0);
                hi = hi > h ? hi : h;
                const int t = oc_utop(K.n, 1, c, a);
                top = top > t ? top : t;
            }
            if ((U >> c) & 1) {
                const int t = oc_utop(K.n, 0, c, a);
                hi = hi > t ? hi : t;
                top = top > t ? top : t;
            }
        }
        K.lo[a] = g ? 0 : 1;
        K.m[a] = hi - K.lo[a] + 1;
        K.top[a] = top;
    }
    K.bs = oc_r4(K.m[0] * K.m[1] * K.m[2]);
    K.nf = oc_popc(U) * K.bs + 4;
    int tab = 0;
    for (int a = 0; a < 3; ++a) {
        K.lt[a] = tab;
        tab += 4 * K.dims[a];
        K.lp[a] = -1;
        if (K.prof[a] >= 0) {
            K.lp[a] = tab;
            tab += 8 * K.dims[a];
        }
    }
    K.ntab = tab;
    int psi = 0;
    for (int h = 0; h < 2; ++h)
        for (int c = 0; c < 3; ++c)
            for (int a = 0; a < 3; ++a) {
                int o = -1;
                if (a != c && ((U >> (3 * h + c)) & 1) && D->psi_off[c * 3 + a] >= 0) {
                    int sz = K.slab_n[a];
                    for (int b = 0; b < 3; ++b)
                        if (b != a) sz *= K.m[b];
                    o = psi;
                    psi += oc_r4(sz);
                }
                K.psi[h * 9 + c * 3 + a] = o;
            }
    K.npsi = psi;
    // Units: every column of the box (consecutive threads on consecutive box
    // positions, the next plane after the last column: a warp's accesses fall
    // on 32 consecutive words, no bank conflicts), each taking every zs-th
    // plane, zs as large as the updating threads allow (one unit each).
    const int cols = K.m[0] * K.m[1];
    K.zs = cols >= EMV_OC_NTU ? 1 : EMV_OC_NTU / cols;
    K.nunits = cols * K.zs;
}

// What the step loop reads of the layout, in registers.
struct OcR {
    int n[3];
    int st1;  // box stride along y (m0)
    int st2;  // along z (m0 m1)
    int zs;   // planes between a unit's z positions
    int dlin; // zs st2
    int bs;
    int pmc;
    int pml;  // bit a: axis a has PML
    float db;
    int lt2;  // line table of z
    int lp2;  // its CPML profile (-1: none)
    int lo2;  // the box's first plane
};

// A unit: column (x, y), z from z0 to z1 (every zs-th; z0 may be the ghost
// plane 0, which no update holds); box index of (x, y, z0); which
// components' update ranges hold the column (bit of E_c: c, of H_c: 3 + c);
// the column's inverse spacings (E side, H side, x then y) and slab numbers
// (signed bytes: x E, x H, y E, y H; -1 outside the slab or without PML).
struct OcCol {
    int x, y, z0, z1;
    int lin;
    int cm;
    float ie0, ih0, ie1, ih1;
    int sl;
};

__device__ __forceinline__ int oc_sbyte(int w, int i) { return (int)(signed char)((w >> (8 * i)) & 0xFF); }

__device__ __forceinline__ void oc_col(const Oc& K, const float* sL, int u, OcCol& c) {
    c.x = u % K.m[0] + K.lo[0];
    const int r = u / K.m[0];
    c.y = r % K.m[1] + K.lo[1];
    c.z0 = r / K.m[1] + K.lo[2];
    c.z1 = K.top[2];
    c.lin = u;
    int cm = 0;
    for (int h = 0; h < 2; ++h)
        for (int cc = 0; cc < 3; ++cc)
            if (((K.U >> (3 * h + cc)) & 1) && c.x >= 1 && c.y >= 1 && c.x <= oc_utop(K.n, h, cc, 0) && c.y <= oc_utop(K.n, h, cc, 1)) cm |= 1 << (3 * h + cc);
    c.cm = cm;
    const float* tx = sL + K.lt[0] + 4 * c.x;
    const float* ty = sL + K.lt[1] + 4 * c.y;
    c.ie0 = tx[0];
    c.ih0 = tx[2];
    c.ie1 = ty[0];
    c.ih1 = ty[2];
    c.sl = (__float_as_int(tx[1]) & 0xFF) | ((__float_as_int(tx[3]) & 0xFF) << 8) | ((__float_as_int(ty[1]) & 0xFF) << 16) | ((__float_as_int(ty[3]) & 0xFF) << 24);
}

// The CPML stretching of derivative t along axis A of component C (H: the H
// side) at the unit's column and z, inside the slab s (cpu.rs stretch()).
// Along z (the PML axis of a guide or a 2.5D job) the memory lies under the
// box index with the slab number for the plane: lin + m0 m1 (s - (z - lo2)).
template <int C, int A, bool H>
__device__ __forceinline__ float oc_stretch(const OcR& R, const Oc& K, float* __restrict__ sPsi, const float* __restrict__ sL, const OcCol& c, int z, int lin, int s, float t) {
    float4 p;
    float* ps;
    if (A == 2) {
        p = *(const float4*)(sL + R.lp2 + 8 * z + (H ? 4 : 0));
        ps = sPsi + K.psi[(H ? 9 : 0) + C * 3 + A] + lin + R.st2 * (s - (z - R.lo2));
    } else {
        const int q = A == 0 ? c.x : c.y;
        p = *(const float4*)(sL + K.lp[A] + 8 * q + (H ? 4 : 0));
        const int x0 = A == 0 ? s : c.x - K.lo[0];
        const int x1 = A == 1 ? s : c.y - K.lo[1];
        const int x2 = z - K.lo[2];
        const int e0 = A == 0 ? K.slab_n[0] : K.m[0];
        const int e1 = A == 1 ? K.slab_n[1] : K.m[1];
        ps = sPsi + K.psi[(H ? 9 : 0) + C * 3 + A] + x0 + e0 * (x1 + e1 * x2);
    }
    float v = *ps;
    const float r = emv_stretch(t, p.x, p.y, p.z, v);
    *ps = v;
    return r;
}

template <int A>
__device__ __forceinline__ int oc_st(const OcR& R) { return A == 0 ? 1 : (A == 1 ? R.st1 : R.st2); }

// H_C at the unit's column and z (cpu.rs fdtd_update_h), in place; on a
// PMC face whose ghost layer is stored, the ghost mirrors the new value
// (cpu.rs fdtd_pmc_ghosts). ihz, slz: 1/primal spacing and H slab along z.
// FE, FH: the stored E and H (disjoint: the loads of the next z need not wait
// for this one's stores).
template <int U, int C>
__device__ __forceinline__ void oc_h(const OcR& R, const Oc& K, const float* __restrict__ FE, float* __restrict__ FH, float* __restrict__ sPsi, const float* __restrict__ sL, const OcCol& c, int z, int lin, float ihz, int slz) {
    constexpr int A = (C + 1) % 3;
    constexpr int B = (C + 2) % 3;
    constexpr int NE = oc_popc(U & 7);
    const float ih[3] = {c.ih0, c.ih1, ihz};
    // A component not stored is zero: its derivative (0 - 0) / d is +0, and so
    // is its stretched value (the CPML memory, zero at the start, stays zero).
    float t1 = 0.f, t2 = 0.f;
    if (U & (1 << B)) {
        const int i = oc_slot(U, B) * R.bs + lin;
        t1 = (FE[i + oc_st<A>(R)] - FE[i]) * ih[A];
        if (R.pml & (1 << A)) {
            const int s = A == 2 ? slz : oc_sbyte(c.sl, 2 * A + 1);
            if (s >= 0) t1 = oc_stretch<C, A, true>(R, K, sPsi, sL, c, z, lin, s, t1);
        }
    }
    if (U & (1 << A)) {
        const int i = oc_slot(U, A) * R.bs + lin;
        t2 = (FE[i + oc_st<B>(R)] - FE[i]) * ih[B];
        if (R.pml & (1 << B)) {
            const int s = B == 2 ? slz : oc_sbyte(c.sl, 2 * B + 1);
            if (s >= 0) t2 = oc_stretch<C, B, true>(R, K, sPsi, sL, c, z, lin, s, t2);
        }
    }
    const int s = (oc_slot(U, 3 + C) - NE) * R.bs + lin;
    const float h = emv_h_new(FH[s], R.db, t1, t2);
    FH[s] = h;
    if (R.pmc) {
        if (oc_ghost(U, C, A)) {
            const int q = A == 0 ? c.x : (A == 1 ? c.y : z);
            if (((R.pmc >> (2 * A)) & 1) && q == 1) FH[s - oc_st<A>(R)] = -h;
            if (((R.pmc >> (2 * A + 1)) & 1) && q == R.n[A]) FH[s + oc_st<A>(R)] = -h;
        }
        if (oc_ghost(U, C, B)) {
            const int q = B == 0 ? c.x : (B == 1 ? c.y : z);
            if (((R.pmc >> (2 * B)) & 1) && q == 1) FH[s - oc_st<B>(R)] = -h;
            if (((R.pmc >> (2 * B + 1)) & 1) && q == R.n[B]) FH[s + oc_st<B>(R)] = -h;
        }
    }
}

// E_C at the unit's column and z (cpu.rs fdtd_update_e), in place. iez,
// slz: 1/dual spacing and E slab along z.
template <int U, int C>
__device__ __forceinline__ void oc_e(const OcR& R, const Oc& K, const float* __restrict__ FH, float* __restrict__ FE, float* __restrict__ sPsi, const float* __restrict__ sL, const unsigned char* __restrict__ sM, const float2* __restrict__ sCab, const OcCol& c, int z, int lin, float iez, int slz) {
    constexpr int A = (C + 1) % 3;
    constexpr int B = (C + 2) % 3;
    constexpr int NE = oc_popc(U & 7);
    const float ie[3] = {c.ie0, c.ie1, iez};
    float t1 = 0.f, t2 = 0.f;
    if (U & (8 << B)) {
        const int i = (oc_slot(U, 3 + B) - NE) * R.bs + lin;
        t1 = (FH[i] - FH[i - oc_st<A>(R)]) * ie[A];
        if (R.pml & (1 << A)) {
            const int s = A == 2 ? slz : oc_sbyte(c.sl, 2 * A);
            if (s >= 0) t1 = oc_stretch<C, A, false>(R, K, sPsi, sL, c, z, lin, s, t1);
        }
    }
    if (U & (8 << A)) {
        const int i = (oc_slot(U, 3 + A) - NE) * R.bs + lin;
        t2 = (FH[i] - FH[i - oc_st<B>(R)]) * ie[B];
        if (R.pml & (1 << B)) {
            const int s = B == 2 ? slz : oc_sbyte(c.sl, 2 * B);
            if (s >= 0) t2 = oc_stretch<C, B, false>(R, K, sPsi, sL, c, z, lin, s, t2);
        }
    }
    const int s = oc_slot(U, C) * R.bs + lin;
    const float2 ab = sCab[sM[s]];
    FE[s] = emv_e_new(FE[s], ab.x, ab.y, t1, t2);
}

// The H half step of a unit: H_0 and H_1 up to z = n2, H_2 up to n2 + 1.
template <int U>
__device__ __forceinline__ void oc_h_unit(const OcR& R, const Oc& K, const float* __restrict__ FE, float* __restrict__ FH, float* __restrict__ sPsi, const float* __restrict__ sL, const OcCol& c) {
    int lin = c.lin;
#pragma unroll 2
    for (int z = c.z0; z <= c.z1; z += R.zs) {
        const float2 zl = *(const float2*)(sL + R.lt2 + 4 * z + 2);
        const int slz = __float_as_int(zl.y);
        const bool zin = z <= R.n[2];
        const int cm = z >= 1 ? c.cm : 0;
        if ((U & 8) && (cm & 8) && zin) oc_h<U, 0>(R, K, FE, FH, sPsi, sL, c, z, lin, zl.x, slz);
        if ((U & 16) && (cm & 16) && zin) oc_h<U, 1>(R, K, FE, FH, sPsi, sL, c, z, lin, zl.x, slz);
        if ((U & 32) && (cm & 32)) oc_h<U, 2>(R, K, FE, FH, sPsi, sL, c, z, lin, zl.x, slz);
        lin += R.dlin;
    }
}

// The E half step of a unit: E_0 and E_1 up to z = n2 + 1, E_2 up to n2.
template <int U>
__device__ __forceinline__ void oc_e_unit(const OcR& R, const Oc& K, const float* __restrict__ FH, float* __restrict__ FE, float* __restrict__ sPsi, const float* __restrict__ sL, const unsigned char* __restrict__ sM, const float2* __restrict__ sCab, const OcCol& c) {
    int lin = c.lin;
#pragma unroll 2
    for (int z = c.z0; z <= c.z1; z += R.zs) {
        const float2 zl = *(const float2*)(sL + R.lt2 + 4 * z);
        const int slz = __float_as_int(zl.y);
        const bool zin = z <= R.n[2];
        const int cm = z >= 1 ? c.cm : 0;
        if ((U & 1) && (cm & 1)) oc_e<U, 0>(R, K, FH, FE, sPsi, sL, sM, sCab, c, z, lin, zl.x, slz);
        if ((U & 2) && (cm & 2)) oc_e<U, 1>(R, K, FH, FE, sPsi, sL, sM, sCab, c, z, lin, zl.x, slz);
        if ((U & 4) && (cm & 4) && zin) oc_e<U, 2>(R, K, FH, FE, sPsi, sL, sM, sCab, c, z, lin, zl.x, slz);
        lin += R.dlin;
    }
}

// Weight of the energy sample of E_c (h = 0) or H_c at padded q (fdtd_ports.cuh
// fdtd_energy: along its own axis the primal length for E, the dual for H).
__device__ __forceinline__ double oc_weight(const FdtdPtrs& P, const Oc& K, int h, int c, int q0, int q1, int q2) {
    const int q[3] = {q0, q1, q2};
    double w[3];
    for (int a = 0; a < 3; ++a) {
        const bool primal = (a == c) != (h != 0);
        w[a] = (double)(primal ? P.rel_h : P.rel_e)[K.line[a] + q[a]];
    }
    return w[0] * w[1] * w[2];
}

// A unit's share of the energy (fdtd_energy over the positions it updates,
// and the PMC mirrors of its H).
template <int U>
__device__ __forceinline__ void oc_energy_unit(const FdtdPtrs& P, const Oc& K, const OcR& R, const float* F, const unsigned char* sM, const OcCol& c, double& ae, double& ah) {
    int lin = c.lin;
    for (int z = c.z0; z <= c.z1; z += R.zs, lin += R.dlin) {
        if (z < 1) continue;
#pragma unroll
        for (int cc = 0; cc < 3; ++cc) {
            if ((U >> cc) & 1) {
                if ((c.cm >> cc) & 1 && z <= oc_utop(R.n, 0, cc, 2)) {
                    const int s = oc_slot(U, cc) * R.bs + lin;
                    const double x = (double)F[s];
                    ae += (double)P.eps[K.coef + sM[s]] * x * x * oc_weight(P, K, 0, cc, c.x, c.y, z);
                }
            }
            if ((U >> (3 + cc)) & 1) {
                if ((c.cm >> (3 + cc)) & 1 && z <= oc_utop(R.n, 1, cc, 2)) {
                    const double y = (double)F[oc_slot(U, 3 + cc) * R.bs + lin];
                    ah += y * y * oc_weight(P, K, 1, cc, c.x, c.y, z);
                    if (R.pmc) {
                        // The ghosts fdtd_pmc_ghosts mirrors this value into.
                        for (int a = 0; a < 3; ++a) {
                            if (a == cc) continue;
                            const int q = a == 0 ? c.x : (a == 1 ? c.y : z);
                            int g[3] = {c.x, c.y, z};
                            if (((R.pmc >> (2 * a)) & 1) && q == 1) {
                                g[a] = 0;
                                ah += y * y * oc_weight(P, K, 1, cc, g[0], g[1], g[2]);
                                g[a] = q;
                            }
                            if (((R.pmc >> (2 * a + 1)) & 1) && q == R.n[a]) {
                                g[a] = q + 1;
                                ah += y * y * oc_weight(P, K, 1, cc, g[0], g[1], g[2]);
                            }
                        }
                    }
                }
            }
        }
    }
}

// Sum a and b over the block (every thread calls it; deterministic order):
// the totals in thread 0. red: 2 * EMV_OC_WARPS doubles of shared memory.
__device__ __forceinline__ void oc_block_sum(double& a, double& b, double* red, int tid) {
    const int lane = tid & 31, warp = tid >> 5;
    for (int o = 16; o > 0; o >>= 1) {
        a += __shfl_down_sync(0xffffffffu, a, o);
        b += __shfl_down_sync(0xffffffffu, b, o);
    }
    if (lane == 0) {
        red[warp] = a;
        red[EMV_OC_WARPS + warp] = b;
    }
    __syncthreads();
    a = lane < EMV_OC_WARPS ? red[lane] : 0.0;
    b = lane < EMV_OC_WARPS ? red[EMV_OC_WARPS + lane] : 0.0;
    for (int o = 16; o > 0; o >>= 1) {
        a += __shfl_down_sync(0xffffffffu, a, o);
        b += __shfl_down_sync(0xffffffffu, b, o);
    }
}

// The port warp's samples (cpu.rs fdtd_sample_ports, the same order of
// terms), from shared memory only: absolute field-area indices of the terms
// (sT; a dropped component's terms point at the zero slot), their weights
// (sW), per port sPd = (dl, d_a, d_b, i_sign) and sPi = (kind, n_terms,
// first term relative to the design's first).
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

// Doubles of the port warp's product scratch (static shared memory): a
// design with more port terms samples with oc_sample_v / oc_sample_i alone.
#define EMV_OC_NX 128

// The port warp's samples of a design with at most EMV_OC_NX terms, the
// same sums as oc_sample_v and oc_sample_i (the CPU's operands and order):
// the lanes first form every term's product (w x; w 0.5 (x1 + x2)) into sX,
// then the lane of each port adds its products in order, no longer waiting
// on a term's index and field loads between its dependent adds.
__device__ __forceinline__ void oc_ports_v(const PortPtrs& Q, const float* F, const int* sT, int nterm, const double* sW, const double* sPd, const int* sPi, double* sX, int pb, int pe, int s, int lane) {
    for (int m = lane; m < nterm; m += 32) sX[m] = sW[m] * (double)F[sT[m]];
    __syncwarp();
    for (int p = pb + lane; p < pe; p += 32) {
        const int i = p - pb;
        const int kind = sPi[3 * i], n = sPi[3 * i + 1], t0 = sPi[3 * i + 2];
        double v = 0.0;
        for (int m = 0; m < n; ++m) v += sX[t0 + m];
        Q.tv[(long long)p * Q.tstride + s] = kind == 0 ? -v * sPd[4 * i] : v;
    }
    __syncwarp();
}

__device__ __forceinline__ void oc_ports_i(const PortPtrs& Q, const float* F, const int* sT, int nterm, const double* sW, const double* sPd, const int* sPi, const int* sMid, double* sX, int pb, int pe, int s, int lane) {
    // (A lumped port's terms get a product too, unused: their H indices are 0, a valid slot.)
    for (int m = lane; m < nterm; m += 32) sX[m] = sW[m] * 0.5 * ((double)F[sT[nterm + m]] + (double)F[sT[2 * nterm + m]]);
    __syncwarp();
    for (int p = pb + lane; p < pe; p += 32) {
        const int i = p - pb;
        const int kind = sPi[3 * i], n = sPi[3 * i + 1], t0 = sPi[3 * i + 2];
        double I;
        if (kind == 0) {
            const int* mi = sMid + 4 * i;
            I = ((double)F[mi[0]] - (double)F[mi[1]]) * sPd[4 * i + 2] - ((double)F[mi[2]] - (double)F[mi[3]]) * sPd[4 * i + 1];
        } else {
            double a = 0.0;
            for (int m = 0; m < n; ++m) a += sX[t0 + m];
            I = sPd[4 * i + 3] * a;
        }
        Q.ti[(long long)p * Q.tstride + s] = I;
    }
    __syncwarp();
}

// Field-area index of padded position p (relative to the design) of
// component bit b (E_c: c, H_c: 3 + c): the zero slot when it is not stored.
__device__ __forceinline__ int oc_store(const Oc& K, int b, int p) {
    if (!((K.U >> b) & 1)) return K.nf - 4;
    const int qx = p % K.dims[0];
    const int r = p / K.dims[0];
    const int qy = r % K.dims[1];
    const int qz = r / K.dims[1];
    return oc_popc(K.U & ((1 << b) - 1)) * K.bs + (qx - K.lo[0]) + K.m[0] * ((qy - K.lo[1]) + K.m[1] * (qz - K.lo[2]));
}

// Pool index of CPML memory element x of region (side h, component c, axis a).
__device__ __forceinline__ long long oc_psi_pool(const Oc& K, const FdtdDesign* D, int c, int a, int x) {
    int e[3], q[3];
    for (int b = 0; b < 3; ++b) e[b] = b == a ? K.slab_n[a] : K.m[b];
    q[0] = x % e[0];
    q[1] = (x / e[0]) % e[1];
    q[2] = x / (e[0] * e[1]);
    for (int b = 0; b < 3; ++b)
        if (b != a) q[b] += K.lo[b];
    int cd[3] = {K.dims[0], K.dims[1], K.dims[2]};
    cd[a] = K.slab_n[a];
    return D->psi_off[c * 3 + a] + q[0] + (long long)cd[0] * (q[1] + (long long)cd[1] * q[2]);
}

// Copy the CPML memories between the pool and shared memory (to_pool: back).
__device__ __forceinline__ void oc_psi_copy(const Oc& K, const FdtdDesign* D, const FdtdPtrs& P, float* sPsi, bool to_pool, int tid) {
    for (int h = 0; h < 2; ++h)
        for (int c = 0; c < 3; ++c)
            for (int a = 0; a < 3; ++a) {
                const int o = K.psi[h * 9 + c * 3 + a];
                if (o < 0) continue;
                int sz = K.slab_n[a];
                for (int b = 0; b < 3; ++b)
                    if (b != a) sz *= K.m[b];
                float* sp = sPsi + o;
                float* gp = h ? P.psi_h : P.psi_e;
                for (int x = tid; x < sz; x += EMV_OC_NT) {
                    const long long g = oc_psi_pool(K, D, c, a, x);
                    if (to_pool) gp[g] = sp[x];
                    else sp[x] = gp[g];
                }
            }
}

// Whether padded q is a position of the update range of E_c (h = 0) / H_c.
__device__ __forceinline__ bool oc_in_range(const Oc& K, int h, int c, const int q[3]) {
    for (int a = 0; a < 3; ++a)
        if (q[a] < 1 || q[a] > oc_utop(K.n, h, c, a)) return false;
    return true;
}

// Whether padded q is a ghost that fdtd_pmc_ghosts writes for H_c; inner: its source.
__device__ __forceinline__ bool oc_pmc_ghost(const Oc& K, int c, const int q[3], int inner[3]) {
    if (!K.pmc) return false;
    for (int a = 0; a < 3; ++a) {
        if (a == c) continue;
        const bool lo = ((K.pmc >> (2 * a)) & 1) && q[a] == 0;
        const bool hi = ((K.pmc >> (2 * a + 1)) & 1) && q[a] == K.n[a] + 1;
        if (!lo && !hi) continue;
        bool across = true;
        for (int b = 0; b < 3; ++b)
            if (b != a) across = across && q[b] >= 1 && q[b] <= oc_utop(K.n, 1, c, b);
        if (!across) continue;
        for (int b = 0; b < 3; ++b) inner[b] = q[b];
        inner[a] = lo ? 1 : K.n[a];
        return true;
    }
    return false;
}

// What the step loops read of the layout, into registers.
__device__ __forceinline__ void oc_regs(const Oc& K, OcR& R) {
    for (int a = 0; a < 3; ++a) R.n[a] = K.n[a];
    R.st1 = K.m[0];
    R.st2 = K.m[0] * K.m[1];
    R.zs = K.zs;
    R.dlin = K.zs * R.st2;
    R.bs = K.bs;
    R.pmc = K.pmc;
    R.pml = (K.prof[0] >= 0 ? 1 : 0) | (K.prof[1] >= 0 ? 2 : 0) | (K.prof[2] >= 0 ? 4 : 0);
    R.db = K.db;
    R.lt2 = K.lt[2];
    R.lp2 = K.lp[2];
    R.lo2 = K.lo[2];
}

// The energy check of oc_loop (every unit's share summed over the block),
// into energy[(j * ens + d) * 2 + {0, 1}].
template <int U>
__device__ __forceinline__ void oc_check(const Oc& K, const FdtdPtrs& P, const float* F, const float* sL, const unsigned char* sM, int j, int ens, int d, double* energy, double* red) {
    const int tid = threadIdx.x;
    OcR R;
    oc_regs(K, R);
    double ae = 0.0, ah = 0.0;
    if (tid < EMV_OC_NTU) {
        for (int u = tid; u < K.nunits; u += EMV_OC_NTU) {
            OcCol c;
            oc_col(K, sL, u, c);
            oc_energy_unit<U>(P, K, R, F, sM, c, ae, ah);
        }
    }
    oc_block_sum(ae, ah, red, tid);
    if (tid == 0) {
        energy[((long long)j * ens + d) * 2] = ae + K.rest_e;
        energy[((long long)j * ens + d) * 2 + 1] = ah + K.rest_h;
    }
}

// Launch flag: take the general step loop even where oc_loop25 applies
// (EMVOLVE_ONCHIP_GENERAL=1 on the host: to time and check one against the other).
#define EMV_OC_GENERAL 4

// Whether a design stored as E_y, H_x, H_z (U = 42) takes oc_loop25: one
// cell along y (2.5D, the GA's iris filters), CPML along z only (or none),
// no PMC face, one unit a thread. Then the box starts at the ghost layer
// along x and z (E_y reads H_z along x, H_x along z) and at q = 1 along y.
__device__ __forceinline__ bool oc_fast25(const Oc& K) {
    return !(K.flags & EMV_OC_GENERAL) && K.m[1] == 1 && K.lo[0] == 0 && K.lo[1] == 1 && K.lo[2] == 0 && K.prof[0] < 0 && K.prof[1] < 0 && K.pmc == 0 && K.nunits <= EMV_OC_NTU;
}

// The step loop of a 2.5D design (oc_fast25): oc_loop's updates with the
// same arithmetic (fdtd_cell.cuh, the same operands in the same order: the
// fields stay bit for bit the CPU's), written for this one case, where a
// generation of iris filters spends all its time. oc_loop pays about 35
// instructions a component update for its generality (per-component
// range and column tests, the slab lookups of three axes, per-component
// index arithmetic over runtime slots, 56 B of spills at 1,024 threads):
// here the column tests are two per-thread predicates, the z range only
// the top plane's H_x, the CPML stretch only in slab planes (one test a
// plane), the E_y both H updates read is loaded once, and the slots are
// fixed (E_y 0, H_x 1, H_z 2). Units as oc_col maps them: box index u =
// x + m0 z (lo = 0 along x and z, m1 = 1), planes z0, z0 + zs, ...
__device__ __forceinline__ void oc_loop25(const Oc& K, const FdtdPtrs& P, const PortPtrs& Q, float* F, float* sPsi, const float* sL, const unsigned char* sM, const float2* sCab, const float* sG, const int* sT, int nterm, const double* sW, const double* sPd, const int* sPi, const int* sMid, const int* sSrc, const float* sSc, int sf, int sn, int pb, int pe, int nsrc, int k, int ce, int ens, int d, double* energy, double* red) {
    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const bool upd = tid < EMV_OC_NTU;
    const int m0 = K.m[0], n0 = K.n[0], n2 = K.n[2], zs = K.zs, top = K.top[2];
    const int dlin = zs * m0;
    const float db = K.db;
    float* Ey = F;
    float* Hx = F + K.bs;
    float* Hz = F + 2 * K.bs;
    const int x = tid % m0, z0 = tid / m0;
    // Column tests (cpu.rs e_range, h_range): E_y and H_x from x = 1 to n0 + 1, H_z to n0.
    const bool act = upd && tid < K.nunits;
    const bool cx = act && x >= 1;
    const bool cz = cx && x <= n0;
    // The first plane updated (z = 0 is the ghost layer) and its box index.
    const int zf = z0 >= 1 ? z0 : z0 + zs;
    const int lf = x + m0 * zf;
    const float ie0 = sL[K.lt[0] + 4 * x], ih0 = sL[K.lt[0] + 4 * x + 2];
    const float* lz = sL + K.lt[2];
    const float* pz = sL + (K.lp[2] >= 0 ? K.lp[2] : 0);
    // CPML memories along z (oc_stretch, A = 2): element x + m0 s of H_x's, E_y's region.
    const int phx = K.psi[9 + 0 * 3 + 2] + x, pey = K.psi[1 * 3 + 2] + x;
    const bool inj = K.inj != 0;
    // The port warp's products in parallel (oc_ports_v) where they fit its scratch.
    __shared__ double sX[EMV_OC_NX];
    const bool px = nterm <= EMV_OC_NX;
    // The plane loops are unrolled four times: a thread's planes are
    // independent within a half step, and the loop waits on shared-memory
    // latency more than on issue (one H100, a generation of 64 filters:
    // 0.108 s device not unrolled, 0.090 s two planes at a time, 0.087 s four).
    int j = 0, next = ce;
    for (int st = 0; st < k; ++st) {
        // H half step (cpu.rs fdtd_update_h); the port warp samples the voltages of the previous step.
        if (cx) {
#pragma unroll 4
            for (int z = zf, lin = lf; z <= top; z += zs, lin += dlin) {
                const float2 zl = *(const float2*)(lz + 4 * z + 2);
                const int s = __float_as_int(zl.y);
                const float e = Ey[lin];
                if (z <= n2) {
                    // H_x: t1 (dE_z/dy) is zero, t2 = dE_y/dz, stretched in the z slab.
                    float t2 = (Ey[lin + m0] - e) * zl.x;
                    if (s >= 0) {
                        const float4 p = *(const float4*)(pz + 8 * z + 4);
                        float* ps = sPsi + phx + m0 * s;
                        float v = *ps;
                        t2 = emv_stretch(t2, p.x, p.y, p.z, v);
                        *ps = v;
                    }
                    Hx[lin] = emv_h_new(Hx[lin], db, 0.f, t2);
                }
                if (cz) {
                    // H_z: t1 = dE_y/dx, t2 (dE_x/dy) is zero.
                    const float t1 = (Ey[lin + 1] - e) * ih0;
                    Hz[lin] = emv_h_new(Hz[lin], db, t1, 0.f);
                }
            }
        } else if (!upd && st > 0) {
            if (px) oc_ports_v(Q, F, sT, nterm, sW, sPd, sPi, sX, pb, pe, st - 1, lane);
            else
                for (int p = pb + lane; p < pe; p += 32) oc_sample_v(Q, F, sT, sW, sPd, sPi, p - pb, p, st - 1);
        }
        __syncthreads();
        // E half step (cpu.rs fdtd_update_e) and the thread's own sources; the port warp samples the currents.
        if (cx) {
#pragma unroll 4
            for (int z = zf, lin = lf; z <= top; z += zs, lin += dlin) {
                const float2 zl = *(const float2*)(lz + 4 * z);
                const int s = __float_as_int(zl.y);
                // E_y: t1 = dH_x/dz (stretched in the z slab), t2 = dH_z/dx.
                float t1 = (Hx[lin] - Hx[lin - m0]) * zl.x;
                if (s >= 0) {
                    const float4 p = *(const float4*)(pz + 8 * z);
                    float* ps = sPsi + pey + m0 * s;
                    float v = *ps;
                    t1 = emv_stretch(t1, p.x, p.y, p.z, v);
                    *ps = v;
                }
                const float t2 = (Hz[lin] - Hz[lin - 1]) * ie0;
                const float2 ab = sCab[sM[lin]];
                Ey[lin] = emv_e_new(Ey[lin], ab.x, ab.y, t1, t2);
            }
        }
        if (upd) {
            if (sn > 0) {
                const float g = sG[st];
                for (int i = sf; i < sf + sn; ++i) F[sSrc[i]] = F[sSrc[i]] + sSc[i] * g;
            }
        } else {
            if (px) oc_ports_i(Q, F, sT, nterm, sW, sPd, sPi, sMid, sX, pb, pe, st, lane);
            else
                for (int p = pb + lane; p < pe; p += 32) oc_sample_i(Q, F, sT, nterm, sW, sPd, sPi, sMid, p - pb, p, st);
        }
        __syncthreads();
        if (inj) {
            if (!upd) {
                const float g = sG[st];
                for (int i = lane; i < nsrc; i += 32) F[sSrc[i]] = F[sSrc[i]] + sSc[i] * g;
            }
            __syncthreads();
        }
        if (st + 1 == next || st + 1 == k) {
            next += ce;
            oc_check<42>(K, P, F, sL, sM, j, ens, d, energy, red);
            ++j;
        }
    }
    if (!upd && k > 0) {
        if (px) oc_ports_v(Q, F, sT, nterm, sW, sPd, sPi, sX, pb, pe, k - 1, lane);
        else
            for (int p = pb + lane; p < pe; p += 32) oc_sample_v(Q, F, sT, sW, sPd, sPi, p - pb, p, k - 1);
    }
}

// The step loop of a design with stored mask U (k steps), with the energy
// after every ce-th step and after the last into energy[(j * ens + d) * 2 + {0, 1}].
template <int U>
__device__ __forceinline__ void oc_loop(const Oc& K, const FdtdPtrs& P, const PortPtrs& Q, float* F, float* sPsi, const float* sL, const unsigned char* sM, const float2* sCab, const float* sG, const int* sT, int nterm, const double* sW, const double* sPd, const int* sPi, const int* sMid, const int* sSrc, const float* sSc, int sf, int sn, int pb, int pe, int nsrc, int k, int ce, int ens, int d, double* energy, double* red) {
    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const bool upd = tid < EMV_OC_NTU;
    if constexpr (U == 42) {
        if (oc_fast25(K)) {
            oc_loop25(K, P, Q, F, sPsi, sL, sM, sCab, sG, sT, nterm, sW, sPd, sPi, sMid, sSrc, sSc, sf, sn, pb, pe, nsrc, k, ce, ens, d, energy, red);
            return;
        }
    }
    OcR R;
    oc_regs(K, R);
    const int nunits = K.nunits;
    const bool inj = K.inj != 0;
    // One unit a thread (the GA's designs): it stays in registers; a thread with
    // more (designs wider than the block) rebuilds each every half step.
    const bool one = nunits <= EMV_OC_NTU;
    OcCol c0;
    if (one && tid < nunits) oc_col(K, sL, tid, c0);
    int j = 0, next = ce;
    for (int st = 0; st < k; ++st) {
        // H half step; the port warp samples the voltages of the previous step.
        if (upd) {
            if (one) {
                if (tid < nunits) oc_h_unit<U>(R, K, F, F + oc_popc(U & 7) * R.bs, sPsi, sL, c0);
            } else {
                for (int u = tid; u < nunits; u += EMV_OC_NTU) {
                    OcCol c;
                    oc_col(K, sL, u, c);
                    oc_h_unit<U>(R, K, F, F + oc_popc(U & 7) * R.bs, sPsi, sL, c);
                }
            }
        } else if (st > 0) {
            for (int p = pb + lane; p < pe; p += 32) oc_sample_v(Q, F, sT, sW, sPd, sPi, p - pb, p, st - 1);
        }
        __syncthreads();
        // E full step and the thread's own sources (cpu.rs fdtd_inject); the port warp samples the currents.
        if (upd) {
            if (one) {
                if (tid < nunits) oc_e_unit<U>(R, K, F + oc_popc(U & 7) * R.bs, F, sPsi, sL, sM, sCab, c0);
            } else {
                for (int u = tid; u < nunits; u += EMV_OC_NTU) {
                    OcCol c;
                    oc_col(K, sL, u, c);
                    oc_e_unit<U>(R, K, F + oc_popc(U & 7) * R.bs, F, sPsi, sL, sM, sCab, c);
                }
            }
            if (sn > 0) {
                const float g = sG[st];
                for (int i = sf; i < sf + sn; ++i) F[sSrc[i]] = F[sSrc[i]] + sSc[i] * g;
            }
        } else {
            for (int p = pb + lane; p < pe; p += 32) oc_sample_i(Q, F, sT, nterm, sW, sPd, sPi, sMid, p - pb, p, st);
        }
        __syncthreads();
        if (inj) {
            // The sources of threads that would own them out of order (distinct points, checked by the host).
            if (!upd) {
                const float g = sG[st];
                for (int i = lane; i < nsrc; i += 32) F[sSrc[i]] = F[sSrc[i]] + sSc[i] * g;
            }
            __syncthreads();
        }
        if (st + 1 == next || st + 1 == k) {
            next += ce;
            double ae = 0.0, ah = 0.0;
            if (upd) {
                for (int u = tid; u < nunits; u += EMV_OC_NTU) {
                    OcCol c;
                    oc_col(K, sL, u, c);
                    oc_energy_unit<U>(P, K, R, F, sM, c, ae, ah);
                }
            }
            oc_block_sum(ae, ah, red, tid);
            if (tid == 0) {
                energy[((long long)j * ens + d) * 2] = ae + K.rest_e;
                energy[((long long)j * ens + d) * 2 + 1] = ah + K.rest_h;
            }
            ++j;
        }
    }
    if (!upd && k > 0) {
        for (int p = pb + lane; p < pe; p += 32) oc_sample_v(Q, F, sT, sW, sPd, sPi, p - pb, p, k - 1);
    }
}

// The stored masks the step loop is compiled for: those the host names
// (-DEMV_OC_SET -DEMV_OC_P42 ...: the patterns of the batch, a shorter
// compile), else all of onchip.rs PATTERNS.
#ifndef EMV_OC_SET
#define EMV_OC_P42 1
#define EMV_OC_P49 1
#define EMV_OC_P28 1
#define EMV_OC_P14 1
#define EMV_OC_P21 1
#define EMV_OC_P35 1
#define EMV_OC_P63 1
#endif
__device__ __forceinline__ bool oc_supported(int U) {
    bool s = false;
#ifdef EMV_OC_P42
    s = s || U == 42;
#endif
#ifdef EMV_OC_P49
    s = s || U == 49;
#endif
#ifdef EMV_OC_P28
    s = s || U == 28;
#endif
#ifdef EMV_OC_P14
    s = s || U == 14;
#endif
#ifdef EMV_OC_P21
    s = s || U == 21;
#endif
#ifdef EMV_OC_P35
    s = s || U == 35;
#endif
#ifdef EMV_OC_P63
    s = s || U == 63;
#endif
    return s;
}

// The step-loop variants compiled: stored masks (E0 1, E1 2, E2 4, H0 8,
// H1 16, H2 32), onchip.rs PATTERNS: the 2.5D sets (one invariant axis:
// E along it with the two H across, or the reverse) and all six.
#define EMV_OC_CASE(U)                                                                                                                                            \
    case U:                                                                                                                                                       \
        oc_loop<U>(K, P, Q, F, sPsi, sL, sM, sCab, sG, sT, nterm, sW, sPd, sPi, sMid, sSrc, sSc, sf, sn, pb, pe, nsrc, k, ce, ens, d, energy, red); \
        break;

// k steps of the designs P.blocks[2b] (one block each), from the field set
// of P (updated in place, psi_e and psi_h too). idx[5d..5d+5]: the design's
// ports [pb, pe) and sources [sb, se) in Q's tables, its stored mask U.
// flags: EMV_OC_*. energy[(j * ens + d) * 2], [.. + 1]: sum eps E^2, sum H^2
// (weighted as fdtd_energy) after the j-th check of the launch (every ce
// steps, and after the k-th).
extern "C" __global__ void __launch_bounds__(EMV_OC_NT, 1) fdtd_onchip(FdtdPtrs P, PortPtrs Q, const int* idx, int k, int flags, double* energy, int ce, int ens) {
    EMV_OC_SMEM
    const int tid = threadIdx.x;
    const int d = P.blocks[2 * blockIdx.x];
    const FdtdDesign* D = P.designs + d;
    // The design's layout, computed once into shared memory (read by all).
    __shared__ Oc K;
    __shared__ double red[2 * EMV_OC_WARPS];
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
        K.flags = flags;
        K.U = oc_supported(idx[5 * d + 4]) ? idx[5 * d + 4] : 63;
        K.inj = 0;
        K.rest_e = 0.0;
        K.rest_h = 0.0;
        oc_layout(D, K);
    }
    __syncthreads();
    const int pb = idx[5 * d], pe = idx[5 * d + 1], sb = idx[5 * d + 2], se = idx[5 * d + 3];
    const int term0 = pe > pb ? Q.ports[pb].term_off : 0;
    const int nterm = pe > pb ? Q.ports[pe - 1].term_off + Q.ports[pe - 1].n_terms - term0 : 0;
    const int nsrc = se - sb;
    const int nport = pe - pb;
    const int U = K.U;

    // Carve the shared memory (onchip.rs Layout::bytes: the same order and sizes).
    float* F = (float*)smem;
    double* sW = (double*)(F + K.nf);
    double* sPd = sW + nterm;
    float2* sCab = (float2*)(sW + ((nterm + 4 * nport + 1) & ~1));
    float* sG = (float*)(sCab + EMV_OC_NCOEF);
    float* sL = sG + oc_r4(Q.gstride);
    float* sPsi = sL + K.ntab;
    int* sT = (int*)(sPsi + K.npsi);
    int* sMid = sT + 3 * nterm;
    int* sPi = sMid + 4 * nport;
    int* sSrc = sPi + 3 * nport;
    float* sSc = (float*)(sSrc + nsrc);
    int* sOwn = (int*)(sSc + nsrc);
    unsigned char* sM = (unsigned char*)(sOwn + nsrc);

    // Load: the stored components over the box (ghosts included), the
    // materials of the stored E, the zero slot, tables.
    const int bm0 = K.m[0], bm1 = K.m[1], nbox = K.m[0] * K.m[1] * K.m[2];
    for (int b = tid; b < nbox; b += EMV_OC_NT) {
        const int q0 = b % bm0 + K.lo[0], q1 = (b / bm0) % bm1 + K.lo[1], q2 = b / (bm0 * bm1) + K.lo[2];
        const long long p = K.off + q0 + (long long)K.dims[0] * (q1 + (long long)K.dims[1] * q2);
        int slot = 0;
        for (int c = 0; c < 6; ++c) {
            if (!((U >> c) & 1)) continue;
            const int i = slot * K.bs + b;
            if (c < 3) {
                F[i] = P.e[c][p];
                sM[i] = P.mat[c][p];
            } else {
                F[i] = P.h[c - 3][p];
            }
            ++slot;
        }
    }
    if (tid < 4) F[K.nf - 4 + tid] = 0.f;
    for (int i = tid; i < K.ncoef; i += EMV_OC_NT) {
        sCab[i].x = P.ca[K.coef + i];
        sCab[i].y = P.cb[K.coef + i];
    }
    for (int i = tid; i < k; i += EMV_OC_NT) sG[i] = Q.gval[(long long)d * Q.gstride + i];
    for (int a = 0; a < 3; ++a) {
        float* t = sL + K.lt[a];
        for (int q = tid; q < K.dims[a]; q += EMV_OC_NT) {
            // E side: nodes q = 1..n+1; H side: half nodes q = 1..n (fdtd.cu prof_index).
            const bool ie = K.prof[a] >= 0 && q >= 1 && q <= K.n[a] + 1, ih = K.prof[a] >= 0 && q >= 1 && q <= K.n[a];
            const int i = K.prof[a] + q - 1;
            t[4 * q] = P.inv_e[K.line[a] + q];
            t[4 * q + 1] = __int_as_float(ie ? P.slab_e[i] : -1);
            t[4 * q + 2] = P.inv_h[K.line[a] + q];
            t[4 * q + 3] = __int_as_float(ih ? P.slab_h[i] : -1);
            if (K.lp[a] >= 0) {
                float* pp = sL + K.lp[a] + 8 * q;
                pp[0] = ie ? P.pe_b[i] : 0.f;
                pp[1] = ie ? P.pe_c[i] : 0.f;
                pp[2] = ie ? P.pe_k[i] : 1.f;
                pp[3] = 0.f;
                pp[4] = ih ? P.ph_b[i] : 0.f;
                pp[5] = ih ? P.ph_c[i] : 0.f;
                pp[6] = ih ? P.ph_k[i] : 1.f;
                pp[7] = 0.f;
            }
        }
    }
    oc_psi_copy(K, D, P, sPsi, false, tid);
    for (int i = tid; i < nterm; i += EMV_OC_NT) {
        // Port terms: E of the port's component (t_idx0), H below/above (guides).
        int pi = pb;
        while (pi + 1 < pe && Q.ports[pi + 1].term_off <= term0 + i) ++pi;
        const FdtdPort* port = Q.ports + pi;
        sT[i] = oc_store(K, port->comp_e, Q.t_idx0[term0 + i]);
        sT[nterm + i] = port->kind == 1 ? oc_store(K, 3 + port->comp_h, Q.t_idx1[term0 + i]) : 0;
        sT[2 * nterm + i] = port->kind == 1 ? oc_store(K, 3 + port->comp_h, Q.t_idx2[term0 + i]) : 0;
        sW[i] = Q.t_w[term0 + i];
    }
    for (int i = tid; i < nsrc; i += EMV_OC_NT) {
        const int c = Q.src_comp[sb + i], p = Q.src_idx[sb + i];
        sSrc[i] = oc_store(K, c, p);
        sSc[i] = Q.src_coef[sb + i];
        // The unit that updates this E position (oc_col's mapping).
        const int qx = p % K.dims[0], qy = (p / K.dims[0]) % K.dims[1], qz = p / (K.dims[0] * K.dims[1]);
        sOwn[i] = (qx - K.lo[0]) + K.m[0] * ((qy - K.lo[1]) + K.m[1] * ((qz - K.lo[2]) % K.zs));
    }
    for (int i = tid; i < nport; i += EMV_OC_NT) {
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
            sMid[4 * i] = oc_store(K, 3 + b, port->mid);
            sMid[4 * i + 1] = oc_store(K, 3 + b, port->mid - port->s_a);
            sMid[4 * i + 2] = oc_store(K, 3 + a, port->mid);
            sMid[4 * i + 3] = oc_store(K, 3 + a, port->mid - port->s_b);
        }
    }
    // The pool's constant energy (positions no update or mirror writes), from non-zero starts only.
    if (!(flags & EMV_OC_GHOSTS_ZERO)) {
        double ae = 0.0, ah = 0.0;
        const int L = K.dims[0] * K.dims[1] * K.dims[2];
        for (int p = tid; p < L; p += EMV_OC_NT) {
            const int q[3] = {p % K.dims[0], (p / K.dims[0]) % K.dims[1], p / (K.dims[0] * K.dims[1])};
            int in[3];
            for (int c = 0; c < 3; ++c) {
                if (!(((U >> c) & 1) && oc_in_range(K, 0, c, q))) {
                    const double x = (double)P.e[c][K.off + p];
                    ae += (double)P.eps[K.coef + P.mat[c][K.off + p]] * x * x * oc_weight(P, K, 0, c, q[0], q[1], q[2]);
                }
                const bool hs = (U >> (3 + c)) & 1;
                if (hs && oc_in_range(K, 1, c, q)) continue;
                // A PMC ghost holds minus its inner value (fdtd_pmc_ghosts; of a stored H the checks count it).
                const bool g = oc_pmc_ghost(K, c, q, in);
                if (g && hs) continue;
                const double y = (double)P.h[c][K.off + (g ? in[0] + K.dims[0] * (in[1] + K.dims[1] * in[2]) : p)];
                ah += y * y * oc_weight(P, K, 1, c, q[0], q[1], q[2]);
            }
        }
        oc_block_sum(ae, ah, red, tid);
        if (tid == 0) {
            K.rest_e = ae;
            K.rest_h = ah;
        }
    }
    __syncthreads();
    // The thread's own sources: contiguous in the table, else the port warp adds them all.
    int sf = 0, sn = 0;
    if (tid < EMV_OC_NTU && tid < K.nunits) {
        for (int i = 0; i < nsrc; ++i) {
            if (sOwn[i] != tid) continue;
            if (sn == 0) sf = i;
            if (i != sf + sn) K.inj = 1;
            ++sn;
        }
    }
    if (tid == 0 && K.nunits > EMV_OC_NTU && nsrc > 0) K.inj = 1;
    __syncthreads();
    if (K.inj) sn = 0;

    // (The host sends only compiled patterns; another would take all six's loop, here or not.)
    switch (U) {
#ifdef EMV_OC_P42
        EMV_OC_CASE(42)
#endif
#ifdef EMV_OC_P49
        EMV_OC_CASE(49)
#endif
#ifdef EMV_OC_P28
        EMV_OC_CASE(28)
#endif
#ifdef EMV_OC_P14
        EMV_OC_CASE(14)
#endif
#ifdef EMV_OC_P21
        EMV_OC_CASE(21)
#endif
#ifdef EMV_OC_P35
        EMV_OC_CASE(35)
#endif
#ifdef EMV_OC_P63
        EMV_OC_CASE(63)
#endif
        default:
            break;
    }
    __syncthreads();

    // Write back: the stored components over their update ranges, every PMC
    // ghost fdtd_pmc_ghosts writes (of a dropped H too), the CPML memories.
    {
        const int L = K.dims[0] * K.dims[1] * K.dims[2];
        for (int p = tid; p < L; p += EMV_OC_NT) {
            const int q[3] = {p % K.dims[0], (p / K.dims[0]) % K.dims[1], p / (K.dims[0] * K.dims[1])};
            const int bi = (q[0] - K.lo[0]) + K.m[0] * ((q[1] - K.lo[1]) + K.m[1] * (q[2] - K.lo[2]));
            int in[3];
            for (int c = 0; c < 3; ++c) {
                if (((U >> c) & 1) && oc_in_range(K, 0, c, q)) P.e[c][K.off + p] = F[oc_slot(U, c) * K.bs + bi];
                if (((U >> (3 + c)) & 1) && oc_in_range(K, 1, c, q)) P.h[c][K.off + p] = F[oc_popc(U & ((1 << (3 + c)) - 1)) * K.bs + bi];
                if (oc_pmc_ghost(K, c, q, in)) {
                    const int pi = in[0] + K.dims[0] * (in[1] + K.dims[1] * in[2]);
                    const int ii = (in[0] - K.lo[0]) + K.m[0] * ((in[1] - K.lo[1]) + K.m[1] * (in[2] - K.lo[2]));
                    P.h[c][K.off + p] = -(((U >> (3 + c)) & 1) ? F[oc_popc(U & ((1 << (3 + c)) - 1)) * K.bs + ii] : P.h[c][K.off + pi]);
                }
            }
        }
    }
    oc_psi_copy(K, D, P, sPsi, true, tid);
}
