// Temporal-blocking probe (issue 10, item 2): how fast can a z-marching
// Yee pass run on this GPU when it advances T steps per pass instead of one?
//
// Not part of emvolve. It answers one question before the streaming kernel
// is rewritten: the fused one-pass kernel is latency- and issue-bound
// (docs/BENCHMARKS.md), so halving the bytes per update only pays if the
// extra work of the wider tiles (the trapezoid's ghost cells) does not eat
// it. The probe measures that on the plain interior arithmetic alone
// (kernels/fdtd_lean.cuh's operands: no CPML, no ports, per-component
// material bytes, per-axis inverse spacings), on a uniform box, with
//   naive  two kernels a step, one thread a cell, in place;
//   fused  one z-marching kernel, T = 1, 2 or 3 steps a launch (T = 1 is the
//          shape of emvolve's lean step: cp.async stages, two barriers a plane).
// Every variant is checked bit for bit against the naive one before it is
// timed (build with --fmad=false, as emvolve's host does). "16B" variants
// copy the tile's own columns 16 bytes at a time (rows padded to align them;
// only with a row pitch of a multiple of 4). "exact plane" variants run only
// where one tile holds the whole xy plane (a slim design): its edge is never
// updated and its outside reads as zero, so no level computes beyond the tile
// (no trapezoid), and T steps a pass cost about T times one step's work.
//
// With PML=L in the environment the box has CPML slabs of L positions at
// both ends of every axis (cpu.rs stretch(): memories ping-ponged like
// emvolve's, level 0's loaded ahead of the barrier, the memories between
// the two levels of a pass in shared memory), and only the "CPML" variants
// run, against naive kernels with the same terms; without it only the others
// do. ONLY=name,name runs the named variants, ZC=z one z-chunk (profiling).
//
// Build and run (device machine): bash scripts/tb-probe/run.sh [n] [steps] [pitch] [ny nz]
// (n^3 positions, default 256, or n x ny x nz; steps a variant, a multiple of
// 6; row pitch, default n: 258 with pitch 258 is emvolve's padded 256^3 box;
// 30 6 30 16 49088 is its population of 64 guides of 28 x 14 cells, padded
// 30 x 16, stacked along z).
// Results and what they mean: docs/BENCHMARKS.md, "Temporal blocking, measured"
// and "Two steps a pass with CPML, probed".

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <string>
#include <vector>
#include <cuda_runtime.h>

#define CK(x)                                                                                       \
    do {                                                                                            \
        cudaError_t e_ = (x);                                                                       \
        if (e_ != cudaSuccess) {                                                                    \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));      \
            exit(2);                                                                                \
        }                                                                                           \
    } while (0)

struct Fields {
    float* e[3];
    float* h[3];
    // CPML memories (PML=L runs only; null otherwise), full-size arrays
    // indexed like the fields: term (C, S) of component C is its S-th curl
    // term, along axis (C + 1 + S) % 3, at index 2 C + S.
    float* pe[6];
    float* ph[6];
};

struct Consts {
    int nx, ny, nz;              // positions along x, y, z
    int pitch;                   // row pitch (>= nx): position index x + y pitch + z pitch ny
    const unsigned char* mat[3];  // material index per E component
    const float* ie[3];          // E-side inverse spacing per axis line
    const float* ih[3];          // H-side
    const float* ca;             // coefficient table (16 entries)
    const float* cb;
    float db;
    // CPML slabs: L positions at both ends of every axis (0: none); per side
    // (0 E, 1 H) and axis, the profile lines b, c, k of cpu.rs stretch().
    int L;
    const float* pb[2][3];
    const float* pc[2][3];
    const float* pk[2][3];
};

// A position is updated (every component, E and H) iff it is inside
// [1, n_a - 2] on every axis; elsewhere it keeps its value. Outside the array
// fields read as zero.
__device__ __forceinline__ bool upd1(int q, int n) { return q >= 1 && q <= n - 2; }

__device__ __forceinline__ float h_new(float h, float db, float t1, float t2) { return h - db * (t1 - t2); }
__device__ __forceinline__ float e_new(float e, float ca, float cb, float t1, float t2) { return ca * e + cb * (t1 - t2); }

__device__ __forceinline__ bool slab(int q, int n, int L) { return q < L || q >= n - L; }

// Naive CPML term (C, S) of side SIDE at p, in place (cpu.rs stretch()).
template <int SIDE, int C, int S>
__device__ __forceinline__ float nterm(const Consts& K, const Fields& F, int x, int y, int z, long long p, float t) {
    constexpr int AX = (C + 1 + S) % 3, J = 2 * C + S;
    const int q = AX == 0 ? x : AX == 1 ? y : z;
    const int n = AX == 0 ? K.nx : AX == 1 ? K.ny : K.nz;
    if (!slab(q, n, K.L)) return t;
    float* psi = SIDE ? F.ph[J] : F.pe[J];
    const float s = K.pb[SIDE][AX][q] * psi[p] + K.pc[SIDE][AX][q] * t;
    psi[p] = s;
    return t * K.pk[SIDE][AX][q] + s;
}

// ---------------------------------------------------------------- naive
__global__ void __launch_bounds__(256) naive_h(Fields F, Consts K) {
    const int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 8 + threadIdx.y, z = blockIdx.z;
    if (!(upd1(x, K.nx) && upd1(y, K.ny) && upd1(z, K.nz))) return;  // also x, y >= n
    const long long s1 = K.pitch, s2 = (long long)K.pitch * K.ny, p = x + y * s1 + z * s2;
    const float ix = K.ih[0][x], iy = K.ih[1][y], iz = K.ih[2][z];
    const float ex = F.e[0][p], ey = F.e[1][p], ez = F.e[2][p];
    float t1, t2;
    const bool pm = K.L > 0;
    t1 = (F.e[2][p + s1] - ez) * iy;
    t2 = (F.e[1][p + s2] - ey) * iz;
    if (pm) { t1 = nterm<1, 0, 0>(K, F, x, y, z, p, t1); t2 = nterm<1, 0, 1>(K, F, x, y, z, p, t2); }
    F.h[0][p] = h_new(F.h[0][p], K.db, t1, t2);
    t1 = (F.e[0][p + s2] - ex) * iz;
    t2 = (F.e[2][p + 1] - ez) * ix;
    if (pm) { t1 = nterm<1, 1, 0>(K, F, x, y, z, p, t1); t2 = nterm<1, 1, 1>(K, F, x, y, z, p, t2); }
    F.h[1][p] = h_new(F.h[1][p], K.db, t1, t2);
    t1 = (F.e[1][p + 1] - ey) * ix;
    t2 = (F.e[0][p + s1] - ex) * iy;
    if (pm) { t1 = nterm<1, 2, 0>(K, F, x, y, z, p, t1); t2 = nterm<1, 2, 1>(K, F, x, y, z, p, t2); }
    F.h[2][p] = h_new(F.h[2][p], K.db, t1, t2);
}

