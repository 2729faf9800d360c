// Batched Yee FDTD kernels: the whole population advances in one launch.
//
// Every kernel named fdtd_* has a CPU twin of the same name in
// src/engine/fdtd/cpu.rs, and the arithmetic is written in the same order
// (the host compiles with --fmad=false, so no multiply-add is contracted and
// CPU and GPU fields agree bit for bit; only f64 sums of port signals and of
// the energy are added in another order).
//
// Indexing of the field kernels: thread block b takes the pair
// (design d, local block lb) = P.blocks[2b], P.blocks[2b+1] (EMV_LEAN_FLAG
// masked off: fdtd_step runs such blocks' lean step); lb names an
// EMV_TX x EMV_TY tile of the design's padded xy plane and a chunk of
// zchunk planes along z (see FdtdDesign). Thread (tx, ty) owns the column
// (X0+tx, Y0+ty) of padded positions and walks z through the chunk.
// Only the designs still running are listed in P.blocks.
//
// The module is this file and the headers it includes, in launch-index
// order (abi::KERNELS): here the design context, indexing, CPML profiles
// and the split kernels; fdtd_fused.cuh the fused step fdtd_step (with
// fdtd_lean.cuh, its lean blocks' form); fdtd_ports.cuh the port, energy and
// DFT kernels; fdtd_slim.cuh the two-step pass.

#include "common.cuh"

#define EMV_NT (EMV_TX * EMV_TY)
#define EMV_RW (EMV_TX + 2)
#define EMV_RH (EMV_TY + 2)

__device__ __forceinline__ int imin(int a, int b) { return a < b ? a : b; }

// Flag of a block-table entry's local block number: the block runs the lean
// step (fdtd_lean.cuh; batch.rs Plan::block_tables).
#define EMV_LEAN_FLAG (1 << 30)

// Per-block design data, kept in registers.
struct Dctx {
    const FdtdDesign* D;
    long long off;
    long long s2;
    int s1;
    int n[3];
    int dims[3];
    int coef;
    int pmc;
    int prof[3];
    int slab_n[3];
    float db;
    int line[3];
    // The design's psi offsets (FdtdDesign::psi_off): global by default, a
    // shared-memory copy in fdtd_step (read on every CPML term).
    const long long* psi_off;
};

// A block's tile: own columns X0 <= x < X1, rows Y0 <= y < Y1 (thread
// (tx, ty) sits at (X0+tx, Y0+ty); threads past X1 or Y1 own nothing).
struct Blk {
    int X0;
    int Y0;
    int X1;
    int Y1;
    int z0;
    int z1;
};

// Design d's layout into the registers of K (load_ctx; fdtd_step2).
__device__ __forceinline__ void load_design(const FdtdPtrs& P, int d, Dctx& K) {
    const FdtdDesign* D = P.designs + d;
    K.D = D;
    K.off = D->off;
    for (int a = 0; a < 3; ++a) {
        K.n[a] = D->n[a];
        K.dims[a] = D->dims[a];
        K.prof[a] = D->prof_off[a];
        K.slab_n[a] = D->slab_n[a];
        K.line[a] = D->line_off[a];
    }
    K.s1 = K.dims[0];
    K.s2 = (long long)K.dims[0] * K.dims[1];
    K.coef = D->coef_off;
    K.pmc = D->pmc;
    K.db = D->db;
    K.psi_off = D->psi_off;
}

