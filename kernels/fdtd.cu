// Batched Yee FDTD kernels: the whole population advances in one launch.
//
// Every kernel named fdtd_* has a CPU twin of the same name in
// src/engine/fdtd/cpu.rs, and the arithmetic is written in the same order
// (the host compiles with --fmad=false, so no multiply-add is contracted and
// CPU and GPU fields agree bit for bit; only f64 sums of port signals and of
// the energy are added in another order).
//
// Indexing of the field kernels: thread block b takes the pair
// (design d, local block lb) = P.blocks[2b], P.blocks[2b+1]; lb names an
// EMV_TX x EMV_TY tile of the design's padded xy plane and a chunk of
// zchunk planes along z (see FdtdDesign). Thread (tx, ty) owns the column
// (X0+tx, Y0+ty) of padded positions and walks z through the chunk.
// Only the designs still running are listed in P.blocks.

#include "common.cuh"

#define EMV_NT (EMV_TX * EMV_TY)
#define EMV_RW (EMV_TX + 2)
#define EMV_RH (EMV_TY + 2)

__device__ __forceinline__ int imin(int a, int b) { return a < b ? a : b; }

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
    float id[3];
};

struct Blk {
    int X0;
    int Y0;
    int z0;
    int z1;
};

__device__ __forceinline__ void load_ctx(const FdtdPtrs& P, Dctx& K, Blk& B) {
    const int d = P.blocks[2 * blockIdx.x];
    const int lb = P.blocks[2 * blockIdx.x + 1];
    const FdtdDesign* D = P.designs + d;
    K.D = D;
    K.off = D->off;
    for (int a = 0; a < 3; ++a) {
        K.n[a] = D->n[a];
        K.dims[a] = D->dims[a];
        K.prof[a] = D->prof_off[a];
        K.slab_n[a] = D->slab_n[a];
        K.id[a] = D->inv_d[a];
    }
    K.s1 = K.dims[0];
    K.s2 = (long long)K.dims[0] * K.dims[1];
    K.coef = D->coef_off;
    K.pmc = D->pmc;
    K.db = D->db;
    const int t0 = D->tiles[0];
    const int tpp = t0 * D->tiles[1];
    const int ch = lb / tpp;
    const int t = lb - ch * tpp;
    const int ty = t / t0;
    const int tx = t - ty * t0;
    B.X0 = tx * EMV_TX;
    B.Y0 = ty * EMV_TY;
    B.z0 = ch * D->zchunk;
    B.z1 = imin(B.z0 + D->zchunk, K.dims[2]);
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
    return K.D->psi_off[C * 3 + A] + q[0] + (long long)cd[0] * (q[1] + (long long)cd[1] * q[2]);
}

// CPU twin: cpu.rs stretch() on the H side. Outside the PML (no profile on
// axis A, or slab number -1, i.e. b == 0) t passes unchanged; inside,
// psi = b psi + c t and the result is t/kappa + psi. psi_out == 0: the
// position is a halo copy of another block's, computed but not stored.
template <int C, int A>
__device__ __forceinline__ float stretch_h(const FdtdPtrs& P, const Dctx& K, float t, int qx, int qy, int qz,
                                           const float* psi_in, float* psi_out) {
    if (K.prof[A] < 0) return t;
    const int q[3] = {qx, qy, qz};
    const int i = K.prof[A] + q[A] - 1;
    const int sl = P.slab_h[i];
    if (sl < 0) return t;
    const long long x = psi_index<C, A>(K, sl, qx, qy, qz);
    const float s = P.ph_b[i] * psi_in[x] + P.ph_c[i] * t;
    if (psi_out) psi_out[x] = s;
    return t * P.ph_k[i] + s;
}

