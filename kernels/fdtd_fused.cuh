// The fused step of the streaming FDTD module: the cp.async plane pipeline,
// the per-plane helpers and the kernel fdtd_step (one H half step, the PMC
// ghosts and one E step in a single pass over each block's z-chunk; the
// lean blocks' form is fdtd_lean.cuh). Included by kernels/fdtd.cu after
// the design context, indexing, CPML profiles and split kernels it uses;
// compiled as part of that one NVRTC module.

// ---------------------------------------------------------------------------
// Fused step: H half step, PMC ghosts and E full step in one pass, reading
// the set (e, h, psi_e, psi_h) and writing (e_out, h_out, psi_e_out,
// psi_h_out).
//
// Each block walks its z-chunk plane by plane. A pipeline of EMV_NS stages
// in shared memory holds, per plane, E on the tile plus a one-cell ring and
// the old H on the tile plus the column x = X0-1 and row y = Y0-1; while
// plane z is computed, planes up to z+EMV_NS-1 are on their way
// (cp.async: the copies bypass registers and complete in commit order).
// H of plane z is computed for the tile and for the halo column (Hy, Hz)
// and row (Hz, Hx) that the E update needs, recomputed here from the read
// set, never read from another block. E of plane z follows from the new H
// of planes z (shared memory) and z-1 (registers). A chunk starting at
// z0 > 0 first recomputes H of plane z0-1. Every position of the padded
// arrays is written by exactly one thread: E out of its update range is
// copied, H out of its range is 0 or, on PMC faces, the mirror image (as
// fdtd_pmc_ghosts leaves it). The ghost plane z = 0 (logical -1) takes its
// PMC mirror from plane 1, so the owner of plane 0 (chunk 0; zchunk >= 2)
// writes it when it reaches plane 1.

#ifndef EMV_NS
#define EMV_NS 4
#endif
// Halo H spread over four warps when a warp is exactly one tile row.
#ifndef EMV_HALO_SPREAD
#define EMV_HALO_SPREAD (EMV_TX == 32 && EMV_TY >= 4 && EMV_TY <= 32)
#endif
#define EMV_HW (EMV_TX + 1)
#define EMV_HH (EMV_TY + 1)

// Asynchronous 4-byte global -> shared copies (zero-filled when !ok). The CPU
// emulation (scripts/kernel-emu) provides its own versions that land only at
// cp_wait, the latest moment the hardware may complete them.
#if defined(EMV_NO_CPASYNC) && !defined(EMV_EMU)
// Fallback (the host retries with it if the cp.async build fails): plain loads.
__device__ __forceinline__ void cp4(float* dst, const float* src, bool ok) { *dst = ok ? *src : 0.f; }
__device__ __forceinline__ void cp_commit() {}
template <int N>
__device__ __forceinline__ void cp_wait() {}
#elif !defined(EMV_EMU)
__device__ __forceinline__ void cp4(float* dst, const float* src, bool ok) {
    unsigned s;
    // The intrinsic (not inline cvta) lets the compiler fold the stage's base.
    s = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(s), "l"(src), "r"(ok ? 4 : 0) : "memory");
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
#endif

struct Stage {
    float e[3][EMV_RH][EMV_RW];
    float h[3][EMV_HH][EMV_HW];
    Prof pz[2];  // CPML profile of the plane along z: [E side, H side]
};

// Ring / extended-tile elements per thread.
#define EMV_NRE ((EMV_RH * EMV_RW + EMV_NT - 1) / EMV_NT)
#define EMV_NRH ((EMV_HH * EMV_HW + EMV_NT - 1) / EMV_NT)

// Plane-invariant part of a thread's copy slots: element i = tid + k * EMV_NT
// of the E ring and of the extended H tile (the halo corner is not needed),
// as an in-design xy offset, -1 outside the array.
struct Slots {
    int e[EMV_NRE];
    int h[EMV_NRH];
};

__device__ __forceinline__ void make_slots(const Dctx& K, const Blk& B, int tid, Slots& sl) {
#pragma unroll
    for (int k = 0; k < EMV_NRE; ++k) {
        const int i = tid + k * EMV_NT;
        const int ry = i / EMV_RW;
        const int gx = B.X0 - 1 + (i - ry * EMV_RW);
        const int gy = B.Y0 - 1 + ry;
        sl.e[k] = (i < EMV_RH * EMV_RW && gx >= 0 && gx < K.dims[0] && gy >= 0 && gy < K.dims[1]) ? gx + gy * K.s1 : -1;
    }
#pragma unroll
    for (int k = 0; k < EMV_NRH; ++k) {
        const int i = tid + k * EMV_NT;
        const int hy = i / EMV_HW;
        const int hx = i - hy * EMV_HW;
        const int gx = B.X0 - 1 + hx;
        const int gy = B.Y0 - 1 + hy;
        sl.h[k] = (i < EMV_HH * EMV_HW && (hx > 0 || hy > 0) && gx >= 0 && gx < K.dims[0] && gy >= 0 && gy < K.dims[1])
                      ? gx + gy * K.s1
                      : -1;
    }
}