__global__ void __launch_bounds__(256) naive_e(Fields F, Consts K) {
    const int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 8 + threadIdx.y, z = blockIdx.z;
    if (!(upd1(x, K.nx) && upd1(y, K.ny) && upd1(z, K.nz))) return;  // also x, y >= n
    const long long s1 = K.pitch, s2 = (long long)K.pitch * K.ny, p = x + y * s1 + z * s2;
    const float ix = K.ie[0][x], iy = K.ie[1][y], iz = K.ie[2][z];
    const float hx = F.h[0][p], hy = F.h[1][p], hz = F.h[2][p];
    float t1, t2;
    int m;
    const bool pm = K.L > 0;
    m = K.mat[0][p];
    t1 = (hz - F.h[2][p - s1]) * iy;
    t2 = (hy - F.h[1][p - s2]) * iz;
    if (pm) { t1 = nterm<0, 0, 0>(K, F, x, y, z, p, t1); t2 = nterm<0, 0, 1>(K, F, x, y, z, p, t2); }
    F.e[0][p] = e_new(F.e[0][p], K.ca[m], K.cb[m], t1, t2);
    m = K.mat[1][p];
    t1 = (hx - F.h[0][p - s2]) * iz;
    t2 = (hz - F.h[2][p - 1]) * ix;
    if (pm) { t1 = nterm<0, 1, 0>(K, F, x, y, z, p, t1); t2 = nterm<0, 1, 1>(K, F, x, y, z, p, t2); }
    F.e[1][p] = e_new(F.e[1][p], K.ca[m], K.cb[m], t1, t2);
    m = K.mat[2][p];
    t1 = (hy - F.h[1][p - 1]) * ix;
    t2 = (hx - F.h[0][p - s1]) * iy;
    if (pm) { t1 = nterm<0, 2, 0>(K, F, x, y, z, p, t1); t2 = nterm<0, 2, 1>(K, F, x, y, z, p, t2); }
    F.e[2][p] = e_new(F.e[2][p], K.ca[m], K.cb[m], t1, t2);
}

// ---------------------------------------------------------------- fused
__device__ __forceinline__ void cp4(float* dst, const float* src, bool ok) {
    unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(s), "l"(src), "r"(ok ? 4 : 0) : "memory");
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

// Regions of the trapezoid, in tile coordinates (the output tile is
// [0, TX) x [0, TY)). Level t (0..T-1) computes H_t = H^{n+t+1/2} on
// [-(T-t), TX+T-1-t) and E_t = E^{n+t+1} on [-(T-1-t), TX+T-1-t) (same in y);
// E^n is read on [-T, TX+T), H^{n-1/2} on H_0's region.
// EX ("exact"): the tile holds the whole xy plane (nx <= TX, ny <= TY), whose
// edge positions are never updated and whose outside reads as zero, so no
// level needs positions beyond the tile: every region is the tile itself.
template <int T, int TX, int TY, bool EX = false>
struct Geo {
    __host__ __device__ static constexpr int hw(int t) { return EX ? TX : TX + 2 * (T - t) - 1; }
    __host__ __device__ static constexpr int hh(int t) { return EX ? TY : TY + 2 * (T - t) - 1; }
    __host__ __device__ static constexpr int ho(int t) { return EX ? 0 : -(T - t); }
    __host__ __device__ static constexpr int ew(int t) { return EX ? TX : TX + 2 * (T - 1 - t); }  // t = -1: the source E
    __host__ __device__ static constexpr int eh(int t) { return EX ? TY : TY + 2 * (T - 1 - t); }
    __host__ __device__ static constexpr int eo(int t) { return EX ? 0 : -(T - 1 - t); }
    __host__ __device__ static constexpr int hsz(int t) { return hw(t) * hh(t); }
    __host__ __device__ static constexpr int esz(int t) { return ew(t) * eh(t); }
    // Shared floats: NS stages (source E and H_0's old H), two planes of
    // every H_t and of every E_t but the last, the x and y spacing lines.
    __host__ __device__ static constexpr int stage() { return 3 * esz(-1) + 3 * hsz(0); }
    __host__ __device__ static constexpr int hbufs() {
        int s = 0;
        for (int t = 0; t < T; ++t) s += 2 * 3 * hsz(t);
        return s;
    }
    __host__ __device__ static constexpr int ebufs() {
        int s = 0;
        for (int t = 0; t + 1 < T; ++t) s += 2 * 3 * esz(t);
        return s;
    }
};

// Layout of a pipeline stage (E^n on its region, then H_0's old H): rows of
// pitch pE / pH floats, x = 0 at column xo. V16: x = 0 at column 4 and a
// pitch of a multiple of 4, so the tile's own columns are 16-byte aligned and
// copied 4 floats at a time (the halo columns one at a time).
template <int T, int TX, int TY, bool V16, bool EX = false>
struct SL {
    using G = Geo<T, TX, TY, EX>;
    __host__ __device__ static constexpr int pE() { return V16 ? (4 + TX + T + 3) / 4 * 4 : G::ew(-1); }
    __host__ __device__ static constexpr int pH() { return V16 ? pE() : G::hw(0); }
    __host__ __device__ static constexpr int xo() { return V16 ? 4 : (EX ? 0 : T); }
    __host__ __device__ static constexpr int yo() { return EX ? 0 : T; }
    __host__ __device__ static constexpr int eN() { return G::eh(-1) * pE(); }  // floats of one E component
    __host__ __device__ static constexpr int hN() { return G::hh(0) * pH(); }
    __host__ __device__ static constexpr int size() { return 3 * eN() + 3 * hN(); }
};

// Shared layout offsets (floats) of level t's buffers.
template <int T, int TX, int TY, bool EX>
__device__ __forceinline__ int hoff(int t) {
    int s = 0;
    for (int u = 0; u < t; ++u) s += 2 * 3 * Geo<T, TX, TY, EX>::hsz(u);
    return s;
}
template <int T, int TX, int TY, bool EX>
__device__ __forceinline__ int eoff(int t) {
    int s = Geo<T, TX, TY, EX>::hbufs();
    for (int u = 0; u < t; ++u) s += 2 * 3 * Geo<T, TX, TY, EX>::esz(u);
    return s;
}

// One pass: T steps of the tile's z-chunk, reading A, writing B.
__device__ __forceinline__ void cp16(float* dst, const float* src, int bytes) {
    unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(src), "r"(bytes) : "memory");
}

// CPML memories between levels (PM, T = 2): level 0's new values at the
// positions of level 1's regions (H: hw(1) x hh(1), E: the tile), one plane
// of each parity, 6 terms a side.
template <int T, int TX, int TY>
struct PsiBuf {
    using G = Geo<T, TX, TY, false>;
    __host__ __device__ static constexpr int hn() { return T > 1 ? G::hsz(1) : 0; }
    __host__ __device__ static constexpr int en() { return T > 1 ? G::esz(1) : 0; }
    __host__ __device__ static constexpr int size() { return 12 * (hn() + en()); }
};