__device__ __forceinline__ void load_ctx(const FdtdPtrs& P, Dctx& K, Blk& B) {
    const int d = P.blocks[2 * blockIdx.x];
    const int lb = P.blocks[2 * blockIdx.x + 1] & ~EMV_LEAN_FLAG;
    load_design(P, d, K);
    const FdtdDesign* D = K.D;
    const int t0 = D->tiles[0];
    const int tpp = t0 * D->tiles[1];
    const int ch = lb / tpp;
    const int t = lb - ch * tpp;
    const int ty = t / t0;
    const int tx = t - ty * t0;
    // Tile origin (FdtdDesign::org): the first tile may be narrower.
    const int sx = tx * EMV_TX - D->org[0];
    const int sy = ty * EMV_TY - D->org[1];
    B.X0 = sx > 0 ? sx : 0;
    B.Y0 = sy > 0 ? sy : 0;
    B.X1 = imin(sx + EMV_TX, K.dims[0]);
    B.Y1 = imin(sy + EMV_TY, K.dims[1]);
    // Chunk ch in its segment (batch.rs chunk_planes).
    int base = 0, end = D->zcut[0], len = D->zlen[0], k = ch;
    if (k >= D->zn[0]) {
        k -= D->zn[0];
        base = D->zcut[0];
        end = D->zcut[1];
        len = D->zlen[1];
        if (k >= D->zn[1]) {
            k -= D->zn[1];
            base = D->zcut[1];
            end = K.dims[2];
            len = D->zlen[2];
        }
    }
    B.z0 = base + k * len;
    B.z1 = imin(B.z0 + len, end);
}

// Update ranges in padded coordinates (operator.rs / cpu.rs e_range, h_range):
// E_c at logical 0..n along the other axes and 0..n-1 along c;
// H_c at logical 0..n-1 along the other axes and 0..n along c.
template <int C>
__device__ __forceinline__ bool e_in(const Dctx& K, int qx, int qy, int qz) {
    const int q[3] = {qx, qy, qz};
    bool ok = true;
#pragma unroll
    for (int a = 0; a < 3; ++a) {
        const int hi = (a == C) ? K.n[a] : K.n[a] + 1;
        ok = ok && q[a] >= 1 && q[a] <= hi;
    }
    return ok;
}

template <int C>
__device__ __forceinline__ bool h_in_axis(const Dctx& K, int a, int q) {
    const int hi = (a == C) ? K.n[a] + 1 : K.n[a];
    return q >= 1 && q <= hi;
}

template <int C>
__device__ __forceinline__ bool h_in(const Dctx& K, int qx, int qy, int qz) {
    return h_in_axis<C>(K, 0, qx) && h_in_axis<C>(K, 1, qy) && h_in_axis<C>(K, 2, qz);
}

// The ghost position of H_c that fdtd_pmc_ghosts (cpu.rs) fills: exactly one
// axis other than c out of range (padded 0 or n+1), all others in range.
// Returns 2*axis+side, or -1 when (qx,qy,qz) is no such ghost.
template <int C>
__device__ __forceinline__ int ghost_face(const Dctx& K, int qx, int qy, int qz) {
    const int q[3] = {qx, qy, qz};
    int face = -1;
    int out = 0;
#pragma unroll
    for (int a = 0; a < 3; ++a) {
        if (!h_in_axis<C>(K, a, q[a])) {
            ++out;
            if (a != C) face = 2 * a + (q[a] == 0 ? 0 : 1);
            else out += 2;
        }
    }
    return out == 1 ? face : -1;
}

// Index of the CPML memory of component C along axis A at padded position q,
// slab number sl along A.
template <int C, int A>
__device__ __forceinline__ long long psi_index(const Dctx& K, int sl, int qx, int qy, int qz) {
    int q[3] = {qx, qy, qz};
    int cd[3] = {K.dims[0], K.dims[1], K.dims[2]};
    q[A] = sl;
    cd[A] = K.slab_n[A];
    // In-design part in 32 bits: one psi array has at most the design's padded
    // cell count, which the host checks fits an i32 (batch.rs).
    return K.psi_off[C * 3 + A] + (q[0] + cd[0] * (q[1] + cd[1] * q[2]));
}

// What the update needs of one position along one axis: the CPML profile
// (slab number, -1 outside the PML or without PML on the axis, where cpu.rs
// stretch() passes t through because b == 0; b, c, 1/kappa) and the inverse
// spacing id (E side: 1 / the dual spacing around the line; H side: 1 / the
// primal spacing of the cell; cpu.rs Operator::inv_e, inv_h).
struct Prof {
    int sl;
    float b;
    float c;
    float k;
    float id;
};