// Issue the copies of plane qz into a stage: E on the ring if e_ok, old H
// on the tile, halo column and row if h_ok (zeros elsewhere). One group.
__device__ __forceinline__ void stage_issue(const FdtdPtrs& P, const Dctx& K, Stage& st, int qz, int tid, bool e_ok,
                                            bool h_ok, const Slots& sl) {
    const bool zok = qz < K.dims[2];
    const long long zo = K.off + (long long)qz * K.s2;
    float* se = &st.e[0][0][0];
    float* sh = &st.h[0][0][0];
#pragma unroll
    for (int k = 0; k < EMV_NRE; ++k) {
        const int i = tid + k * EMV_NT;
        if (i < EMV_RH * EMV_RW) {
            const bool ok = e_ok && zok && sl.e[k] >= 0;
            const long long p = ok ? zo + sl.e[k] : 0;
            cp4(se + i, P.e[0] + p, ok);
            cp4(se + EMV_RH * EMV_RW + i, P.e[1] + p, ok);
            cp4(se + 2 * EMV_RH * EMV_RW + i, P.e[2] + p, ok);
        }
    }
#pragma unroll
    for (int k = 0; k < EMV_NRH; ++k) {
        const int i = tid + k * EMV_NT;
        if (i < EMV_HH * EMV_HW) {
            const bool ok = h_ok && zok && sl.h[k] >= 0;
            const long long p = ok ? zo + sl.h[k] : 0;
            cp4(sh + i, P.h[0] + p, ok);
            cp4(sh + EMV_HH * EMV_HW + i, P.h[1] + p, ok);
            cp4(sh + 2 * EMV_HH * EMV_HW + i, P.h[2] + p, ok);
        }
    }
    if (tid == EMV_NT - 1) {
        // The plane's z profile and spacing travel with its data (no dependent
        // loads on the critical path).
#pragma unroll
        for (int side = 0; side < 2; ++side) {
            const int i = prof_index(K, 2, qz, side == 0);
            Prof& d = st.pz[side];
            if (i >= 0) {
                cp4((float*)&d.sl, (const float*)((side == 0 ? P.slab_e : P.slab_h) + i), true);
                cp4(&d.b, (side == 0 ? P.pe_b : P.ph_b) + i, true);
                cp4(&d.c, (side == 0 ? P.pe_c : P.ph_c) + i, true);
                cp4(&d.k, (side == 0 ? P.pe_k : P.ph_k) + i, true);
            } else {
                // Field by field: d.id below is an asynchronous copy in flight.
                d.sl = -1;
                d.b = 0.f;
                d.c = 0.f;
                d.k = 1.f;
            }
            const bool zin = qz < K.dims[2];
            cp4(&d.id, (side == 0 ? P.inv_e : P.inv_h) + K.line[2] + (zin ? qz : 0), zin);
        }
    }
    cp_commit();
}

// New H_c at padded (qx, qy, qz) (inside its update range), whose ring
// coordinates are (rx, ry) in Ec (plane z) and En (plane z+1) and whose old
// value is h.
// The two unstretched derivatives of H_C's update, t1 = dE_B/dA and t2 = dE_A/dB.
template <int C>
__device__ __forceinline__ void fused_d(const Stage& Sc, const Stage& Sn, int rx, int ry, const Prof& px,
                                        const Prof& py, const Prof& pz, float& t1, float& t2) {
    if (C == 0) {
        t1 = (Sc.e[2][ry + 1][rx] - Sc.e[2][ry][rx]) * py.id;
        t2 = (Sn.e[1][ry][rx] - Sc.e[1][ry][rx]) * pz.id;
    } else if (C == 1) {
        t1 = (Sn.e[0][ry][rx] - Sc.e[0][ry][rx]) * pz.id;
        t2 = (Sc.e[2][ry][rx + 1] - Sc.e[2][ry][rx]) * px.id;
    } else {
        t1 = (Sc.e[1][ry][rx + 1] - Sc.e[1][ry][rx]) * px.id;
        t2 = (Sc.e[0][ry + 1][rx] - Sc.e[0][ry][rx]) * py.id;
    }
}