// CPML term (C, S) of side SIDE at level t, position (x, y) of the tile
// (global gx, gy, plane p, index gp): the old memory from the read set (level
// 0) or the previous level's buffer; the new one to the next level's buffer
// or, at the last level, to the write set where the tile owns the position.
template <int T, int TX, int TY, int SIDE, int C, int S>
__device__ __forceinline__ float fterm(const Consts& K, const Fields& A, const Fields& B, float* sPs, int t, int x,
                                       int y, int gx, int gy, int p, int z0, int z1, float pold, float tv) {
    constexpr int AX = (C + 1 + S) % 3, J = 2 * C + S;
    const int q = AX == 0 ? gx : AX == 1 ? gy : p;
    const int n = AX == 0 ? K.nx : AX == 1 ? K.ny : K.nz;
    if (!slab(q, n, K.L)) return tv;
    using G = Geo<T, TX, TY, false>;
    constexpr int W1 = T > 1 ? (SIDE ? G::hw(1) : G::ew(1)) : 1;
    constexpr int H1 = T > 1 ? (SIDE ? G::hh(1) : G::eh(1)) : 1;
    constexpr int O1 = T > 1 ? (SIDE ? G::ho(1) : G::eo(1)) : 0;
    const int rx = x - O1, ry = y - O1;
    const bool in1 = T > 1 && rx >= 0 && rx < W1 && ry >= 0 && ry < H1;
    float* buf = sPs + ((p & 1) * 6 + J) * (W1 * H1) + ry * W1 + rx;
    const long long gp = gx + gy * (long long)K.pitch + (long long)p * K.pitch * K.ny;
    const float ps = t == 0 ? pold : *buf;  // level 0: the read set's, loaded ahead of the barrier
    const float s = __ldg(K.pb[SIDE][AX] + q) * ps + __ldg(K.pc[SIDE][AX] + q) * tv;
    if (t == T - 1) {
        // owned: the tile's own positions of the chunk (E's last region is the tile)
        if (x >= 0 && x < TX && y >= 0 && y < TY && p >= z0 && p < z1 && gx < K.nx && gy < K.ny)
            (SIDE ? B.ph[J] : B.pe[J])[gp] = s;
    } else if (in1) {
        *buf = s;
    }
    return tv * __ldg(K.pk[SIDE][AX] + q) + s;
}

// Level 0's CPML memories (the read set's psi) at plane j over a square-offset
// region of width W at offset O (S positions, NK a thread), where the term's
// axis is in a slab and the position is updated; out is zeroed by the caller.
template <int NK, int NT, int W, int O, int S>
__device__ __forceinline__ void psi_ahead(const Consts& K, float* const (&psi)[6], int tid, int X0, int Y0, int j,
                                          float (&out)[NK][6]) {
#pragma unroll
    for (int k = 0; k < NK; ++k) {
        const int i = tid + k * NT;
        if (i < S) {
            const int ry = i / W, rx = i - ry * W;
            const int gx = X0 + O + rx, gy = Y0 + O + ry;
            if (upd1(gx, K.nx) && upd1(gy, K.ny)) {
                const long long gp = gx + gy * (long long)K.pitch + (long long)j * K.pitch * K.ny;
                const int qa[3] = {gx, gy, j};
                const int na[3] = {K.nx, K.ny, K.nz};
#pragma unroll
                for (int q = 0; q < 6; ++q) {
                    const int ax = (q / 2 + 1 + q % 2) % 3;
                    if (slab(qa[ax], na[ax], K.L)) out[k][q] = __ldg(psi[q] + gp);
                }
            }
        }
    }
}