__device__ __forceinline__ Prof no_prof() {
    Prof r;
    r.sl = -1;
    r.b = 0.f;
    r.c = 0.f;
    r.k = 1.f;
    r.id = 0.f;
    return r;
}

// The inverse spacing at padded position q along axis a (0 outside the array).
__device__ __forceinline__ float inv_at(const FdtdPtrs& P, const Dctx& K, int a, int q, bool e_side) {
    return (q >= 0 && q < K.dims[a]) ? (e_side ? P.inv_e : P.inv_h)[K.line[a] + q] : 0.f;
}

// Index into the profile tables of position q (padded) along axis a, -1
// without PML there. E side: nodes, q = 1..n+1; H side: half nodes, q = 1..n.
__device__ __forceinline__ int prof_index(const Dctx& K, int a, int q, bool e_side) {
    return (K.prof[a] >= 0 && q >= 1 && q <= K.n[a] + (e_side ? 1 : 0)) ? K.prof[a] + q - 1 : -1;
}

// The four loads are independent (outside the slab the tables hold b = c = 0,
// 1/kappa = 1): no chain of dependent loads. e_side: E (node) or H (half-node) tables.
__device__ __forceinline__ Prof prof_at(const FdtdPtrs& P, const Dctx& K, int a, int q, bool e_side) {
    Prof r = no_prof();
    r.id = inv_at(P, K, a, q, e_side);
    const int i = prof_index(K, a, q, e_side);
    if (i >= 0) {
        r.sl = (e_side ? P.slab_e : P.slab_h)[i];
        r.b = (e_side ? P.pe_b : P.ph_b)[i];
        r.c = (e_side ? P.pe_c : P.ph_c)[i];
        r.k = (e_side ? P.pe_k : P.ph_k)[i];
    }
    return r;
}

__device__ __forceinline__ Prof prof_e(const FdtdPtrs& P, const Dctx& K, int a, int q) { return prof_at(P, K, a, q, true); }
__device__ __forceinline__ Prof prof_h(const FdtdPtrs& P, const Dctx& K, int a, int q) { return prof_at(P, K, a, q, false); }

// CPU twin: cpu.rs stretch(). Inside the PML psi = b psi + c t and the
// result is t/kappa + psi; psi_out == 0: a halo copy of a position another
// block owns, computed but not stored.
template <int C, int A>
__device__ __forceinline__ float stretch(const Dctx& K, float t, const Prof& pr, int qx, int qy, int qz,
                                         const float* psi_in, float* psi_out) {
    if (pr.sl < 0) return t;
    const long long x = psi_index<C, A>(K, pr.sl, qx, qy, qz);
    const float s = pr.b * psi_in[x] + pr.c * t;
    if (psi_out) psi_out[x] = s;
    return t * pr.k + s;
}

// H_c -= db (t1 - t2), t1 = dE_B/dA, t2 = dE_A/dB, (A, B) cyclic after C;
// h = old H_c; pa, pb = profiles along A and B.
template <int C>
__device__ __forceinline__ float h_core(const Dctx& K, int qx, int qy, int qz, float h, float t1, float t2,
                                        const Prof& pa, const Prof& pb, const float* psi_in, float* psi_out) {
    t1 = stretch<C, (C + 1) % 3>(K, t1, pa, qx, qy, qz, psi_in, psi_out);
    t2 = stretch<C, (C + 2) % 3>(K, t2, pb, qx, qy, qz, psi_in, psi_out);
    return h - K.db * (t1 - t2);
}