template <int C>
__device__ __forceinline__ float fused_h(const Dctx& K, const Stage& Sc, const Stage& Sn, int rx, int ry, int qx,
                                         int qy, int qz, float h, const Prof& px, const Prof& py, const Prof& pz,
                                         const float* psi_in, float* psi_out) {
    float t1, t2;
    fused_d<C>(Sc, Sn, rx, ry, px, py, pz, t1, t2);
    return h_core<C>(K, qx, qy, qz, h, t1, t2, pick<(C + 1) % 3>(px, py, pz), pick<(C + 2) % 3>(px, py, pz), psi_in,
                     psi_out);
}

// Plane-invariant classification of the thread's column: bit C of `in`
// when E_C is in its update range along x and y, bit 3+C for H_C; for the
// ghost test of H_C, cnt = axes out of range among x, y (the axis C counts
// 3) and face = 2*axis+side of the last one.
template <int C>
__device__ __forceinline__ void classify(const Dctx& K, int qx, int qy, int& in, int& cnt, int& face) {
    const int q[2] = {qx, qy};
    bool ein = true, hin = true;
    cnt = 0;
    face = -1;
#pragma unroll
    for (int a = 0; a < 2; ++a) {
        const int ehi = (a == C) ? K.n[a] : K.n[a] + 1;
        ein = ein && q[a] >= 1 && q[a] <= ehi;
        if (!h_in_axis<C>(K, a, q[a])) {
            hin = false;
            if (a == C) {
                cnt += 3;
            } else {
                ++cnt;
                face = 2 * a + (q[a] == 0 ? 0 : 1);
            }
        }
    }
    if (ein) in |= 1 << C;
    if (hin) in |= 1 << (3 + C);
}

template <int C>
__device__ __forceinline__ bool e_in_z(const Dctx& K, int in, int qz) {
    return ((in >> C) & 1) && qz >= 1 && qz <= (C == 2 ? K.n[2] : K.n[2] + 1);
}

template <int C>
__device__ __forceinline__ bool h_in_z(const Dctx& K, int in, int qz) {
    return ((in >> (3 + C)) & 1) && h_in_axis<C>(K, 2, qz);
}

// ghost_face<C> of the column's position on plane qz, from its classification.
template <int C>
__device__ __forceinline__ int ghost_z(const Dctx& K, int cnt, int face, int qz) {
    if (!h_in_axis<C>(K, 2, qz)) {
        if (C == 2) {
            cnt += 3;
        } else {
            ++cnt;
            face = 4 + (qz == 0 ? 0 : 1);
        }
    }
    return cnt == 1 ? face : -1;
}

// Whether the position lies in the PML along any axis of its profiles (a
// slab number >= 0; outside it is negative, so the AND is negative only
// when all three are).
__device__ __forceinline__ bool in_pml(const Prof& px, const Prof& py, const Prof& pz) {
    return (px.sl & py.sl & pz.sl) >= 0;
}

// CPML memory of E_C along A at the thread's position (0 when not needed),
// gathered before any psi store: loads and stores of one array cannot be
// reordered by the compiler, so gathering first saves a round trip per term.
template <int C, int A>
__device__ __forceinline__ float psi_get(const Dctx& K, bool on, const Prof& pr, int qx, int qy, int qz,
                                         const float* psi) {
    if (!on || pr.sl < 0) return 0.f;
    return psi[psi_index<C, A>(K, pr.sl, qx, qy, qz)];
}

// cpu.rs stretch() with the psi value already loaded.
__device__ __forceinline__ float stretch_g(float t, const Prof& pr, float v, long long x, float* psi) {
    if (pr.sl < 0) return t;
    const float s = pr.b * v + pr.c * t;
    psi[x] = s;
    return t * pr.k + s;
}

// stretch_g of E_C along A with the psi value loaded early (psi_get at the
// top of the plane); the index is recomputed rather than kept in registers.
template <int C, int A>
__device__ __forceinline__ float stretch_e(const Dctx& K, float t, const Prof& pr, float v, int qx, int qy, int qz, float* psi) {
    if (pr.sl < 0) return t;
    return stretch_g(t, pr, v, psi_index<C, A>(K, pr.sl, qx, qy, qz), psi);
}