template <int T, int TX, int TY, int NS, int MINB, bool V16, bool EX, bool PM>
__global__ void __launch_bounds__(TX * TY, MINB) fused(Fields A, Fields B, Consts K, int zchunk) {
    static_assert(!(EX && V16), "exact tiles copy 4 bytes at a time");
    static_assert(!PM || (!EX && T <= 2), "CPML: trapezoid tiles, at most two steps");
    using G = Geo<T, TX, TY, EX>;
    using L = SL<T, TX, TY, V16, EX>;
    constexpr int NT = TX * TY;
    extern __shared__ float sm[];
    float* sStage = sm;                                // NS * stage()
    float* sBuf = sm + NS * L::size();                // hbufs, ebufs
    float* sIx = sBuf + G::hbufs() + G::ebufs();      // [2][TX + 2T]: E side, H side
    float* sIy = sIx + 2 * (TX + 2 * T);              // [2][TY + 2T]
    float* sCa = sIy + 2 * (TY + 2 * T);              // 16
    float* sCb = sCa + 16;
    float* sPsH = sCb + 16;  // PM: PsiBuf, H then E
    float* sPsE = sPsH + 12 * PsiBuf<T, TX, TY>::hn();

    const int nx = K.nx, ny = K.ny, nz = K.nz;
    const long long s1 = K.pitch, s2 = (long long)K.pitch * ny;
    const int tilesx = (nx + TX - 1) / TX, tilesy = (ny + TY - 1) / TY;
    const int tpp = tilesx * tilesy;
    const int ch = blockIdx.x / tpp;
    const int tl = blockIdx.x - ch * tpp;
    const int X0 = (tl % tilesx) * TX, Y0 = (tl / tilesx) * TY;
    const int z0 = ch * zchunk, z1 = min(nz, z0 + zchunk);
    const int tid = threadIdx.x;
    // PM: does any region of the tile reach into an x or y slab (block-uniform)?
    const bool cxy = PM && (X0 - T < K.L || X0 + TX + T > nx - K.L || Y0 - T < K.L || Y0 + TY + T > ny - K.L);

    // Spacing lines over [-T, TX+T) and the coefficient table.
    for (int i = tid; i < TX + 2 * T; i += NT) {
        const int gx = X0 - T + i;
        const bool ok = gx >= 0 && gx < nx;
        sIx[i] = ok ? K.ie[0][gx] : 0.f;
        sIx[TX + 2 * T + i] = ok ? K.ih[0][gx] : 0.f;
    }
    for (int i = tid; i < TY + 2 * T; i += NT) {
        const int gy = Y0 - T + i;
        const bool ok = gy >= 0 && gy < ny;
        sIy[i] = ok ? K.ie[1][gy] : 0.f;
        sIy[TY + 2 * T + i] = ok ? K.ih[1][gy] : 0.f;
    }
    if (tid < 16) {
        sCa[tid] = K.ca[tid];
        sCb[tid] = K.cb[tid];
    }

    // Copy slots of the stage (plane-invariant xy offsets, -1 outside).
    constexpr int NE = (G::esz(-1) + NT - 1) / NT;
    constexpr int NH = (G::hsz(0) + NT - 1) / NT;
    int se[NE], shs[NH];
#pragma unroll
    for (int k = 0; k < NE; ++k) {
        const int i = tid + k * NT;
        const int ry = i / G::ew(-1), rx = i - ry * G::ew(-1);
        const int gx = X0 + G::eo(-1) + rx, gy = Y0 + G::eo(-1) + ry;
        se[k] = (i < G::esz(-1) && gx >= 0 && gx < nx && gy >= 0 && gy < ny) ? gx + gy * K.pitch : -1;
    }
#pragma unroll
    for (int k = 0; k < NH; ++k) {
        const int i = tid + k * NT;
        const int ry = i / G::hw(0), rx = i - ry * G::hw(0);
        const int gx = X0 + G::ho(0) + rx, gy = Y0 + G::ho(0) + ry;
        shs[k] = (i < G::hsz(0) && gx >= 0 && gx < nx && gy >= 0 && gy < ny) ? gx + gy * K.pitch : -1;
    }
    auto issue = [&](int pz) {
        float* st = sStage + ((pz % NS) + NS) % NS * L::size();
        const bool zok = pz >= 0 && pz < nz;
        const long long zo = (long long)pz * s2;
        float* sh = st + 3 * L::eN();
        if constexpr (!V16) {
#pragma unroll
            for (int k = 0; k < NE; ++k) {
                const int i = tid + k * NT;
                if (i < G::esz(-1)) {
                    const bool ok = zok && se[k] >= 0;
                    const long long p = ok ? zo + se[k] : 0;
                    cp4(st + i, A.e[0] + p, ok);
                    cp4(st + L::eN() + i, A.e[1] + p, ok);
                    cp4(st + 2 * L::eN() + i, A.e[2] + p, ok);
                }
            }
#pragma unroll
            for (int k = 0; k < NH; ++k) {
                const int i = tid + k * NT;
                if (i < G::hsz(0)) {
                    const bool ok = zok && shs[k] >= 0;
                    const long long p = ok ? zo + shs[k] : 0;
                    cp4(sh + i, A.h[0] + p, ok);
                    cp4(sh + L::hN() + i, A.h[1] + p, ok);
                    cp4(sh + 2 * L::hN() + i, A.h[2] + p, ok);
                }
            }
        } else {
            // 16-byte copies of the tile's own columns: rows of E (eh(-1)) then
            // of H (hh(0)), TX/4 chunks a row, for each component.
            constexpr int C4 = TX / 4, RE = G::eh(-1), RH = G::hh(0);
            constexpr int N16 = 3 * (RE + RH) * C4;
#pragma unroll
            for (int k = 0; k < (N16 + NT - 1) / NT; ++k) {
                const int q = tid + k * NT;
                if (q < N16) {
                    const int c = q % C4;
                    const int r = q / C4;  // row over [E comps x RE, H comps x RH]
                    const bool isE = r < 3 * RE;
                    const int rr = isE ? r : r - 3 * RE;
                    const int comp = isE ? rr / RE : rr / RH;
                    const int ry = isE ? rr - comp * RE : rr - comp * RH;
                    const int gx = X0 + 4 * c, gy = Y0 - T + ry;
                    const int valid = (zok && gy >= 0 && gy < ny) ? max(0, min(4, nx - gx)) : 0;
                    const long long p = valid ? zo + gx + (long long)gy * K.pitch : 0;
                    float* dst = isE ? st + comp * L::eN() + ry * L::pE() + L::xo() + 4 * c
                                     : sh + comp * L::hN() + ry * L::pH() + L::xo() + 4 * c;
                    // (no dynamic index into the parameter's arrays: that copies them to local memory)
                    const float* base = isE ? (comp == 0 ? A.e[0] : comp == 1 ? A.e[1] : A.e[2])
                                            : (comp == 0 ? A.h[0] : comp == 1 ? A.h[1] : A.h[2]);
                    const float* src = base + p;
                    cp16(dst, src, 4 * valid);
                }
            }
            // The halo columns: E x in [-T, 0) u [TX, TX+T), H x in [-T, 0) u [TX, TX+T-1).
            constexpr int WE = 2 * T, WH = 2 * T - 1;
            constexpr int N4 = 3 * (RE * WE + RH * WH);
#pragma unroll
            for (int k = 0; k < (N4 + NT - 1) / NT; ++k) {
                const int q = tid + k * NT;
                if (q < N4) {
                    const bool isE = q < 3 * RE * WE;
                    const int qq = isE ? q : q - 3 * RE * WE;
                    const int W = isE ? WE : WH;
                    const int R = isE ? RE : RH;
                    const int comp = qq / (R * W);
                    const int rem = qq - comp * R * W;
                    const int ry = rem / W, j = rem - ry * W;
                    const int x = j < T ? j - T : TX + (j - T);
                    const int gx = X0 + x, gy = Y0 - T + ry;
                    const bool ok = zok && gx >= 0 && gx < nx && gy >= 0 && gy < ny;
                    const long long p = ok ? zo + gx + (long long)gy * K.pitch : 0;
                    float* dst = isE ? st + comp * L::eN() + ry * L::pE() + L::xo() + x
                                     : sh + comp * L::hN() + ry * L::pH() + L::xo() + x;
                    const float* base = isE ? (comp == 0 ? A.e[0] : comp == 1 ? A.e[1] : A.e[2])
                                            : (comp == 0 ? A.h[0] : comp == 1 ? A.h[1] : A.h[2]);
                    cp4(dst, base + p, ok);
                }
            }
        }
        cp_commit();
    };

    const int js = z0 - T;        // first iteration: level 0 at plane z0 - T
    const int je = z1 + T - 2;    // last: level T-1 at plane z1 - 1
    const int zlast = z1 + T - 1; // last source plane read
    auto issue_if = [&](int pz) {
        if (pz <= zlast) {
            issue(pz);
        } else {
            cp_commit();  // keep one group per plane
        }
    };
    for (int k = 0; k < NS; ++k) issue_if(js + k);
    __syncthreads();  // lines and table

    constexpr int NE0 = (G::esz(0) + NT - 1) / NT;  // E elements a thread, most at level 0
    constexpr int NH0 = (G::hsz(0) + NT - 1) / NT;
    for (int j = js; j <= je; ++j) {
        // Ahead of the barrier: material bytes (packed) and z spacings of every
        // level's plane.
        // (Packed as loaded: holding the raw bytes a plane longer costs T = 2
        // registers it cannot spare: 36 B of spills and 18 % of its rate.)
        int mreg[T][NE0];
        float izh[T], ize[T];
#pragma unroll
        for (int t = 0; t < T; ++t) {
            const int p = j - t;
            const bool pin = p >= 0 && p < nz;
            izh[t] = pin ? K.ih[2][p] : 0.f;
            ize[t] = pin ? K.ie[2][p] : 0.f;
#pragma unroll
            for (int k = 0; k < NE0; ++k) {
                const int i = tid + k * NT;
                mreg[t][k] = 0;
                if (i < G::esz(t) && pin && upd1(p, nz)) {
                    const int ry = i / G::ew(t), rx = i - ry * G::ew(t);
                    const int gx = X0 + G::eo(t) + rx, gy = Y0 + G::eo(t) + ry;
                    if (upd1(gx, nx) && upd1(gy, ny)) {
                        const long long gp = gx + gy * s1 + (long long)p * s2;
                        mreg[t][k] = K.mat[0][gp] | (K.mat[1][gp] << 8) | (K.mat[2][gp] << 16);
                    }
                }
            }
        }
        // PM: level 0's CPML memories of plane j (the read set's), loaded ahead
        // of the barrier; 0 where not needed.
        float pH[PM ? NH0 : 1][6], pE[PM ? NE0 : 1][6];
        if constexpr (PM) {
#pragma unroll
            for (int k = 0; k < NH0; ++k)
#pragma unroll
                for (int q = 0; q < 6; ++q) pH[k][q] = 0.f;
#pragma unroll
            for (int k = 0; k < NE0; ++k)
#pragma unroll
                for (int q = 0; q < 6; ++q) pE[k][q] = 0.f;
            if ((cxy || slab(j, nz, K.L)) && upd1(j, nz)) {
                psi_ahead<NH0, NT, G::hw(0), G::ho(0), G::hsz(0)>(K, A.ph, tid, X0, Y0, j, pH);
                psi_ahead<NE0, NT, G::ew(0), G::eo(0), G::esz(0)>(K, A.pe, tid, X0, Y0, j, pE);
            }
        }
        cp_wait<NS - 2>();
        __syncthreads();
#pragma unroll
        for (int t = 0; t < T; ++t) {
            const int p = j - t;
            if (j < js + 2 * t) continue;  // block-uniform: level t not started
            // Sources of level t: E_{t-1} on planes p, p+1 and old H (t = 0: the stages).
            const float* Ec;
            const float* En;
            const float* Ho;
            // Index of (x, y) in a source: (y + yo) * w + x + xo.
            int sw, sxo, syo, ssz, hsw, hxo, hyo, hssz;
            if (t == 0) {
                Ec = sStage + ((p % NS) + NS) % NS * L::size();
                En = sStage + (((p + 1) % NS) + NS) % NS * L::size();
                Ho = Ec + 3 * L::eN();
                sw = L::pE(); sxo = L::xo(); syo = L::yo(); ssz = L::eN();
                hsw = L::pH(); hxo = L::xo(); hyo = L::yo(); hssz = L::hN();
            } else {
                Ec = sBuf + eoff<T, TX, TY, EX>(t - 1) + (p & 1) * 3 * G::esz(t - 1);
                En = sBuf + eoff<T, TX, TY, EX>(t - 1) + ((p + 1) & 1) * 3 * G::esz(t - 1);
                Ho = sBuf + hoff<T, TX, TY, EX>(t - 1) + (p & 1) * 3 * G::hsz(t - 1);
                sw = G::ew(t - 1); sxo = syo = -G::eo(t - 1); ssz = G::esz(t - 1);
                hsw = G::hw(t - 1); hxo = hyo = -G::ho(t - 1); hssz = G::hsz(t - 1);
            }
            const bool uz = upd1(p, nz);
            const bool pml = PM && (cxy || slab(p, nz, K.L));  // block-uniform
            // Old E of this level's E elements, read before the stage may be refilled.
            float eold[NE0][3];
#pragma unroll
            for (int k = 0; k < NE0; ++k) {
                const int i = tid + k * NT;
                eold[k][0] = eold[k][1] = eold[k][2] = 0.f;
                if (i < G::esz(t)) {
                    const int ry = i / G::ew(t), rx = i - ry * G::ew(t);
                    const int x = G::eo(t) + rx, y = G::eo(t) + ry;
                    const int is = (y + syo) * sw + (x + sxo);
                    eold[k][0] = Ec[is];
                    eold[k][1] = Ec[ssz + is];
                    eold[k][2] = Ec[2 * ssz + is];
                }
            }
            // H phase.
            float* Hn = sBuf + hoff<T, TX, TY, EX>(t) + (p & 1) * 3 * G::hsz(t);
            {
                const int W = G::hw(t), S = G::hsz(t), O = G::ho(t);
#pragma unroll
                for (int k = 0; k < NH0; ++k) {
                    const int i = tid + k * NT;
                    if (i < S) {
                        const int ry = i / W, rx = i - ry * W;
                        const int x = O + rx, y = O + ry;
                        const int gx = X0 + x, gy = Y0 + y;
                        const int ie = (y + syo) * sw + (x + sxo);
                        const int ih = (y + hyo) * hsw + (x + hxo);
                        float h0 = Ho[ih], h1 = Ho[hssz + ih], h2 = Ho[2 * hssz + ih];
                        if (uz && upd1(gx, nx) && upd1(gy, ny)) {
                            const float ix = sIx[TX + 2 * T + x + T], iy = sIy[TY + 2 * T + y + T];
                            const float* E0 = Ec;
                            const float* E1 = Ec + ssz;
                            const float* E2 = Ec + 2 * ssz;
                            float t1, t2;
                            t1 = (E2[ie + sw] - E2[ie]) * iy;
                            t2 = (En[ssz + ie] - E1[ie]) * izh[t];
                            if (pml) {
                                t1 = fterm<T, TX, TY, 1, 0, 0>(K, A, B, sPsH, t, x, y, gx, gy, p, z0, z1, t == 0 ? pH[k][0] : 0.f, t1);
                                t2 = fterm<T, TX, TY, 1, 0, 1>(K, A, B, sPsH, t, x, y, gx, gy, p, z0, z1, t == 0 ? pH[k][1] : 0.f, t2);
                            }
                            h0 = h_new(h0, K.db, t1, t2);
                            t1 = (En[ie] - E0[ie]) * izh[t];
                            t2 = (E2[ie + 1] - E2[ie]) * ix;
                            if (pml) {
                                t1 = fterm<T, TX, TY, 1, 1, 0>(K, A, B, sPsH, t, x, y, gx, gy, p, z0, z1, t == 0 ? pH[k][2] : 0.f, t1);
                                t2 = fterm<T, TX, TY, 1, 1, 1>(K, A, B, sPsH, t, x, y, gx, gy, p, z0, z1, t == 0 ? pH[k][3] : 0.f, t2);
                            }
                            h1 = h_new(h1, K.db, t1, t2);
                            t1 = (E1[ie + 1] - E1[ie]) * ix;
                            t2 = (E0[ie + sw] - E0[ie]) * iy;
                            if (pml) {
                                t1 = fterm<T, TX, TY, 1, 2, 0>(K, A, B, sPsH, t, x, y, gx, gy, p, z0, z1, t == 0 ? pH[k][4] : 0.f, t1);
                                t2 = fterm<T, TX, TY, 1, 2, 1>(K, A, B, sPsH, t, x, y, gx, gy, p, z0, z1, t == 0 ? pH[k][5] : 0.f, t2);
                            }
                            h2 = h_new(h2, K.db, t1, t2);
                        }
                        Hn[i] = h0;
                        Hn[S + i] = h1;
                        Hn[2 * S + i] = h2;
                    }
                }
            }
            __syncthreads();
            // Level 0 is done with the stage of plane j: refill it.
            if (t == 0) issue_if(j + NS);
            // E phase.
            {
                const float* Hp = sBuf + hoff<T, TX, TY, EX>(t) + ((p + 1) & 1) * 3 * G::hsz(t);  // plane p-1
                const int HW = G::hw(t), HS = G::hsz(t), HO = G::ho(t);
                const int W = G::ew(t), S = G::esz(t), O = G::eo(t);
                const bool last = t == T - 1;
                float* Eo = last ? nullptr : sBuf + eoff<T, TX, TY, EX>(t) + (p & 1) * 3 * G::esz(t);
#pragma unroll
                for (int k = 0; k < NE0; ++k) {
                    const int i = tid + k * NT;
                    if (i < S) {
                        const int ry = i / W, rx = i - ry * W;
                        const int x = O + rx, y = O + ry;
                        const int gx = X0 + x, gy = Y0 + y;
                        const int ih = (y - HO) * HW + (x - HO);
                        float e0 = eold[k][0], e1 = eold[k][1], e2 = eold[k][2];
                        const float hx = Hn[ih], hy = Hn[HS + ih], hz = Hn[2 * HS + ih];
                        if (uz && upd1(gx, nx) && upd1(gy, ny)) {
                            const float ix = sIx[x + T], iy = sIy[y + T];
                            const int mm = mreg[t][k];
                            float t1, t2;
                            int m;
                            m = mm & 255;
                            t1 = (hz - Hn[2 * HS + ih - HW]) * iy;
                            t2 = (hy - Hp[HS + ih]) * ize[t];
                            if (pml) {
                                t1 = fterm<T, TX, TY, 0, 0, 0>(K, A, B, sPsE, t, x, y, gx, gy, p, z0, z1, t == 0 ? pE[k][0] : 0.f, t1);
                                t2 = fterm<T, TX, TY, 0, 0, 1>(K, A, B, sPsE, t, x, y, gx, gy, p, z0, z1, t == 0 ? pE[k][1] : 0.f, t2);
                            }
                            e0 = e_new(e0, sCa[m], sCb[m], t1, t2);
                            m = (mm >> 8) & 255;
                            t1 = (hx - Hp[ih]) * ize[t];
                            t2 = (hz - Hn[2 * HS + ih - 1]) * ix;
                            if (pml) {
                                t1 = fterm<T, TX, TY, 0, 1, 0>(K, A, B, sPsE, t, x, y, gx, gy, p, z0, z1, t == 0 ? pE[k][2] : 0.f, t1);
                                t2 = fterm<T, TX, TY, 0, 1, 1>(K, A, B, sPsE, t, x, y, gx, gy, p, z0, z1, t == 0 ? pE[k][3] : 0.f, t2);
                            }
                            e1 = e_new(e1, sCa[m], sCb[m], t1, t2);
                            m = mm >> 16;
                            t1 = (hy - Hn[HS + ih - 1]) * ix;
                            t2 = (hx - Hn[ih - HW]) * iy;
                            if (pml) {
                                t1 = fterm<T, TX, TY, 0, 2, 0>(K, A, B, sPsE, t, x, y, gx, gy, p, z0, z1, t == 0 ? pE[k][4] : 0.f, t1);
                                t2 = fterm<T, TX, TY, 0, 2, 1>(K, A, B, sPsE, t, x, y, gx, gy, p, z0, z1, t == 0 ? pE[k][5] : 0.f, t2);
                            }
                            e2 = e_new(e2, sCa[m], sCb[m], t1, t2);
                        }
                        if (!last) {
                            Eo[i] = e0;
                            Eo[S + i] = e1;
                            Eo[2 * S + i] = e2;
                        } else if (p >= z0 && p < z1 && gx < nx && gy < ny) {
                            const long long gp = gx + gy * s1 + (long long)p * s2;
                            B.e[0][gp] = e0;
                            B.e[1][gp] = e1;
                            B.e[2][gp] = e2;
                            B.h[0][gp] = hx;
                            B.h[1][gp] = hy;
                            B.h[2][gp] = hz;
                        }
                    }
                }
            }
            if (t + 1 < T) __syncthreads();
        }
    }
    cp_wait<0>();
}