template <int C, int A>
__device__ __forceinline__ float stretch_e(const FdtdPtrs& P, const Dctx& K, float t, int qx, int qy, int qz) {
    if (K.prof[A] < 0) return t;
    const int q[3] = {qx, qy, qz};
    const int i = K.prof[A] + q[A] - 1;
    const int sl = P.slab_e[i];
    if (sl < 0) return t;
    const long long x = psi_index<C, A>(K, sl, qx, qy, qz);
    const float s = P.pe_b[i] * P.psi_e[x] + P.pe_c[i] * t;
    P.psi_e[x] = s;
    return t * P.pe_k[i] + s;
}

// H_c -= db (t1 - t2), t1 = dE_B/dA, t2 = dE_A/dB, (A, B) cyclic after C; h = old H_c.
template <int C>
__device__ __forceinline__ float h_core(const FdtdPtrs& P, const Dctx& K, int qx, int qy, int qz, float h,
                                        float t1, float t2, const float* psi_in, float* psi_out) {
    const int A = (C + 1) % 3;
    const int B = (C + 2) % 3;
    t1 = stretch_h<C, A>(P, K, t1, qx, qy, qz, psi_in, psi_out);
    t2 = stretch_h<C, B>(P, K, t2, qx, qy, qz, psi_in, psi_out);
    return h - K.db * (t1 - t2);
}

// E_c = ca E_c + cb (t1 - t2), t1 = dH_B/dA, t2 = dH_A/dB, through the
// material table; e = old E_c, mat = its material index.
template <int C>
__device__ __forceinline__ float e_core(const FdtdPtrs& P, const Dctx& K, int qx, int qy, int qz, int mat,
                                        float t1, float t2, float e) {
    const int A = (C + 1) % 3;
    const int B = (C + 2) % 3;
    t1 = stretch_e<C, A>(P, K, t1, qx, qy, qz);
    t2 = stretch_e<C, B>(P, K, t2, qx, qy, qz);
    const int m = K.coef + mat;
    return P.ca[m] * e + P.cb[m] * (t1 - t2);
}

__device__ __forceinline__ long long stride_of(const Dctx& K, int a) {
    return a == 0 ? 1 : (a == 1 ? (long long)K.s1 : K.s2);
}

template <int C>
__device__ __forceinline__ void split_h(const FdtdPtrs& P, const Dctx& K, int qx, int qy, int qz, long long p) {
    if (!h_in<C>(K, qx, qy, qz)) return;
    const int A = (C + 1) % 3;
    const int B = (C + 2) % 3;
    const float* ea = P.e[A];
    const float* eb = P.e[B];
    const float t1 = (eb[p + stride_of(K, A)] - eb[p]) * K.id[A];
    const float t2 = (ea[p + stride_of(K, B)] - ea[p]) * K.id[B];
    P.h[C][p] = h_core<C>(P, K, qx, qy, qz, P.h[C][p], t1, t2, P.psi_h, P.psi_h);
}

template <int C>
__device__ __forceinline__ void split_e(const FdtdPtrs& P, const Dctx& K, int qx, int qy, int qz, long long p) {
    if (!e_in<C>(K, qx, qy, qz)) return;
    const int A = (C + 1) % 3;
    const int B = (C + 2) % 3;
    const float* ha = P.h[A];
    const float* hb = P.h[B];
    const float t1 = (hb[p] - hb[p - stride_of(K, A)]) * K.id[A];
    const float t2 = (ha[p] - ha[p - stride_of(K, B)]) * K.id[B];
    P.e[C][p] = e_core<C>(P, K, qx, qy, qz, P.mat[C][p], t1, t2, P.e[C][p]);
}

// CPU twin: cpu.rs fdtd_update_h. H half step in place, one launch for the batch.
extern "C" __global__ void __launch_bounds__(EMV_NT) fdtd_update_h(FdtdPtrs P) {
    Dctx K;
    Blk B;
    load_ctx(P, K, B);
    const int qx = B.X0 + threadIdx.x;
    const int qy = B.Y0 + threadIdx.y;
    if (qx >= K.dims[0] || qy >= K.dims[1]) return;
    for (int qz = B.z0; qz < B.z1; ++qz) {
        const long long p = K.off + qx + (long long)qy * K.s1 + (long long)qz * K.s2;
        split_h<0>(P, K, qx, qy, qz, p);
        split_h<1>(P, K, qx, qy, qz, p);
        split_h<2>(P, K, qx, qy, qz, p);
    }
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
    if (K.pmc == 0 || qx >= K.dims[0] || qy >= K.dims[1]) return;
    for (int qz = B.z0; qz < B.z1; ++qz) {
        const long long p = K.off + qx + (long long)qy * K.s1 + (long long)qz * K.s2;
        pmc_ghost<0>(P, K, qx, qy, qz, p);
        pmc_ghost<1>(P, K, qx, qy, qz, p);
        pmc_ghost<2>(P, K, qx, qy, qz, p);
    }
}