// The CPML memories of the thread's own H (the read set's), loaded ahead of
// the H update: w = {H_x along y, z; H_y along z, x; H_z along x, y} (0
// where not needed). Issued before the plane's first barrier (the z profile
// of plane qz is visible since the previous plane's barrier), so that their
// latency overlaps the wait there instead of stalling the update (the
// largest stall of a CPML-heavy batch: docs/BENCHMARKS.md).
__device__ __forceinline__ void psi_h_get(const Dctx& K, bool on, int in, const Prof& px, const Prof& py,
                                          const Prof& pz, int qx, int qy, int qz, const float* psi, float* w) {
#pragma unroll
    for (int i = 0; i < 6; ++i) w[i] = 0.f;
    // One branch for the six: written as six guarded loads, the compiler
    // if-converts them and computes every index and predicated load even
    // where no axis has PML (+24 % instructions on CPML-free blocks).
    if (!(on && in_pml(px, py, pz))) return;
    const bool o0 = h_in_z<0>(K, in, qz);
    const bool o1 = h_in_z<1>(K, in, qz);
    const bool o2 = h_in_z<2>(K, in, qz);
    w[0] = psi_get<0, 1>(K, o0, py, qx, qy, qz, psi);
    w[1] = psi_get<0, 2>(K, o0, pz, qx, qy, qz, psi);
    w[2] = psi_get<1, 2>(K, o1, pz, qx, qy, qz, psi);
    w[3] = psi_get<1, 0>(K, o1, px, qx, qy, qz, psi);
    w[4] = psi_get<2, 0>(K, o2, px, qx, qy, qz, psi);
    w[5] = psi_get<2, 1>(K, o2, py, qx, qy, qz, psi);
}

// cpu.rs stretch() of H_C along A with the read set's psi value v loaded
// (psi_h_get): the new value goes to psi_out unless it is null (a plane the
// block recomputes but does not own).
template <int C, int A>
__device__ __forceinline__ float stretch_hv(const Dctx& K, float t, const Prof& pr, float v, int qx, int qy, int qz,
                                            float* psi_out) {
    if (pr.sl < 0) return t;
    const float s = pr.b * v + pr.c * t;
    if (psi_out) psi_out[psi_index<C, A>(K, pr.sl, qx, qy, qz)] = s;
    return t * pr.k + s;
}

// The thread's own three new H values (h_core's operands in its order), the
// CPML memories read from w (psi_h_get).
__device__ __forceinline__ void own_h3(const Dctx& K, const Stage& Sc, const Stage& Sn, int hx, int hy, int qx, int qy,
                                       int qz, int in, const Prof& px, const Prof& py, const Prof& pz, const float* w,
                                       float* __restrict__ psi_out, float& h0, float& h1, float& h2) {
    float t1, t2;
    if (h_in_z<0>(K, in, qz)) {
        fused_d<0>(Sc, Sn, hx, hy, px, py, pz, t1, t2);
        t1 = stretch_hv<0, 1>(K, t1, py, w[0], qx, qy, qz, psi_out);
        t2 = stretch_hv<0, 2>(K, t2, pz, w[1], qx, qy, qz, psi_out);
        h0 = Sc.h[0][hy][hx] - K.db * (t1 - t2);
    }
    if (h_in_z<1>(K, in, qz)) {
        fused_d<1>(Sc, Sn, hx, hy, px, py, pz, t1, t2);
        t1 = stretch_hv<1, 2>(K, t1, pz, w[2], qx, qy, qz, psi_out);
        t2 = stretch_hv<1, 0>(K, t2, px, w[3], qx, qy, qz, psi_out);
        h1 = Sc.h[1][hy][hx] - K.db * (t1 - t2);
    }
    if (h_in_z<2>(K, in, qz)) {
        fused_d<2>(Sc, Sn, hx, hy, px, py, pz, t1, t2);
        t1 = stretch_hv<2, 0>(K, t1, px, w[4], qx, qy, qz, psi_out);
        t2 = stretch_hv<2, 1>(K, t2, py, w[5], qx, qy, qz, psi_out);
        h2 = Sc.h[2][hy][hx] - K.db * (t1 - t2);
    }
}

// A halo H_C's two CPML memories at (xx, yy, qz), loaded ahead as psi_h_get
// does for the own H (on: the halo position is computed on this plane).
template <int C>
__device__ __forceinline__ void halo_psi(const Dctx& K, bool on, int xx, int yy, int qz, const Prof& px,
                                         const Prof& py, const Prof& pz, const float* psi, float* v) {
    v[0] = v[1] = 0.f;
    if (!(on && in_pml(px, py, pz))) return;  // one branch (psi_h_get)
    v[0] = psi_get<C, (C + 1) % 3>(K, on, pick<(C + 1) % 3>(px, py, pz), xx, yy, qz, psi);
    v[1] = psi_get<C, (C + 2) % 3>(K, on, pick<(C + 2) % 3>(px, py, pz), xx, yy, qz, psi);
}