// ---------------------------------------------------------------- host
__device__ __forceinline__ unsigned hash(unsigned x) {
    x ^= x >> 16; x *= 0x7feb352d; x ^= x >> 15; x *= 0x846ca68b; x ^= x >> 16;
    return x;
}
__global__ void init_fields(Fields F, long long cells, unsigned seed) {
    for (long long p = blockIdx.x * (long long)blockDim.x + threadIdx.x; p < cells; p += (long long)gridDim.x * blockDim.x) {
        for (int c = 0; c < 3; ++c) {
            F.e[c][p] = (hash((unsigned)p * 6u + c + seed) & 0xffffff) / 16777216.f - 0.5f;
            F.h[c][p] = (hash((unsigned)p * 6u + 3 + c + seed) & 0xffffff) / 16777216.f - 0.5f;
        }
        if (F.pe[0]) {
            for (int j = 0; j < 6; ++j) {
                F.pe[j][p] = (hash((unsigned)p * 12u + j + seed + 77u) & 0xffffff) / 167772160.f - 0.05f;
                F.ph[j][p] = (hash((unsigned)p * 12u + 6 + j + seed + 77u) & 0xffffff) / 167772160.f - 0.05f;
            }
        }
    }
}
__global__ void init_mat(unsigned char* m0, unsigned char* m1, unsigned char* m2, long long cells) {
    for (long long p = blockIdx.x * (long long)blockDim.x + threadIdx.x; p < cells; p += (long long)gridDim.x * blockDim.x) {
        const unsigned r = hash((unsigned)p ^ 0x9e3779b9u);
        m0[p] = r & 3; m1[p] = (r >> 2) & 3; m2[p] = (r >> 4) & 3;
    }
}
__global__ void diff(const float* a, const float* b, long long cells, unsigned long long* bad) {
    for (long long p = blockIdx.x * (long long)blockDim.x + threadIdx.x; p < cells; p += (long long)gridDim.x * blockDim.x) {
        if (__float_as_uint(a[p]) != __float_as_uint(b[p])) atomicAdd(bad, 1ull);
    }
}