// E_c = ca E_c + cb (t1 - t2), t1 = dH_B/dA, t2 = dH_A/dB; e = old E_c.
template <int C>
__device__ __forceinline__ float e_core(const Dctx& K, int qx, int qy, int qz, float e, float ca, float cb, float t1,
                                        float t2, const Prof& pa, const Prof& pb, float* psi) {
    t1 = stretch<C, (C + 1) % 3>(K, t1, pa, qx, qy, qz, psi, psi);
    t2 = stretch<C, (C + 2) % 3>(K, t2, pb, qx, qy, qz, psi, psi);
    return ca * e + cb * (t1 - t2);
}

// The profile along axis A among those of x, y, z.
template <int A>
__device__ __forceinline__ const Prof& pick(const Prof& px, const Prof& py, const Prof& pz) {
    return A == 0 ? px : (A == 1 ? py : pz);
}

__device__ __forceinline__ long long stride_of(const Dctx& K, int a) {
    return a == 0 ? 1 : (a == 1 ? (long long)K.s1 : K.s2);
}

// Split H pass over one column; restrict pointers let the compiler overlap
// the loads of successive planes.
__device__ __forceinline__ void h_column(const Dctx& K, const Blk& B, int qx, int qy, const Prof& px, const Prof& py,
                                         const FdtdPtrs& P, const float* __restrict__ ex, const float* __restrict__ ey,
                                         const float* __restrict__ ez, float* __restrict__ hx, float* __restrict__ hy,
                                         float* __restrict__ hz, float* __restrict__ psi) {
    const long long sx = 1, sy = K.s1, sz = K.s2;
    for (int qz = B.z0; qz < B.z1; ++qz) {
        const Prof pz = prof_h(P, K, 2, qz);
        const long long p = K.off + qx + (long long)qy * K.s1 + (long long)qz * K.s2;
        if (h_in<0>(K, qx, qy, qz)) {
            const float t1 = (ez[p + sy] - ez[p]) * py.id;
            const float t2 = (ey[p + sz] - ey[p]) * pz.id;
            hx[p] = h_core<0>(K, qx, qy, qz, hx[p], t1, t2, py, pz, psi, psi);
        }
        if (h_in<1>(K, qx, qy, qz)) {
            const float t1 = (ex[p + sz] - ex[p]) * pz.id;
            const float t2 = (ez[p + sx] - ez[p]) * px.id;
            hy[p] = h_core<1>(K, qx, qy, qz, hy[p], t1, t2, pz, px, psi, psi);
        }
        if (h_in<2>(K, qx, qy, qz)) {
            const float t1 = (ey[p + sx] - ey[p]) * px.id;
            const float t2 = (ex[p + sy] - ex[p]) * py.id;
            hz[p] = h_core<2>(K, qx, qy, qz, hz[p], t1, t2, px, py, psi, psi);
        }
    }
}

// CPU twin: cpu.rs fdtd_update_h. H half step in place, one launch for the batch.
extern "C" __global__ void __launch_bounds__(EMV_NT) fdtd_update_h(FdtdPtrs P) {
    Dctx K;
    Blk B;
    load_ctx(P, K, B);
    const int qx = B.X0 + threadIdx.x;
    const int qy = B.Y0 + threadIdx.y;
    if (qx >= B.X1 || qy >= B.Y1) return;
    const Prof px = prof_h(P, K, 0, qx);
    const Prof py = prof_h(P, K, 1, qy);
    h_column(K, B, qx, qy, px, py, P, P.e[0], P.e[1], P.e[2], P.h[0], P.h[1], P.h[2], P.psi_h);
}

template <int C>
__device__ __forceinline__ void pmc_ghost(const FdtdPtrs& P, const Dctx& K, int qx, int qy, int qz, long long p) {
    const int f = ghost_face<C>(K, qx, qy, qz);
    if (f < 0 || !((K.pmc >> f) & 1)) return;
    const int a = f >> 1;
    const long long s = stride_of(K, a);
    const long long src = (f & 1) ? p - s : p + s;
    P.h[C][p] = -P.h[C][src];
}