// fused_h of a halo position (nothing stored) with its CPML memories v loaded (halo_psi).
template <int C>
__device__ __forceinline__ float fused_hv(const Dctx& K, const Stage& Sc, const Stage& Sn, int rx, int ry, int qx,
                                          int qy, int qz, float h, const Prof& px, const Prof& py, const Prof& pz,
                                          const float* v) {
    float t1, t2;
    fused_d<C>(Sc, Sn, rx, ry, px, py, pz, t1, t2);
    t1 = stretch_hv<C, (C + 1) % 3>(K, t1, pick<(C + 1) % 3>(px, py, pz), v[0], qx, qy, qz, (float*)0);
    t2 = stretch_hv<C, (C + 2) % 3>(K, t2, pick<(C + 2) % 3>(px, py, pz), v[1], qx, qy, qz, (float*)0);
    return h - K.db * (t1 - t2);
}

// Value of the thread's own ghost H_C on face f (as fdtd_pmc_ghosts leaves
// it): 0 unless the face is PMC; then minus the new H_C of the inner
// neighbour (recomputed here along x or y; the previous plane's for z-high;
// z-low is deferred to plane 1).
template <int C>
__device__ __forceinline__ float ghost_val(const FdtdPtrs& P, const Dctx& K, int f, const Stage& Sc, const Stage& Sn,
                                           int hx, int hy, int qx, int qy, int qz, float prev,
                                           const Prof (*sPx)[EMV_TX + 1], const Prof (*sPy)[EMV_TY + 1],
                                           const Prof& pz) {
    if (!((K.pmc >> f) & 1)) return 0.f;
    const int a = f >> 1;
    const int d = (f & 1) ? -1 : 1;
    if (a == 2) return (f & 1) ? -prev : 0.f;
    const int ix = hx + (a == 0 ? d : 0);
    const int iy = hy + (a == 1 ? d : 0);
    return -fused_h<C>(K, Sc, Sn, ix, iy, qx + (a == 0 ? d : 0), qy + (a == 1 ? d : 0), qz, Sc.h[C][iy][ix],
                       sPx[1][ix], sPy[1][iy], pz, P.psi_h, (float*)0);
}

// The design's coefficient tables (ca, cb) into shared memory (both fused steps).
__device__ __forceinline__ void load_coefs(const FdtdPtrs& P, const Dctx& K, int tid, float* sCa, float* sCb) {
    const int ncoef = K.D->ncoef;
    for (int i = tid; i < ncoef; i += EMV_NT) {
        sCa[i] = P.ca[K.coef + i];
        sCb[i] = P.cb[K.coef + i];
    }
}

// The six new components of position p into the written set (both fused steps).
__device__ __forceinline__ void store_fields(const FdtdPtrs& P, long long p, float e0, float e1, float e2, float h0,
                                             float h1, float h2) {
    P.e_out[0][p] = e0;
    P.e_out[1][p] = e1;
    P.e_out[2][p] = e2;
    P.h_out[0][p] = h0;
    P.h_out[1][p] = h1;
    P.h_out[2][p] = h2;
}

#include "fdtd_lean.cuh"

// Minimum resident blocks per SM asked of the compiler (caps registers).
#ifndef EMV_MINB
#define EMV_MINB ((EMV_NT >= 512) ? 1 : (768 / EMV_NT))
#endif