static Fields alloc_fields(long long cells, bool pml) {
    Fields F;
    for (int c = 0; c < 3; ++c) {
        CK(cudaMalloc(&F.e[c], cells * 4));
        CK(cudaMalloc(&F.h[c], cells * 4));
    }
    for (int j = 0; j < 6; ++j) {
        F.pe[j] = F.ph[j] = nullptr;
        if (pml) {
            CK(cudaMalloc(&F.pe[j], cells * 4));
            CK(cudaMalloc(&F.ph[j], cells * 4));
        }
    }
    return F;
}
static void copy_fields(Fields d, Fields s, long long cells) {
    for (int c = 0; c < 3; ++c) {
        CK(cudaMemcpy(d.e[c], s.e[c], cells * 4, cudaMemcpyDeviceToDevice));
        CK(cudaMemcpy(d.h[c], s.h[c], cells * 4, cudaMemcpyDeviceToDevice));
    }
    for (int j = 0; j < 6 && s.pe[0]; ++j) {
        CK(cudaMemcpy(d.pe[j], s.pe[j], cells * 4, cudaMemcpyDeviceToDevice));
        CK(cudaMemcpy(d.ph[j], s.ph[j], cells * 4, cudaMemcpyDeviceToDevice));
    }
}
static unsigned long long mismatches(Fields a, Fields b, long long cells) {
    unsigned long long* d;
    CK(cudaMalloc(&d, 8));
    CK(cudaMemset(d, 0, 8));
    for (int c = 0; c < 3; ++c) {
        diff<<<1024, 256>>>(a.e[c], b.e[c], cells, d);
        diff<<<1024, 256>>>(a.h[c], b.h[c], cells, d);
    }
    for (int j = 0; j < 6 && a.pe[0]; ++j) {
        diff<<<1024, 256>>>(a.pe[j], b.pe[j], cells, d);
        diff<<<1024, 256>>>(a.ph[j], b.ph[j], cells, d);
    }
    unsigned long long r;
    CK(cudaMemcpy(&r, d, 8, cudaMemcpyDeviceToHost));
    CK(cudaFree(d));
    return r;
}