// CPU twin: cpu.rs fdtd_update_e. E full step in place.
extern "C" __global__ void __launch_bounds__(EMV_NT) fdtd_update_e(FdtdPtrs P) {
    Dctx K;
    Blk B;
    load_ctx(P, K, B);
    const int qx = B.X0 + threadIdx.x;
    const int qy = B.Y0 + threadIdx.y;
    if (qx >= K.dims[0] || qy >= K.dims[1]) return;
    for (int qz = B.z0; qz < B.z1; ++qz) {
        const long long p = K.off + qx + (long long)qy * K.s1 + (long long)qz * K.s2;
        split_e<0>(P, K, qx, qy, qz, p);
        split_e<1>(P, K, qx, qy, qz, p);
        split_e<2>(P, K, qx, qy, qz, p);
    }
}

// ---------------------------------------------------------------------------
// Fused step: H half step, PMC ghosts and E full step in one pass, reading
// the set (e, h, psi_h) and writing (e_out, h_out, psi_h_out); psi_e is
// updated in place (only its owner touches it). Each plane z: E of plane z+1
// (with a one-cell ring) goes to shared memory, H of plane z is computed for
// the tile plus the column x = X0-1 (Hy, Hz) and the row y = Y0-1 (Hz, Hx)
// that the E update needs (recomputed here from the read set, never read
// from another block), and E of plane z follows from the new H of planes z
// and z-1 (the latter kept in registers). A chunk starting at z0 > 0 first
// recomputes H of plane z0-1. Every position of the padded arrays is written
// by exactly one thread: E out of its update range is copied, H out of its
// range is 0 or, on PMC faces, the mirror image (as fdtd_pmc_ghosts leaves it).
// The ghost plane z = 0 (logical -1) takes its PMC mirror from plane 1, so
// the owner of plane 0 (chunk 0; zchunk >= 2) writes it when it reaches plane 1.

typedef float Ering[EMV_RH][EMV_RW];

// Ring elements per thread (the ring has EMV_RH * EMV_RW positions).
#define EMV_NR ((EMV_RH * EMV_RW + EMV_NT - 1) / EMV_NT)

// E of plane qz on the tile and its one-cell ring, into registers (0 outside the array).
__device__ __forceinline__ void ring_fetch(const FdtdPtrs& P, const Dctx& K, const Blk& B, int qz, int tid,
                                           float (&r)[3][EMV_NR]) {
    const bool zok = qz < K.dims[2];
#pragma unroll
    for (int k = 0; k < EMV_NR; ++k) {
        const int i = tid + k * EMV_NT;
        const int ry = i / EMV_RW;
        const int rx = i - ry * EMV_RW;
        const int gx = B.X0 - 1 + rx;
        const int gy = B.Y0 - 1 + ry;
        r[0][k] = r[1][k] = r[2][k] = 0.f;
        if (i < EMV_RH * EMV_RW && zok && gx >= 0 && gx < K.dims[0] && gy >= 0 && gy < K.dims[1]) {
            const long long p = K.off + gx + (long long)gy * K.s1 + (long long)qz * K.s2;
            r[0][k] = P.e[0][p];
            r[1][k] = P.e[1][p];
            r[2][k] = P.e[2][p];
        }
    }
}