// CPU twin: cpu.rs fdtd_step (fdtd_update_h, fdtd_pmc_ghosts, fdtd_update_e).
extern "C" __global__ void __launch_bounds__(EMV_NT, EMV_MINB) fdtd_step(FdtdPtrs P) {
    __shared__ Stage sS[EMV_NS];
    __shared__ float sH[3][EMV_HH][EMV_HW];
    __shared__ Prof sPx[2][EMV_TX + 1];  // [E side, H side][x = X0-1 + i]
    __shared__ Prof sPy[2][EMV_TY + 1];
    __shared__ float sCa[256];
    __shared__ float sCb[256];
    __shared__ long long sPsiOff[9];
    Dctx K;
    Blk B;
    load_ctx(P, K, B);
    if (P.blocks[2 * blockIdx.x + 1] & EMV_LEAN_FLAG) {  // block-uniform
        lean_step(P, K, B, sS, sH, sPx, sPy, sCa, sCb);
        return;
    }
    const int lx = threadIdx.x;
    const int ly = threadIdx.y;
    const int tid = ly * EMV_TX + lx;
    const int qx = B.X0 + lx;
    const int qy = B.Y0 + ly;
    const bool inside = qx < B.X1 && qy < B.Y1;
    const int zs = B.z0 > 0 ? B.z0 - 1 : 0;
    const int hx = lx + 1;  // own position in sH and the stages' H; 0 is the halo column/row
    const int hy = ly + 1;
    // Halo work (EMV_HALO_SPREAD: one component per warp, see below; else
    // threads of the first row take the row y = Y0-1, the next EMV_TY
    // threads the column x = X0-1 (position (X0-1, Y0+xl))).
#if !EMV_HALO_SPREAD
    const int xl = tid - EMV_TX;
    const bool xhalo = xl >= 0 && xl < EMV_TY;
#endif

    Slots sl;
    make_slots(K, B, tid, sl);
    // Pipeline prologue first, so the copies fly while the tables load.
    for (int k = 0; k < EMV_NS; ++k) {
        const int pz = zs + k;
        stage_issue(P, K, sS[k], pz, tid, pz <= B.z1, pz < B.z1, sl);
    }
    if (tid <= EMV_TX) {
        sPx[0][tid] = prof_e(P, K, 0, B.X0 - 1 + tid);
        sPx[1][tid] = prof_h(P, K, 0, B.X0 - 1 + tid);
    } else if (tid - (EMV_TX + 1) <= EMV_TY) {
        const int j = tid - (EMV_TX + 1);
        sPy[0][j] = prof_e(P, K, 1, B.Y0 - 1 + j);
        sPy[1][j] = prof_h(P, K, 1, B.Y0 - 1 + j);
    }
    load_coefs(P, K, tid, sCa, sCb);
    if (tid < 9) sPsiOff[tid] = K.D->psi_off[tid];
    K.psi_off = sPsiOff;  // read only after the loop's first barrier
    int in = 0, c0, f0, c1, f1, c2, f2;
    classify<0>(K, qx, qy, in, c0, f0);
    classify<1>(K, qx, qy, in, c1, f1);
    classify<2>(K, qx, qy, in, c2, f2);
    unsigned char mc[3] = {0, 0, 0}, mn[3] = {0, 0, 0};
    if (inside) {
        const long long p = K.off + qx + (long long)qy * K.s1 + (long long)zs * K.s2;
        mc[0] = P.mat[0][p];
        mc[1] = P.mat[1][p];
        mc[2] = P.mat[2][p];
    }
    int sc = 0;  // stage of plane z
    float prev_x = 0.f, prev_y = 0.f;
    const int col = qx + qy * K.s1;  // the column's in-design xy offset
#if EMV_HALO_SPREAD
    // This thread's halo position (rows 0, 1: the row y = Y0-1; rows 2, 3, first TY lanes: the column x = X0-1).
    const bool hrow = B.Y0 > 0 && qx < B.X1;
    const bool hcol = lx < EMV_TY && B.X0 > 0 && B.Y0 + lx < B.Y1;
    const int hcy = lx < EMV_TY ? lx + 1 : 0;
#endif
    cp_wait<EMV_NS - 2>();  // the first plane's z profile, for its psi_h_get
    __syncthreads();
    for (int qz = zs; qz < B.z1; ++qz) {
        const bool owned = qz >= B.z0;  // block-uniform
        float w[6];  // the own H's CPML memories of this plane
        psi_h_get(K, inside, in, sPx[1][hx], sPy[1][hy], sS[sc].pz[1], qx, qy, qz, P.psi_h, w);
#if EMV_HALO_SPREAD
        float hv[2] = {0.f, 0.f};  // the halo H's (owned planes)
        {
            const Prof& pzn = sS[sc].pz[1];
            const bool ho = owned;
            if (ly == 0) halo_psi<2>(K, ho && hrow && h_in<2>(K, qx, B.Y0 - 1, qz), qx, B.Y0 - 1, qz, sPx[1][hx], sPy[1][0], pzn, P.psi_h, hv);
            else if (ly == 1) halo_psi<0>(K, ho && hrow && h_in<0>(K, qx, B.Y0 - 1, qz), qx, B.Y0 - 1, qz, sPx[1][hx], sPy[1][0], pzn, P.psi_h, hv);
            else if (ly == 2) halo_psi<1>(K, ho && hcol && h_in<1>(K, B.X0 - 1, B.Y0 + lx, qz), B.X0 - 1, B.Y0 + lx, qz, sPx[1][0], sPy[1][hcy], pzn, P.psi_h, hv);
            else if (ly == 3) halo_psi<2>(K, ho && hcol && h_in<2>(K, B.X0 - 1, B.Y0 + lx, qz), B.X0 - 1, B.Y0 + lx, qz, sPx[1][0], sPy[1][hcy], pzn, P.psi_h, hv);
        }
#endif
        cp_wait<EMV_NS - 2>();  // this thread's copies of planes z and z+1 have landed
        __syncthreads();        // ... everybody's; the previous plane is done with sH
        const long long p = K.off + col + (long long)qz * K.s2;
        if (inside && qz + 1 < K.dims[2]) {
            mn[0] = P.mat[0][p + K.s2];
            mn[1] = P.mat[1][p + K.s2];
            mn[2] = P.mat[2][p + K.s2];
        }
        const Stage& Sc = sS[sc];
        const Stage& Sn = sS[sc + 1 == EMV_NS ? 0 : sc + 1];
        const Prof pzh = Sc.pz[1];
        const Prof pze = Sc.pz[0];  // read before the stage is refilled
        const float eo0 = Sc.e[0][hy][hx];
        const float eo1 = Sc.e[1][hy][hx];
        const float eo2 = Sc.e[2][hy][hx];
        // The E-side CPML memories of this plane, loaded now so that their
        // latency hides behind the H phase and the second barrier (only the
        // owner thread reads or writes them; E_x: (A, B) = (y, z); E_y: (z, x);
        // E_z: (x, y)).
        const bool ue = owned && inside;
        const bool i0 = ue && e_in_z<0>(K, in, qz);
        const bool i1 = ue && e_in_z<1>(K, in, qz);
        const bool i2 = ue && e_in_z<2>(K, in, qz);
        float v01 = 0.f, v02 = 0.f, v12 = 0.f, v10 = 0.f, v20 = 0.f, v21 = 0.f;
        if (ue && in_pml(sPx[0][hx], sPy[0][hy], pze)) {  // one branch (psi_h_get)
            const Prof& px = sPx[0][hx];
            const Prof& py = sPy[0][hy];
            v01 = psi_get<0, 1>(K, i0, py, qx, qy, qz, P.psi_e);
            v02 = psi_get<0, 2>(K, i0, pze, qx, qy, qz, P.psi_e);
            v12 = psi_get<1, 2>(K, i1, pze, qx, qy, qz, P.psi_e);
            v10 = psi_get<1, 0>(K, i1, px, qx, qy, qz, P.psi_e);
            v20 = psi_get<2, 0>(K, i2, px, qx, qy, qz, P.psi_e);
            v21 = psi_get<2, 1>(K, i2, py, qx, qy, qz, P.psi_e);
        }
        float h0 = 0.f, h1 = 0.f, h2 = 0.f;
        if (inside) {
            float* pso = owned ? P.psi_h_out : (float*)0;
            const Prof& px = sPx[1][hx];
            const Prof& py = sPy[1][hy];
            own_h3(K, Sc, Sn, hx, hy, qx, qy, qz, in, px, py, pzh, w, pso, h0, h1, h2);
            if (owned) {
                int f = ghost_z<0>(K, c0, f0, qz);
                if (f >= 0) h0 = ghost_val<0>(P, K, f, Sc, Sn, hx, hy, qx, qy, qz, prev_x, sPx, sPy, pzh);
                f = ghost_z<1>(K, c1, f1, qz);
                if (f >= 0) h1 = ghost_val<1>(P, K, f, Sc, Sn, hx, hy, qx, qy, qz, prev_y, sPx, sPy, pzh);
                f = ghost_z<2>(K, c2, f2, qz);
                if (f >= 0) h2 = ghost_val<2>(P, K, f, Sc, Sn, hx, hy, qx, qy, qz, 0.f, sPx, sPy, pzh);
            }
        }
        sH[0][hy][hx] = h0;
        sH[1][hy][hx] = h1;
        sH[2][hy][hx] = h2;
        if (owned) {
#if EMV_HALO_SPREAD
            // One halo component per warp (a warp is one tile row): rows 0, 1
            // take Hz, Hx of the row y = Y0-1; rows 2, 3 (first TY lanes)
            // Hy, Hz of the column x = X0-1.
            if (ly < 2) {
                const int yy = B.Y0 - 1;
                const bool ok = hrow;
                const Prof& px = sPx[1][hx];
                const Prof& py = sPy[1][0];
                if (ly == 0) {
                    sH[2][0][hx] = ok && h_in<2>(K, qx, yy, qz) ? fused_hv<2>(K, Sc, Sn, hx, 0, qx, yy, qz, Sc.h[2][0][hx], px, py, pzh, hv) : 0.f;
                } else {
                    sH[0][0][hx] = ok && h_in<0>(K, qx, yy, qz) ? fused_hv<0>(K, Sc, Sn, hx, 0, qx, yy, qz, Sc.h[0][0][hx], px, py, pzh, hv) : 0.f;
                }
            } else if (ly < 4 && lx < EMV_TY) {
                const int xx = B.X0 - 1;
                const int yy = B.Y0 + lx;
                const bool ok = hcol;
                const Prof& px = sPx[1][0];
                const Prof& py = sPy[1][lx + 1];
                if (ly == 2) {
                    sH[1][lx + 1][0] = ok && h_in<1>(K, xx, yy, qz) ? fused_hv<1>(K, Sc, Sn, 0, lx + 1, xx, yy, qz, Sc.h[1][lx + 1][0], px, py, pzh, hv) : 0.f;
                } else {
                    sH[2][lx + 1][0] = ok && h_in<2>(K, xx, yy, qz) ? fused_hv<2>(K, Sc, Sn, 0, lx + 1, xx, yy, qz, Sc.h[2][lx + 1][0], px, py, pzh, hv) : 0.f;
                }
            }
#else
            if (ly == 0) {  // row y = Y0-1: Hz, Hx for E_x, E_z of row Y0
                float a2 = 0.f, a0 = 0.f;
                const int yy = B.Y0 - 1;
                if (B.Y0 > 0 && qx < B.X1) {
                    const Prof& px = sPx[1][hx];
                    const Prof& py = sPy[1][0];
                    if (h_in<2>(K, qx, yy, qz)) a2 = fused_h<2>(K, Sc, Sn, hx, 0, qx, yy, qz, Sc.h[2][0][hx], px, py, pzh, P.psi_h, (float*)0);
                    if (h_in<0>(K, qx, yy, qz)) a0 = fused_h<0>(K, Sc, Sn, hx, 0, qx, yy, qz, Sc.h[0][0][hx], px, py, pzh, P.psi_h, (float*)0);
                }
                sH[2][0][hx] = a2;
                sH[0][0][hx] = a0;
            }
            if (xhalo) {  // column x = X0-1: Hy, Hz for E_z, E_y of column X0
                const int xx = B.X0 - 1;
                const int yy = B.Y0 + xl;
                float a1 = 0.f, a2 = 0.f;
                if (B.X0 > 0 && yy < B.Y1) {
                    const Prof& px = sPx[1][0];
                    const Prof& py = sPy[1][xl + 1];
                    if (h_in<1>(K, xx, yy, qz)) a1 = fused_h<1>(K, Sc, Sn, 0, xl + 1, xx, yy, qz, Sc.h[1][xl + 1][0], px, py, pzh, P.psi_h, (float*)0);
                    if (h_in<2>(K, xx, yy, qz)) a2 = fused_h<2>(K, Sc, Sn, 0, xl + 1, xx, yy, qz, Sc.h[2][xl + 1][0], px, py, pzh, P.psi_h, (float*)0);
                }
                sH[1][xl + 1][0] = a1;
                sH[2][xl + 1][0] = a2;
            }
#endif
        }
        __syncthreads();  // sH complete (ghosts included); stage sc is no longer read
        {
            const int pz = qz + EMV_NS;  // refill the free stage, EMV_NS planes ahead
            stage_issue(P, K, sS[sc], pz, tid, pz <= B.z1, pz < B.z1, sl);
        }
        if (owned && inside) {
            if (qz == 1 && ((K.pmc >> 4) & 1)) {
                // Ghost plane 0 of a PMC z-low face mirrors plane 1 (own column only).
                prev_x = ((in >> 3) & 1) ? -h0 : 0.f;
                prev_y = ((in >> 4) & 1) ? -h1 : 0.f;
                P.h_out[0][p - K.s2] = prev_x;
                P.h_out[1][p - K.s2] = prev_y;
            }
            const Prof& px = sPx[0][hx];
            const Prof& py = sPy[0][hy];
            const Prof& pz = pze;
            float e0 = eo0, e1 = eo1, e2 = eo2;
            if (i0) {
                const float t1 = stretch_e<0, 1>(K, (h2 - sH[2][hy - 1][hx]) * py.id, py, v01, qx, qy, qz, P.psi_e_out);
                const float t2 = stretch_e<0, 2>(K, (h1 - prev_y) * pz.id, pz, v02, qx, qy, qz, P.psi_e_out);
                e0 = sCa[mc[0]] * eo0 + sCb[mc[0]] * (t1 - t2);
            }
            if (i1) {
                const float t1 = stretch_e<1, 2>(K, (h0 - prev_x) * pz.id, pz, v12, qx, qy, qz, P.psi_e_out);
                const float t2 = stretch_e<1, 0>(K, (h2 - sH[2][hy][hx - 1]) * px.id, px, v10, qx, qy, qz, P.psi_e_out);
                e1 = sCa[mc[1]] * eo1 + sCb[mc[1]] * (t1 - t2);
            }
            if (i2) {
                const float t1 = stretch_e<2, 0>(K, (h1 - sH[1][hy][hx - 1]) * px.id, px, v20, qx, qy, qz, P.psi_e_out);
                const float t2 = stretch_e<2, 1>(K, (h0 - sH[0][hy - 1][hx]) * py.id, py, v21, qx, qy, qz, P.psi_e_out);
                e2 = sCa[mc[2]] * eo2 + sCb[mc[2]] * (t1 - t2);
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
    cp_wait<0>();  // no copy may land in shared memory after the block ends
}