struct Variant {
    const char* name;
    int T, TX, TY;
    size_t smem;
    void (*kernel)(Fields, Fields, Consts, int);
    bool v16;  // needs a row pitch of a multiple of 4
    bool ex;   // needs the whole xy plane in one tile
    bool pm;   // with the CPML terms (runs only with PML=L > 0, the others only without)
};

// pad_kb: extra shared memory a block, to cap the blocks an SM (occupancy).
template <int T, int TX, int TY, int NS, int MINB, bool V16 = false, bool EX = false, bool PM = false>
static Variant make(const char* name, int pad_kb = 0) {
    using G = Geo<T, TX, TY, EX>;
    size_t fl = (size_t)NS * SL<T, TX, TY, V16, EX>::size() + G::hbufs() + G::ebufs() + 2 * (TX + 2 * T) + 2 * (TY + 2 * T) + 32 +
                (PM ? PsiBuf<T, TX, TY>::size() : 0);
    Variant v{name, T, TX, TY, fl * 4 + (size_t)pad_kb * 1024, fused<T, TX, TY, NS, MINB, V16, EX, PM>, V16, EX, PM};
    CK(cudaFuncSetAttribute(v.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)v.smem));
    return v;
}

// An integer environment knob in [lo, hi] (def when unset); anything else
// ends the run with a message naming the knob (exit 2).
static int env_int(const char* name, int lo, int hi, int def) {
    const char* s = getenv(name);
    if (!s) return def;
    char* end = nullptr;
    const long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < lo || v > hi) {
        fprintf(stderr, "tb-probe: %s=%s: expected an integer in [%d, %d]\n", name, s, lo, hi);
        exit(2);
    }
    return (int)v;
}