__device__ __forceinline__ void ring_store(Ering* buf, int tid, const float (&r)[3][EMV_NR]) {
#pragma unroll
    for (int k = 0; k < EMV_NR; ++k) {
        const int i = tid + k * EMV_NT;
        if (i < EMV_RH * EMV_RW) {
            const int ry = i / EMV_RW;
            const int rx = i - ry * EMV_RW;
            buf[0][ry][rx] = r[0][k];
            buf[1][ry][rx] = r[1][k];
            buf[2][ry][rx] = r[2][k];
        }
    }
}

// Old H and material indices a thread needs for plane qz: its own H (3),
// Hy, Hz of the halo column (lx == 0), Hz, Hx of the halo row (ly == 0), and
// its own three material indices.
struct Pre {
    float h[3];
    float hxc[2];
    float hyr[2];
    unsigned char m[3];
};

__device__ __forceinline__ void pre_fetch(const FdtdPtrs& P, const Dctx& K, const Blk& B, int qx, int qy, int qz,
                                          bool inside, Pre& r) {
    r.h[0] = r.h[1] = r.h[2] = 0.f;
    r.hxc[0] = r.hxc[1] = r.hyr[0] = r.hyr[1] = 0.f;
    r.m[0] = r.m[1] = r.m[2] = 0;
    if (qz >= K.dims[2]) return;
    const long long p = K.off + qx + (long long)qy * K.s1 + (long long)qz * K.s2;
    if (inside) {
        r.h[0] = P.h[0][p];
        r.h[1] = P.h[1][p];
        r.h[2] = P.h[2][p];
        r.m[0] = P.mat[0][p];
        r.m[1] = P.mat[1][p];
        r.m[2] = P.mat[2][p];
    }
    if (threadIdx.x == 0 && B.X0 > 0 && qy < K.dims[1]) {
        r.hxc[0] = P.h[1][p - 1];
        r.hxc[1] = P.h[2][p - 1];
    }
    if (threadIdx.y == 0 && B.Y0 > 0 && qx < K.dims[0]) {
        r.hyr[0] = P.h[2][p - K.s1];
        r.hyr[1] = P.h[0][p - K.s1];
    }
}

// New H_c at padded (qx, qy, qz), ring coordinates (rx, ry) of that position
// in Ec (plane z) and En (plane z+1); h = old H_c. 0 outside H_c's update range.
template <int C>
__device__ __forceinline__ float fused_h(const FdtdPtrs& P, const Dctx& K, const Ering* Ec, const Ering* En,
                                         int rx, int ry, int qx, int qy, int qz, float h, float* psi_out) {
    if (!h_in<C>(K, qx, qy, qz)) return 0.f;
    float t1, t2;
    if (C == 0) {
        t1 = (Ec[2][ry + 1][rx] - Ec[2][ry][rx]) * K.id[1];
        t2 = (En[1][ry][rx] - Ec[1][ry][rx]) * K.id[2];
    } else if (C == 1) {
        t1 = (En[0][ry][rx] - Ec[0][ry][rx]) * K.id[2];
        t2 = (Ec[2][ry][rx + 1] - Ec[2][ry][rx]) * K.id[0];
    } else {
        t1 = (Ec[1][ry][rx + 1] - Ec[1][ry][rx]) * K.id[0];
        t2 = (Ec[0][ry + 1][rx] - Ec[0][ry][rx]) * K.id[1];
    }
    return h_core<C>(P, K, qx, qy, qz, h, t1, t2, P.psi_h, psi_out);
}

// Ghost fix of the thread's own H_c (x/y faces from the neighbour in the
// tile, z-high from the previous plane; z-low is deferred to plane 1). Reads
// only in-range values and writes only ghost positions, so the threads of a
// block need no barrier between them. Returns the (possibly new) value.
template <int C>
__device__ __forceinline__ float own_ghost(const Dctx& K, float (*sH)[EMV_TY + 1][EMV_TX + 1], int hx, int hy,
                                           int qx, int qy, int qz, float h, float prev) {
    const int f = ghost_face<C>(K, qx, qy, qz);
    if (f < 0) return h;
    float v = 0.f;
    if ((K.pmc >> f) & 1) {
        const int a = f >> 1;
        const int side = f & 1;
        const int dlt = side ? -1 : 1;
        if (a == 0) v = -sH[C][hy][hx + dlt];
        else if (a == 1) v = -sH[C][hy + dlt][hx];
        else v = side ? -prev : 0.f;
    }
    sH[C][hy][hx] = v;
    return v;
}