// CPU twin: cpu.rs fdtd_pmc_ghosts. Ghost H tangential to a PMC face mirrors
// (negates) its inner neighbour. Reads only in-range values, writes only ghosts.
extern "C" __global__ void __launch_bounds__(EMV_NT) fdtd_pmc_ghosts(FdtdPtrs P) {
    Dctx K;
    Blk B;
    load_ctx(P, K, B);
    const int qx = B.X0 + threadIdx.x;
    const int qy = B.Y0 + threadIdx.y;
    if (K.pmc == 0 || qx >= B.X1 || qy >= B.Y1) return;
    for (int qz = B.z0; qz < B.z1; ++qz) {
        const long long p = K.off + qx + (long long)qy * K.s1 + (long long)qz * K.s2;
        pmc_ghost<0>(P, K, qx, qy, qz, p);
        pmc_ghost<1>(P, K, qx, qy, qz, p);
        pmc_ghost<2>(P, K, qx, qy, qz, p);
    }
}

__device__ __forceinline__ void e_column(const Dctx& K, const Blk& B, int qx, int qy, const Prof& px, const Prof& py,
                                         const FdtdPtrs& P, const float* __restrict__ hx, const float* __restrict__ hy,
                                         const float* __restrict__ hz, float* __restrict__ ex, float* __restrict__ ey,
                                         float* __restrict__ ez, const unsigned char* __restrict__ m0,
                                         const unsigned char* __restrict__ m1, const unsigned char* __restrict__ m2,
                                         const float* __restrict__ ca, const float* __restrict__ cb,
                                         float* __restrict__ psi) {
    const long long sx = 1, sy = K.s1, sz = K.s2;
    for (int qz = B.z0; qz < B.z1; ++qz) {
        const Prof pz = prof_e(P, K, 2, qz);
        const long long p = K.off + qx + (long long)qy * K.s1 + (long long)qz * K.s2;
        if (e_in<0>(K, qx, qy, qz)) {
            const float t1 = (hz[p] - hz[p - sy]) * py.id;
            const float t2 = (hy[p] - hy[p - sz]) * pz.id;
            const int m = K.coef + m0[p];
            ex[p] = e_core<0>(K, qx, qy, qz, ex[p], ca[m], cb[m], t1, t2, py, pz, psi);
        }
        if (e_in<1>(K, qx, qy, qz)) {
            const float t1 = (hx[p] - hx[p - sz]) * pz.id;
            const float t2 = (hz[p] - hz[p - sx]) * px.id;
            const int m = K.coef + m1[p];
            ey[p] = e_core<1>(K, qx, qy, qz, ey[p], ca[m], cb[m], t1, t2, pz, px, psi);
        }
        if (e_in<2>(K, qx, qy, qz)) {
            const float t1 = (hy[p] - hy[p - sx]) * px.id;
            const float t2 = (hx[p] - hx[p - sy]) * py.id;
            const int m = K.coef + m2[p];
            ez[p] = e_core<2>(K, qx, qy, qz, ez[p], ca[m], cb[m], t1, t2, px, py, psi);
        }
    }
}

// CPU twin: cpu.rs fdtd_update_e. E full step in place.
extern "C" __global__ void __launch_bounds__(EMV_NT) fdtd_update_e(FdtdPtrs P) {
    Dctx K;
    Blk B;
    load_ctx(P, K, B);
    const int qx = B.X0 + threadIdx.x;
    const int qy = B.Y0 + threadIdx.y;
    if (qx >= B.X1 || qy >= B.Y1) return;
    const Prof px = prof_e(P, K, 0, qx);
    const Prof py = prof_e(P, K, 1, qy);
    e_column(K, B, qx, qy, px, py, P, P.h[0], P.h[1], P.h[2], P.e[0], P.e[1], P.e[2], P.mat[0], P.mat[1], P.mat[2],
             P.ca, P.cb, P.psi_e);
}

#include "fdtd_fused.cuh"

#include "fdtd_ports.cuh"

#include "fdtd_slim.cuh"

#include "fdtd_edges.cuh"

#include "fdtd_surface.cuh"

#include "fdtd_conformal.cuh"