int main(int argc, char** argv) {
    const int n = argc > 1 ? atoi(argv[1]) : 256;
    const int steps = argc > 2 ? atoi(argv[2]) : 240;  // multiple of 1, 2, 3
    const int pitch = argc > 3 ? atoi(argv[3]) : n;
    const int dims[3] = {n, argc > 5 ? atoi(argv[4]) : n, argc > 5 ? atoi(argv[5]) : n};
    const long long cells = (long long)pitch * dims[1] * dims[2];  // allocated; nx ny nz are the box
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    printf("tb-probe: %s, %d SMs, box %d x %d x %d, row pitch %d, %d steps a variant\n", prop.name, prop.multiProcessorCount,
           dims[0], dims[1], dims[2], pitch, steps);
    const double box = (double)dims[0] * dims[1] * dims[2];

    Consts K;
    K.nx = dims[0];
    K.ny = dims[1];
    K.nz = dims[2];
    K.pitch = pitch;
    K.db = 0.5f;
    unsigned char* mat[3];
    for (int c = 0; c < 3; ++c) CK(cudaMalloc(&mat[c], cells));
    init_mat<<<1024, 256>>>(mat[0], mat[1], mat[2], cells);
    for (int c = 0; c < 3; ++c) K.mat[c] = mat[c];
    for (int a = 0; a < 3; ++a) {
        std::vector<float> line(dims[a]);
        for (int side = 0; side < 2; ++side) {
            for (int i = 0; i < dims[a]; ++i) line[i] = 0.9f + 0.2f * (float)((i * 37 + a * 11 + side * 5) % 17) / 16.f;
            float* d;
            CK(cudaMalloc(&d, dims[a] * 4));
            CK(cudaMemcpy(d, line.data(), dims[a] * 4, cudaMemcpyHostToDevice));
            if (side == 0) K.ie[a] = d; else K.ih[a] = d;
        }
    }
    float ca[16], cb[16];
    for (int m = 0; m < 16; ++m) {
        ca[m] = 1.f - 0.01f * (m % 4);
        cb[m] = 0.5f / (1.f + m % 4);
    }
    float *dca, *dcb;
    CK(cudaMalloc(&dca, 64));
    CK(cudaMalloc(&dcb, 64));
    CK(cudaMemcpy(dca, ca, 64, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dcb, cb, 64, cudaMemcpyHostToDevice));
    K.ca = dca;
    K.cb = dcb;
    // CPML: PML=L slabs at both ends of every axis, with made-up profiles
    // (b in (0.6, 0.95), c in (-0.3, -0.05), k in (0.5, 1)); the arithmetic is
    // cpu.rs stretch()'s, the values only need to be distinct.
    // Slabs of both ends of an axis must leave an updated position between them.
    K.L = env_int("PML", 0, (std::min(dims[0], std::min(dims[1], dims[2])) - 3) / 2, 0);
    const bool pml = K.L > 0;
    for (int a = 0; a < 3; ++a) {
        for (int side = 0; side < 2; ++side) {
            std::vector<float> b(dims[a]), c(dims[a]), k(dims[a]);
            for (int i = 0; i < dims[a]; ++i) {
                const float u = (float)((i * 29 + a * 7 + side * 3) % 13) / 12.f;
                b[i] = 0.6f + 0.35f * u;
                c[i] = -0.05f - 0.25f * u;
                k[i] = 0.5f + 0.5f * (1.f - u);
            }
            float *db, *dc, *dk;
            CK(cudaMalloc(&db, dims[a] * 4));
            CK(cudaMalloc(&dc, dims[a] * 4));
            CK(cudaMalloc(&dk, dims[a] * 4));
            CK(cudaMemcpy(db, b.data(), dims[a] * 4, cudaMemcpyHostToDevice));
            CK(cudaMemcpy(dc, c.data(), dims[a] * 4, cudaMemcpyHostToDevice));
            CK(cudaMemcpy(dk, k.data(), dims[a] * 4, cudaMemcpyHostToDevice));
            K.pb[side][a] = db;
            K.pc[side][a] = dc;
            K.pk[side][a] = dk;
        }
    }
    if (pml) printf("CPML: %d positions at both ends of every axis\n", K.L);

    Fields init = alloc_fields(cells, pml), ref = alloc_fields(cells, pml), A = alloc_fields(cells, pml),
           B = alloc_fields(cells, pml);
    init_fields<<<2048, 256>>>(init, cells, 12345u);
    CK(cudaDeviceSynchronize());

    const dim3 nb(32, 8), ng((dims[0] + 31) / 32, (dims[1] + 7) / 8, dims[2]);
    auto naive_step = [&](Fields F) {
        naive_h<<<ng, nb>>>(F, K);
        naive_e<<<ng, nb>>>(F, K);
    };
    const int check_steps = 6;
    copy_fields(ref, init, cells);
    for (int s = 0; s < check_steps; ++s) naive_step(ref);
    CK(cudaDeviceSynchronize());

    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    // Naive timing.
    {
        copy_fields(A, init, cells);
        naive_step(A);
        CK(cudaEventRecord(e0));
        for (int s = 0; s < steps; ++s) naive_step(A);
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        printf("%-28s %8s %6s %9.2f Gcells/s  (%.3f ms a step; 75 B/cell modelled: %.0f GB/s)\n", "naive (2 kernels, in place)", "-", "-",
               box * steps / (ms * 1e-3) / 1e9, ms / steps, box * 75.0 * steps / (ms * 1e-3) / 1e9);
    }

    std::vector<Variant> vs;
    vs.push_back(make<1, 32, 8, 4, 3>("T1 32x8 4B (lean-like)"));
    vs.push_back(make<1, 32, 8, 4, 3>("T1 32x8 4B 3 blk/SM", 23));
    vs.push_back(make<1, 32, 8, 4, 3, true>("T1 32x8 16B"));
    vs.push_back(make<1, 32, 8, 4, 4, true>("T1 32x8 16B minb4"));
    vs.push_back(make<1, 32, 16, 4, 2>("T1 32x16 4B"));
    vs.push_back(make<2, 32, 8, 3, 3>("T2 32x8 4B minb3"));
    vs.push_back(make<2, 32, 8, 3, 3, true>("T2 32x8 16B minb3"));
    vs.push_back(make<2, 32, 8, 3, 2, true>("T2 32x8 16B minb2"));
    vs.push_back(make<2, 32, 16, 3, 2, true>("T2 32x16 16B minb2"));
    vs.push_back(make<2, 32, 16, 3, 2>("T2 32x16 4B minb2"));
    vs.push_back(make<3, 32, 16, 3, 2>("T3 32x16 4B minb2"));
    vs.push_back(make<1, 32, 16, 4, 2, false, true>("T1 32x16 exact plane"));
    vs.push_back(make<2, 32, 16, 3, 2, false, true>("T2 32x16 exact plane"));
    vs.push_back(make<3, 32, 16, 3, 2, false, true>("T3 32x16 exact plane"));
    vs.push_back(make<1, 32, 8, 4, 3, false, false, true>("CPML T1 32x8 4B"));
    vs.push_back(make<1, 32, 8, 4, 2, false, false, true>("CPML T1 32x8 4B minb2"));
    vs.push_back(make<2, 32, 8, 3, 3, false, false, true>("CPML T2 32x8 4B NS3 minb3"));
    vs.push_back(make<2, 32, 8, 2, 3, false, false, true>("CPML T2 32x8 4B NS2 minb3"));
    vs.push_back(make<2, 32, 8, 3, 2, false, false, true>("CPML T2 32x8 4B NS3 minb2"));
    vs.push_back(make<2, 32, 16, 3, 2, false, false, true>("CPML T2 32x16 4B minb2"));
    const int zchunks[] = {128, 64, 32, 16};
    const int zc_only = env_int("ZC", 0, 128, 0);  // one z-chunk only (profiling); 0: all
    if (zc_only && (zc_only > dims[2] || (zc_only != 128 && zc_only != 64 && zc_only != 32 && zc_only != 16))) {
        fprintf(stderr, "tb-probe: ZC=%d: expected one of 128, 64, 32, 16, at most nz = %d\n", zc_only, dims[2]);
        return 2;
    }
    if (const char* only = getenv("ONLY")) {  // every name given must be a variant's
        std::string rest = std::string(only) + ",";
        for (size_t at; (at = rest.find(',')) != std::string::npos; rest.erase(0, at + 1)) {
            const std::string name = rest.substr(0, at);
            bool known = false;
            for (const Variant& v : vs) known = known || name == v.name;
            if (!known) {
                fprintf(stderr, "tb-probe: ONLY names no variant '%s' (names as printed in the first column)\n", name.c_str());
                return 2;
            }
        }
    }
    bool all_ok = true;
    int runs = 0;
    for (const Variant& v : vs) {
        if (v.v16 && pitch % 4 != 0) continue;  // 16-byte copies need aligned rows
        if (v.ex && (dims[0] > v.TX || dims[1] > v.TY)) continue;  // the plane must fit the tile
        if (v.pm != pml) continue;
        if (getenv("ONLY")) {  // comma-separated names to run (default: all)
            const std::string only = std::string(",") + getenv("ONLY") + ",";
            if (only.find(std::string(",") + v.name + ",") == std::string::npos) continue;
        }
        cudaFuncAttributes fa;
        CK(cudaFuncGetAttributes(&fa, v.kernel));
        int occ = 0;
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, v.kernel, v.TX * v.TY, v.smem));
        for (int zc : zchunks) {
            if (zc > dims[2]) continue;
            if (zc_only && zc != zc_only) continue;
            ++runs;
            const int chunks = (dims[2] + zc - 1) / zc;
            const int blocks = ((dims[0] + v.TX - 1) / v.TX) * ((dims[1] + v.TY - 1) / v.TY) * chunks;
            auto pass = [&](Fields& a, Fields& b) {
                v.kernel<<<blocks, v.TX * v.TY, v.smem>>>(a, b, K, zc);
                Fields t = a; a = b; b = t;
            };
            // Check: check_steps steps against the naive kernels, bit for bit.
            copy_fields(A, init, cells);
            copy_fields(B, init, cells);
            Fields a = A, b = B;
            for (int s = 0; s < check_steps; s += v.T) pass(a, b);
            CK(cudaGetLastError());
            CK(cudaDeviceSynchronize());
            const unsigned long long bad = mismatches(a, ref, cells);
            if (bad) all_ok = false;
            // Time.
            pass(a, b);
            CK(cudaEventRecord(e0));
            for (int s = 0; s < steps; s += v.T) pass(a, b);
            CK(cudaEventRecord(e1));
            CK(cudaEventSynchronize(e1));
            CK(cudaGetLastError());
            float ms;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            const double bpc = 51.0 / v.T;  // 24 B read, 24 written, 3 material bytes a pass
            const double gc = box * steps / (ms * 1e-3) / 1e9;
            printf("%-28s z %-4d %3d regs %6.1f KB smem %d blk/SM %5d blocks  %9.2f Gcells/s  (%.1f B/cell modelled: %.0f GB/s)  %s\n",
                   v.name, zc, fa.numRegs, v.smem / 1024.0, occ, blocks, gc, bpc, gc * bpc, bad ? "MISMATCH" : "bit-identical");
            if (bad) printf("   %llu values differ\n", bad);
        }
    }
    if (runs == 0) {  // e.g. ONLY named variants of the other mode (PML set or not)
        fprintf(stderr, "tb-probe: no variant ran: those named by ONLY are %s, or need a row pitch of a multiple of 4 (16B) or the plane in one tile (exact plane)\n",
                pml ? "without CPML (unset PML)" : "CPML variants (set PML=L)");
        return 2;
    }
    printf("tb-probe %s\n", all_ok ? "PASS: every fused variant bit-identical to the naive kernels" : "FAIL");
    return all_ok ? 0 : 1;
}