// Minimum resident blocks per SM asked of the compiler (caps registers).
#ifndef EMV_MINB
#define EMV_MINB ((EMV_NT >= 512) ? 1 : (512 / EMV_NT))
#endif

// CPU twin: cpu.rs fdtd_step (fdtd_update_h, fdtd_pmc_ghosts, fdtd_update_e).
// Software pipelined: while plane z is computed, the E ring of plane z+2 and
// the old H and materials of plane z+1 are on their way into registers.
extern "C" __global__ void __launch_bounds__(EMV_NT, EMV_MINB) fdtd_step(FdtdPtrs P) {
    __shared__ float sE[2][3][EMV_RH][EMV_RW];
    __shared__ float sH[3][EMV_TY + 1][EMV_TX + 1];
    Dctx K;
    Blk B;
    load_ctx(P, K, B);
    const int lx = threadIdx.x;
    const int ly = threadIdx.y;
    const int tid = ly * EMV_TX + lx;
    const int qx = B.X0 + lx;
    const int qy = B.Y0 + ly;
    const bool inside = qx < K.dims[0] && qy < K.dims[1];
    const int zs = B.z0 > 0 ? B.z0 - 1 : 0;
    const int hx = lx + 1;  // own position in sH; 0 is the halo column/row
    const int hy = ly + 1;
    float r[3][EMV_NR];
    ring_fetch(P, K, B, zs, tid, r);
    ring_store(sE[0], tid, r);
    ring_fetch(P, K, B, zs + 1, tid, r);
    ring_store(sE[1], tid, r);
    Pre cu, nx;
    pre_fetch(P, K, B, qx, qy, zs, inside, cu);
    int cur = 0;
    float prev_x = 0.f, prev_y = 0.f;
    for (int qz = zs; qz < B.z1; ++qz) {
        const bool owned = qz >= B.z0;  // block-uniform
        __syncthreads();  // ring of plane z+1 stored; previous plane done with sH
        ring_fetch(P, K, B, qz + 2, tid, r);
        pre_fetch(P, K, B, qx, qy, qz + 1, inside, nx);
        const Ering* Ec = sE[cur];
        const Ering* En = sE[cur ^ 1];
        const long long p = K.off + qx + (long long)qy * K.s1 + (long long)qz * K.s2;
        const float eo0 = Ec[0][hy][hx];
        const float eo1 = Ec[1][hy][hx];
        const float eo2 = Ec[2][hy][hx];
        float h0 = 0.f, h1 = 0.f, h2 = 0.f;
        if (inside) {
            float* pso = owned ? P.psi_h_out : (float*)0;
            h0 = fused_h<0>(P, K, Ec, En, hx, hy, qx, qy, qz, cu.h[0], pso);
            h1 = fused_h<1>(P, K, Ec, En, hx, hy, qx, qy, qz, cu.h[1], pso);
            h2 = fused_h<2>(P, K, Ec, En, hx, hy, qx, qy, qz, cu.h[2], pso);
        }
        sH[0][hy][hx] = h0;
        sH[1][hy][hx] = h1;
        sH[2][hy][hx] = h2;
        if (owned) {
            if (lx == 0) {  // column x = X0-1: Hy, Hz for E_z, E_y of column X0
                float a1 = 0.f, a2 = 0.f;
                if (B.X0 > 0 && qy < K.dims[1]) {
                    a1 = fused_h<1>(P, K, Ec, En, 0, hy, qx - 1, qy, qz, cu.hxc[0], (float*)0);
                    a2 = fused_h<2>(P, K, Ec, En, 0, hy, qx - 1, qy, qz, cu.hxc[1], (float*)0);
                }
                sH[1][hy][0] = a1;
                sH[2][hy][0] = a2;
            }
            if (ly == 0) {  // row y = Y0-1: Hz, Hx for E_x, E_z of row Y0
                float a2 = 0.f, a0 = 0.f;
                if (B.Y0 > 0 && qx < K.dims[0]) {
                    a2 = fused_h<2>(P, K, Ec, En, hx, 0, qx, qy - 1, qz, cu.hyr[0], (float*)0);
                    a0 = fused_h<0>(P, K, Ec, En, hx, 0, qx, qy - 1, qz, cu.hyr[1], (float*)0);
                }
                sH[2][0][hx] = a2;
                sH[0][0][hx] = a0;
            }
        }
        __syncthreads();  // sH complete; nobody reads Ec any more
        ring_store(sE[cur], tid, r);  // plane z+2 takes the place of plane z
        if (owned && inside) {
            h0 = own_ghost<0>(K, sH, hx, hy, qx, qy, qz, h0, prev_x);
            h1 = own_ghost<1>(K, sH, hx, hy, qx, qy, qz, h1, prev_y);
            h2 = own_ghost<2>(K, sH, hx, hy, qx, qy, qz, h2, 0.f);
        }
        __syncthreads();  // ghosts in sH
        if (owned && inside) {
            if (qz == 1 && ((K.pmc >> 4) & 1)) {
                // Ghost plane 0 of a PMC z-low face mirrors plane 1 (own column only).
                prev_x = (h_in_axis<0>(K, 0, qx) && h_in_axis<0>(K, 1, qy)) ? -h0 : 0.f;
                prev_y = (h_in_axis<1>(K, 0, qx) && h_in_axis<1>(K, 1, qy)) ? -h1 : 0.f;
                P.h_out[0][p - K.s2] = prev_x;
                P.h_out[1][p - K.s2] = prev_y;
            }
            float e0 = eo0, e1 = eo1, e2 = eo2;
            if (e_in<0>(K, qx, qy, qz)) {
                const float t1 = (h2 - sH[2][hy - 1][hx]) * K.id[1];
                const float t2 = (h1 - prev_y) * K.id[2];
                e0 = e_core<0>(P, K, qx, qy, qz, cu.m[0], t1, t2, eo0);
            }
            if (e_in<1>(K, qx, qy, qz)) {
                const float t1 = (h0 - prev_x) * K.id[2];
                const float t2 = (h2 - sH[2][hy][hx - 1]) * K.id[0];
                e1 = e_core<1>(P, K, qx, qy, qz, cu.m[1], t1, t2, eo1);
            }
            if (e_in<2>(K, qx, qy, qz)) {
                const float t1 = (h1 - sH[1][hy][hx - 1]) * K.id[0];
                const float t2 = (h0 - sH[0][hy - 1][hx]) * K.id[1];
                e2 = e_core<2>(P, K, qx, qy, qz, cu.m[2], t1, t2, eo2);
            }
            P.e_out[0][p] = e0;
            P.e_out[1][p] = e1;
            P.e_out[2][p] = e2;
            P.h_out[0][p] = h0;
            P.h_out[1][p] = h1;
            P.h_out[2][p] = h2;
        }
        prev_x = h0;
        prev_y = h1;
        cu = nx;
        cur ^= 1;
    }
}

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
        for (int m = threadIdx.x; m < n; m += EMV_SAMPLE_THREADS) v += (double)e[Q.t_idx0[t0 + m]];
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
    if (qx < K.dims[0] && qy < K.dims[1]) {
        for (int qz = B.z0; qz < B.z1; ++qz) {
            const long long p = K.off + qx + (long long)qy * K.s1 + (long long)qz * K.s2;
#pragma unroll
            for (int c = 0; c < 3; ++c) {
                const double x = (double)P.e[c][p];
                ae += (double)P.eps[K.coef + P.mat[c][p]] * x * x;
                const double y = (double)P.h[c][p];
                ah += y * y;
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
