// Batched TLM kernels: the 3D stub-loaded SCN (tlm_scn_*) and the 2D shunt
// node (tlm_shunt_*). The whole batch (one engine kind) advances together.
//
// Every kernel has a CPU twin of the same name in src/engine/tlm/scn.rs or
// src/engine/tlm/shunt2d.rs, and the float arithmetic is written in the same
// order (the host compiles with --fmad=false, so no multiply-add is
// contracted and node pulses agree bit for bit with the CPU engine; only the
// f64 sums of port signals, of the modal-end convolution and of the energy
// are added in another order).
//
// One step of a batch is three launches:
//   tlm_*_step    every ordinary node: gather the incident pulses from the
//                 neighbours' reflections of the last step (the connect step
//                 folded into the read, walls reflect a node's own pulse),
//                 scatter, write the reflections (ping-pong pools b -> nb);
//   tlm_*_ports   guide ends (convolution, one block each), lumped ports (one
//                 block each), source nodes: the special nodes, b -> nb;
//   tlm_*_sample  after the swap: one block per guide port sums V and I.
// tlm_*_energy sums the stored energy of the designs due for a check.

#include "tlm.cuh"

__device__ __forceinline__ int tlm_imin(int a, int b) { return a < b ? a : b; }

// Sum of one value per thread over the block (blockDim.x a power of two, at
// most TLM_PORT_THREADS or TLM_THREADS; `red` holds blockDim.x doubles).
// Every thread gets the sum.
__device__ __forceinline__ double tlm_block_sum(double x, double* red) {
    const int t = threadIdx.x;
    red[t] = x;
    __syncthreads();
    for (int h = blockDim.x / 2; h > 0; h /= 2) {
        if (t < h) red[t] += red[t + h];
        __syncthreads();
    }
    const double s = red[0];
    __syncthreads();
    return s;
}

// ---------------------------------------------------------------------------
// 3D SCN. Links 4*d + 2*side + pol (scn_node.rs):
//   E links  e0: 5 7 8 10   e1: 9 11 0 2   e2: 1 3 4 6
//   H links [n1 p1 n2 p2]  h0: 4 6 9 11  h1: 8 10 1 3  h2: 0 2 5 7
// Coefficients per kind (TLM_COEF3 floats): y[3] ky[3] z[3] kz[3] gface[6][2].

#define SCN_EMASK0 ((1u << 5) | (1u << 7) | (1u << 8) | (1u << 10))
#define SCN_EMASK1 ((1u << 9) | (1u << 11) | (1u << 0) | (1u << 2))
#define SCN_EMASK2 ((1u << 1) | (1u << 3) | (1u << 4) | (1u << 6))

// Incident pulses of a node from the reflections b of the last step; m: its
// face/short bits (0: no walls), k: its coefficients (read only at walls).
// Branch-free, so that a warp mixing wall and interior nodes issues each load
// once: a pulse from a neighbour is multiplied by 1.0f, which is exact (the
// CPU twin uses it as it is).
__device__ __forceinline__ void scn_gather(const float* __restrict__ b, long long L, long long g, const int st[3], unsigned m,
                                           const float* __restrict__ k, float a[12]) {
#pragma unroll
    for (int d = 0; d < 3; ++d) {
        const long long s = st[d];
#pragma unroll
        for (int pol = 0; pol < 2; ++pol) {
            const int ln = 4 * d + pol;
            const int lp = 4 * d + 2 + pol;
            const int fn = 2 * d;
            const int fp = 2 * d + 1;
            const bool wn = (m & (1u << fn)) != 0;
            const bool wp = (m & (1u << fp)) != 0;
            float gn = 1.0f;
            float gp = 1.0f;
            if (wn) gn = (m & (1u << (6 + fn))) ? -1.0f : k[12 + 2 * fn + pol];
            if (wp) gp = (m & (1u << (6 + fp))) ? -1.0f : k[12 + 2 * fp + pol];
            a[ln] = gn * b[wn ? ln * L + g : lp * L + g - s];
            a[lp] = gp * b[wp ? lp * L + g : ln * L + g + s];
        }
    }
}

// Interior node without walls (TLM_SPLIT only): every incident pulse comes from a neighbour.
__device__ __forceinline__ void scn_gather_plain(const float* __restrict__ b, long long L, long long g, const int st[3], float a[12]) {
#pragma unroll
    for (int d = 0; d < 3; ++d) {
        const long long s = st[d];
#pragma unroll
        for (int pol = 0; pol < 2; ++pol) {
            a[4 * d + pol] = b[(4 * d + 2 + pol) * L + g - s];
            a[4 * d + 2 + pol] = b[(4 * d + pol) * L + g + s];
        }
    }
}

// scn_node.rs scatter_plain (seed eq. 2.26).
__device__ __forceinline__ void scn_scatter_plain(const float a[12], float b[12]) {
    const float v0 = 0.5f * (a[5] + a[7] + a[8] + a[10]);
    const float v1 = 0.5f * (a[9] + a[11] + a[0] + a[2]);
    const float v2 = 0.5f * (a[1] + a[3] + a[4] + a[6]);
    {
        const float i = 0.5f * ((a[4] - a[6]) - (a[9] - a[11]));
        b[4] = v2 - i - a[6];
        b[6] = v2 + i - a[4];
        b[9] = v1 + i - a[11];
        b[11] = v1 - i - a[9];
    }
    {
        const float i = 0.5f * ((a[8] - a[10]) - (a[1] - a[3]));
        b[8] = v0 - i - a[10];
        b[10] = v0 + i - a[8];
        b[1] = v2 + i - a[3];
        b[3] = v2 - i - a[1];
    }
    {
        const float i = 0.5f * ((a[0] - a[2]) - (a[5] - a[7]));
        b[0] = v1 - i - a[2];
        b[2] = v1 + i - a[0];
        b[5] = v0 + i - a[7];
        b[7] = v0 - i - a[5];
    }
}

// scn_node.rs scatter_loaded: stubs c (capacitive, per E axis) and l
// (inductive, per H axis) are replaced by their next incident pulses; inj[e]
// is Z0 I drawn from E_e; v gets the node voltages.
__device__ __forceinline__ void scn_scatter_loaded(const float a[12], float b[12], float c[3], float l[3], const float* __restrict__ k,
                                                   const float inj[3], float v[3]) {
    {
        const float s = a[5] + a[7] + a[8] + a[10];
        v[0] = (2.0f * (s + k[0] * c[0]) - inj[0]) * k[3];
        c[0] = v[0] - c[0];
    }
    {
        const float s = a[9] + a[11] + a[0] + a[2];
        v[1] = (2.0f * (s + k[1] * c[1]) - inj[1]) * k[4];
        c[1] = v[1] - c[1];
    }
    {
        const float s = a[1] + a[3] + a[4] + a[6];
        v[2] = (2.0f * (s + k[2] * c[2]) - inj[2]) * k[5];
        c[2] = v[2] - c[2];
    }
    {
        const float i = 2.0f * ((a[4] - a[6]) - (a[9] - a[11]) + l[0]) * k[9];
        l[0] = k[6] * i - l[0];
        b[4] = v[2] - i - a[6];
        b[6] = v[2] + i - a[4];
        b[9] = v[1] + i - a[11];
        b[11] = v[1] - i - a[9];
    }
    {
        const float i = 2.0f * ((a[8] - a[10]) - (a[1] - a[3]) + l[1]) * k[10];
        l[1] = k[7] * i - l[1];
        b[8] = v[0] - i - a[10];
        b[10] = v[0] + i - a[8];
        b[1] = v[2] + i - a[3];
        b[3] = v[2] - i - a[1];
    }
    {
        const float i = 2.0f * ((a[0] - a[2]) - (a[5] - a[7]) + l[2]) * k[11];
        l[2] = k[8] * i - l[2];
        b[0] = v[1] - i - a[2];
        b[2] = v[1] + i - a[0];
        b[5] = v[0] + i - a[7];
        b[7] = v[0] - i - a[5];
    }
}

// One node of the step kernel (scn.rs sweep_plane).
__device__ __forceinline__ void scn_node(const TlmPtrs& P, const TlmDesign* D, const int st[3], int i) {
    const float* __restrict__ b = P.b;
    float* __restrict__ nb = P.nb;
    const long long L = P.L;
    const long long g = D->off + i;
    const unsigned m = P.plain[g >> 5] ? 0u : P.meta[g];
    if (m & (TLM_DEAD | TLM_SPECIAL)) return;
    float a[12];
    float o[12];
    const unsigned kind = m >> TLM_KIND_SHIFT;
    const float* __restrict__ k = P.coef + (long long)(D->coef_off + (int)kind) * TLM_COEF3;
#if TLM_SPLIT
    if (m == 0) {
        scn_gather_plain(b, L, g, st, a);
    } else
#endif
    scn_gather(b, L, g, st, m, k, a);
    if (kind == 0 || !D->loaded) {
        scn_scatter_plain(a, o);
    } else {
        float* __restrict__ sp = P.stub + D->soff + i;
        const long long LS = P.LS;
        float c[3] = {sp[0], sp[LS], sp[2 * LS]};
        float l[3] = {sp[3 * LS], sp[4 * LS], sp[5 * LS]};
        const float inj[3] = {0.0f, 0.0f, 0.0f};
        float v[3];
        scn_scatter_loaded(a, o, c, l, k, inj, v);
        sp[0] = c[0];
        sp[LS] = c[1];
        sp[2 * LS] = c[2];
        sp[3 * LS] = l[0];
        sp[4 * LS] = l[1];
        sp[5 * LS] = l[2];
    }
#pragma unroll
    for (int q = 0; q < 12; ++q) nb[q * L + g] = o[q];
}

extern "C" __global__ void TLM_NODE_BOUNDS tlm_scn_step(TlmPtrs P, int a0, int a1) {
    const int d = P.blocks[2 * blockIdx.x];
    const int lb = P.blocks[2 * blockIdx.x + 1];
    const TlmDesign* D = P.designs + d;
    const int nodes = D->nodes;
    const int st[3] = {D->stride[0], D->stride[1], D->stride[2]};
#pragma unroll
    for (int r = 0; r < TLM_NPT; ++r) {
        const int i = (lb * TLM_NPT + r) * TLM_THREADS + (int)threadIdx.x;
        if (i < nodes) scn_node(P, D, st, i);
    }
}

// One special node (scn.rs Mesh::update_special): gather, replace incident
// link over_link by over_val, add `add` to the links polarised along e,
// scatter (loaded formula) with Z0 I = inj drawn from E_e. v: node voltages.
__device__ void scn_special(const TlmPtrs& P, const TlmDesign* D, int node, int e, float add, float inj, int over_link, float over_val,
                            float v[3]) {
    const long long L = P.L;
    const long long g = D->off + node;
    const unsigned m = P.meta[g] & ~TLM_SPECIAL;
    const unsigned kind = m >> TLM_KIND_SHIFT;
    const float* __restrict__ k = P.coef + (long long)(D->coef_off + (int)kind) * TLM_COEF3;
    const int st[3] = {D->stride[0], D->stride[1], D->stride[2]};
    float a[12];
    scn_gather(P.b, L, g, st, m, k, a);
#pragma unroll
    for (int q = 0; q < 12; ++q)
        if (q == over_link) a[q] = over_val;
    const unsigned em = e == 0 ? SCN_EMASK0 : (e == 1 ? SCN_EMASK1 : SCN_EMASK2);
#pragma unroll
    for (int q = 0; q < 12; ++q)
        if (em & (1u << q)) a[q] += add;
    float c[3] = {0.0f, 0.0f, 0.0f};
    float l[3] = {0.0f, 0.0f, 0.0f};
    float* sp = D->loaded ? P.stub + D->soff + node : (float*)0;
    const long long LS = P.LS;
    if (sp) {
        c[0] = sp[0];
        c[1] = sp[LS];
        c[2] = sp[2 * LS];
        l[0] = sp[3 * LS];
        l[1] = sp[4 * LS];
        l[2] = sp[5 * LS];
    }
    const float injv[3] = {e == 0 ? inj : 0.0f, e == 1 ? inj : 0.0f, e == 2 ? inj : 0.0f};
    float o[12];
    scn_scatter_loaded(a, o, c, l, k, injv, v);
#pragma unroll
    for (int q = 0; q < 12; ++q) P.nb[q * L + g] = o[q];
    if (sp) {
        sp[0] = c[0];
        sp[LS] = c[1];
        sp[2 * LS] = c[2];
        sp[3 * LS] = l[0];
        sp[4 * LS] = l[1];
        sp[5 * LS] = l[2];
    }
}

// Sum of the four incident pulses polarised along e (scn_node.rs shunt_sum, f32 part).
__device__ __forceinline__ float scn_esum(const float a[12], int e) {
    if (e == 0) return a[5] + a[7] + a[8] + a[10];
    if (e == 1) return a[9] + a[11] + a[0] + a[2];
    return a[1] + a[3] + a[4] + a[6];
}

// ---------------------------------------------------------------------------
// 2D shunt node. Links 2*m + side (m: mesh axis p or q, side 0 low, 1 high).
// Coefficients per kind (TLM_COEF2 floats): y ky z[2] kz[2] gface[4] pad pad.

// Branch-free like scn_gather: a neighbour's pulse, or at a face (bit q) the
// pulse the inward neighbour reflects on link q (PMC mirror, bit 6 + q), or the
// node's own pulse times the face's reflection k[6 + q] (times 1.0f where no
// reflection is applied, which is exact).
__device__ __forceinline__ void shunt_gather(const float* __restrict__ b, long long L, long long g, const int st[3], unsigned m,
                                             const float* __restrict__ k, float a[4]) {
#pragma unroll
    for (int l = 0; l < 2; ++l) {
        const long long s = st[l];
#pragma unroll
        for (int side = 0; side < 2; ++side) {
            const int q = 2 * l + side;
            const bool w = (m & (1u << q)) != 0;
            const bool mir = (m & (1u << (6 + q))) != 0;
            const float gw = (w && !mir) ? k[6 + q] : 1.0f;
            const long long out = side == 0 ? -s : s;
            const long long at = w ? q * L + g + (mir ? -out : 0) : (q ^ 1) * L + g + out;
            a[q] = gw * b[at];
        }
    }
}

__device__ __forceinline__ void shunt_gather_plain(const float* __restrict__ b, long long L, long long g, const int st[3], float a[4]) {
#pragma unroll
    for (int l = 0; l < 2; ++l) {
        const long long s = st[l];
        a[2 * l] = b[(2 * l + 1) * L + g - s];
        a[2 * l + 1] = b[(2 * l) * L + g + s];
    }
}

// shunt2d.rs: Gamma = -1/2, T = 1/2.
__device__ __forceinline__ void shunt_scatter_plain(const float a[4], float b[4]) {
    const float v = 0.5f * (a[0] + a[1] + a[2] + a[3]);
#pragma unroll
    for (int q = 0; q < 4; ++q) b[q] = v - a[q];
}

// The stub states of a 2D node from the pool (sp: the node's first, LS apart):
// a shorted node's four half-link states, else the capacitive and the two
// inductive (s[3] unused). The on-chip kernel keeps the same layout in registers.
__device__ __forceinline__ void shunt_stub_states(const float* sp, long long LS, bool shorted, float s[4]) {
    const int f = shorted ? 3 : 0;
    const int n = shorted ? 4 : 3;
#pragma unroll
    for (int q = 0; q < 4; ++q) s[q] = q < n ? sp[(f + q) * LS] : 0.0f;
}

// Stored energy of a 2D node's stubs s (shunt_stub_states' layout) added to acc;
// cpu twin: shunt2d.rs energy. Shorted: the half-link stubs (z/2 each), summed
// apart and then added; else the capacitive stub, then the two inductive.
__device__ __forceinline__ double shunt_stub_energy(double acc, const float* k, const float s[4], bool shorted) {
    if (shorted) {
        double e = 0.0;
        for (int q = 0; q < 4; ++q) {
            if (k[2 + q / 2] > 0.0f) e += (double)(s[q] * s[q] / (0.5f * k[2 + q / 2]));
        }
        return acc + e;
    }
    acc += (double)(k[0] * s[0] * s[0]);
    for (int m = 0; m < 2; ++m) {
        if (k[2 + m] > 0.0f) acc += (double)(s[1 + m] * s[1 + m] / k[2 + m]);
    }
    return acc;
}

// shunt2d.rs short_scatter: a shorted node (V = 0); half-link q ends in the
// short through half the series stub of its line pair, state s[q].
__device__ __forceinline__ void shunt_scatter_short(const float a[4], float b[4], float s[4], const float* __restrict__ k) {
#pragma unroll
    for (int q = 0; q < 4; ++q) {
        const float zs = 0.5f * k[2 + q / 2];
        if (zs == 0.0f) {
            b[q] = -a[q];
        } else {
            const float i = 2.0f * (a[q] + s[q]) / (1.0f + zs);
            b[q] = a[q] - i;
            s[q] = zs * i - s[q];
        }
    }
}

// shunt2d.rs scatter: returns V.
__device__ __forceinline__ float shunt_scatter(const float a[4], float b[4], float* c, float l[2], const float* __restrict__ k, float inj) {
    const float v = (2.0f * (a[0] + a[1] + a[2] + a[3] + k[0] * *c) - inj) * k[1];
    *c = v - *c;
#pragma unroll
    for (int m = 0; m < 2; ++m) {
        const float i = 2.0f * (a[2 * m] - a[2 * m + 1] + l[m]) * k[4 + m];
        l[m] = k[2 + m] * i - l[m];
        b[2 * m] = v - i - a[2 * m + 1];
        b[2 * m + 1] = v + i - a[2 * m];
    }
    return v;
}

__device__ __forceinline__ void shunt_node(const TlmPtrs& P, const TlmDesign* D, const int st[3], int i) {
    const float* __restrict__ b = P.b;
    float* __restrict__ nb = P.nb;
    const long long L = P.L;
    const long long g = D->off + i;
    const unsigned m = P.plain[g >> 5] ? 0u : P.meta[g];
    if (m & TLM_SPECIAL) return;
    float a[4];
    float o[4];
    const unsigned kind = m >> TLM_KIND_SHIFT;
    const float* __restrict__ k = P.coef + (long long)(D->coef_off + (int)kind) * TLM_COEF2;
#if TLM_SPLIT
    if (m == 0) {
        shunt_gather_plain(b, L, g, st, a);
    } else
#endif
    shunt_gather(b, L, g, st, m, k, a);
    if ((m & TLM_SHORT) && D->loaded) {
        // A shorted node with stubs: state in stub arrays 3..7.
        float* __restrict__ sp = P.stub + D->soff + i;
        const long long LS = P.LS;
        float s[4];
#pragma unroll
        for (int q = 0; q < 4; ++q) s[q] = sp[(3 + q) * LS];
        shunt_scatter_short(a, o, s, k);
#pragma unroll
        for (int q = 0; q < 4; ++q) sp[(3 + q) * LS] = s[q];
    } else if (m & TLM_SHORT) {
        // Not loaded (no stubs anywhere): every incident pulse returns inverted.
#pragma unroll
        for (int q = 0; q < 4; ++q) o[q] = -a[q];
    } else if (kind == 0 || !D->loaded) {
        shunt_scatter_plain(a, o);
    } else {
        float* __restrict__ sp = P.stub + D->soff + i;
        const long long LS = P.LS;
        float c = sp[0];
        float l[2] = {sp[LS], sp[2 * LS]};
        shunt_scatter(a, o, &c, l, k, 0.0f);
        sp[0] = c;
        sp[LS] = l[0];
        sp[2 * LS] = l[1];
    }
#pragma unroll
    for (int q = 0; q < 4; ++q) nb[q * L + g] = o[q];
}

extern "C" __global__ void TLM_NODE_BOUNDS tlm_shunt_step(TlmPtrs P, int a0, int a1) {
    const int d = P.blocks[2 * blockIdx.x];
    const int lb = P.blocks[2 * blockIdx.x + 1];
    const TlmDesign* D = P.designs + d;
    const int nodes = D->nodes;
    const int st[3] = {D->stride[0], D->stride[1], D->stride[2]};
#pragma unroll
    for (int r = 0; r < TLM_NPT; ++r) {
        const int i = (lb * TLM_NPT + r) * TLM_THREADS + (int)threadIdx.x;
        if (i < nodes) shunt_node(P, D, st, i);
    }
}

// shunt2d.rs Mesh::update_special on stub states s (capacitive, the two
// inductive; in and out), g the node's pool index: returns V. shunt_special
// brings the states from the pool; the on-chip kernel keeps them in registers.
__device__ __forceinline__ float shunt_special_core(const TlmPtrs& P, const TlmDesign* D, const int st[3], long long g, float add, float inj, int over_link, float over_val, float s[3]) {
    const long long L = P.L;
    const unsigned m = P.meta[g] & ~TLM_SPECIAL;
    const unsigned kind = m >> TLM_KIND_SHIFT;
    const float* __restrict__ k = P.coef + (long long)(D->coef_off + (int)kind) * TLM_COEF2;
    float a[4];
    shunt_gather(P.b, L, g, st, m, k, a);
#pragma unroll
    for (int q = 0; q < 4; ++q)
        if (q == over_link) a[q] = over_val;
#pragma unroll
    for (int q = 0; q < 4; ++q) a[q] += add;
    float c = s[0];
    float l[2] = {s[1], s[2]};
    float o[4];
    const float v = shunt_scatter(a, o, &c, l, k, inj);
#pragma unroll
    for (int q = 0; q < 4; ++q) P.nb[q * L + g] = o[q];
    s[0] = c;
    s[1] = l[0];
    s[2] = l[1];
    return v;
}

// shunt2d.rs Mesh::update_special with the stub states in the pool (zero
// without stubs): returns V.
__device__ float shunt_special(const TlmPtrs& P, const TlmDesign* D, int node, float add, float inj, int over_link, float over_val) {
    const int st[3] = {D->stride[0], D->stride[1], D->stride[2]};
    float s[3] = {0.0f, 0.0f, 0.0f};
    float* sp = D->loaded ? P.stub + D->soff + node : (float*)0;
    const long long LS = P.LS;
    if (sp) {
        s[0] = sp[0];
        s[1] = sp[LS];
        s[2] = sp[2 * LS];
    }
    const float v = shunt_special_core(P, D, st, D->off + node, add, inj, over_link, over_val, s);
    if (sp) {
        sp[0] = s[0];
        sp[LS] = s[1];
        sp[2 * LS] = s[2];
    }
    return v;
}

// ---------------------------------------------------------------------------
// Port kernels, shared by both nodes (DIM3 picks the node).

// A guide end (common.rs ModalEnd::reflect), then the special nodes it overrides.
template <bool DIM3>
__device__ void tlm_end_block(const TlmPtrs& P, int id, int step, int col, double* red) {
    const TlmEnd E = P.ends[id];
    const TlmDesign* D = P.designs + E.design;
    const long long L = P.L;
    const float* lb = P.b + E.link * L + D->off;
    double acc = 0.0;
    for (int s = threadIdx.x; s < E.slots; s += blockDim.x) acc += (double)lb[P.end_node[E.slot_off + s]] * P.end_phi[E.slot_off + s];
    const double bm = tlm_block_sum(acc, red) / E.phi2;
    const int K = tlm_imin(step, E.kern_len);
    acc = 0.0;
    const double* kern = P.end_kern + E.kern_off;
    const double* hist = P.end_hist + E.hist_off;
    for (int j = threadIdx.x; j < K; j += blockDim.x) acc += kern[j] * hist[step - 1 - j];
    const double c = tlm_block_sum(acc, red);
    const double am = (bm * (E.rho - 1.0) - E.eta_l * c) / (1.0 + E.rho);
    if (threadIdx.x == 0) P.end_hist[E.hist_off + step] = (bm - am) / E.z0;
    for (int s = threadIdx.x; s < E.slots; s += blockDim.x) {
        const double bi = (double)lb[P.end_node[E.slot_off + s]];
        const double p = P.end_phi[E.slot_off + s];
        P.end_a[E.slot_off + s] = (float)(E.g * (bi - bm * p) + am * p);
    }
    __syncthreads();
    const float sv = (float)P.gval[E.design * P.gstride + col];
    for (int q = threadIdx.x; q < E.spec_n; q += blockDim.x) {
        const TlmSpecial S = P.specials[E.spec_off + q];
        const float over = P.end_a[S.over_slot];
        if (DIM3) {
            float v[3];
            scn_special(P, D, S.node, D->src_e, sv * S.w, 0.0f, S.over_link, over, v);
        } else {
            shunt_special(P, D, S.node, sv * S.w, 0.0f, S.over_link, over);
        }
    }
}

// A lumped port (scn.rs lumped_step; shunt2d.rs tlm_shunt_ports).
template <bool DIM3>
__device__ void tlm_lumped_block(const TlmPtrs& P, int id, int col, double* red) {
    const TlmLumped Q = P.lumped[id];
    const TlmDesign* D = P.designs + Q.design;
    const long long L = P.L;
    const int st[3] = {D->stride[0], D->stride[1], D->stride[2]};
    double s2k = 0.0;
    double sk = 0.0;
    double il = 0.0;  // 2D: the current through the node's links at their midpoints
    for (int q = threadIdx.x; q < Q.nodes; q += blockDim.x) {
        const int node = P.lumped_node[Q.node_off + q];
        const long long g = D->off + node;
        const unsigned m = P.meta[g] & ~TLM_SPECIAL;
        const unsigned kind = m >> TLM_KIND_SHIFT;
        if (DIM3) {
            const float* k = P.coef + (long long)(D->coef_off + (int)kind) * TLM_COEF3;
            float a[12];
            scn_gather(P.b, L, g, st, m, k, a);
            const float c = D->loaded ? P.stub[Q.axis * P.LS + D->soff + node] : 0.0f;
            const double ky = (double)k[3 + Q.axis];
            const double ss = (double)scn_esum(a, Q.axis) + (double)(k[Q.axis] * c);
            s2k += 2.0 * ss * ky;
            sk += ky;
        } else {
            const float* k = P.coef + (long long)(D->coef_off + (int)kind) * TLM_COEF2;
            float a[4];
            shunt_gather(P.b, L, g, st, m, k, a);
            const float c = D->loaded ? P.stub[D->soff + node] : 0.0f;
            const double ky = (double)k[1];
            s2k += 2.0 * ((double)(a[0] + a[1] + a[2] + a[3]) + (double)(k[0] * c)) * ky;
            sk += ky;
            // shunt2d.rs tlm_shunt_ports: sum over the links of (incident - last reflected).
#pragma unroll
            for (int r = 0; r < 4; ++r) il += (double)(a[r] - P.b[r * L + g]);
        }
    }
    s2k = tlm_block_sum(s2k, red);
    sk = tlm_block_sum(sk, red);
    if (!DIM3) il = tlm_block_sum(il, red) / Q.z;
    const double vs = Q.drive ? P.gval[Q.design * P.gstride + col] : 0.0;
    const double i = (vs + s2k) / (Q.r + Q.z * sk);
    const float inj = (float)(Q.z * i);
    double v = 0.0;
    for (int q = threadIdx.x; q < Q.nodes; q += blockDim.x) {
        const int node = P.lumped_node[Q.node_off + q];
        if (DIM3) {
            float vn[3];
            scn_special(P, D, node, Q.axis, 0.0f, inj, -1, 0.0f, vn);
            v -= (double)vn[Q.axis];
        } else {
            v -= (double)shunt_special(P, D, node, 0.0f, inj, -1, 0.0f);
        }
    }
    v = tlm_block_sum(v, red);
    if (threadIdx.x == 0) {
        P.tv[Q.slot * P.tstride + col] = v;
        P.ti[Q.slot * P.tstride + col] = DIM3 ? i : il;
    }
}

// Source nodes of driven guide ports (no override): one thread each.
template <bool DIM3>
__device__ void tlm_sources_block(const TlmPtrs& P, int first, int count, int col) {
    if ((int)threadIdx.x >= count) return;
    const TlmSpecial S = P.specials[first + threadIdx.x];
    const TlmDesign* D = P.designs + S.design;
    const float sv = (float)P.gval[S.design * P.gstride + col];
    if (DIM3) {
        float v[3];
        scn_special(P, D, S.node, D->src_e, sv * S.w, 0.0f, -1, 0.0f, v);
    } else {
        shunt_special(P, D, S.node, sv * S.w, 0.0f, -1, 0.0f);
    }
}

template <bool DIM3>
__device__ void tlm_ports(const TlmPtrs& P, int step, int col) {
    __shared__ double red[TLM_PORT_THREADS];
    const int role = P.jobs[3 * blockIdx.x];
    const int index = P.jobs[3 * blockIdx.x + 1];
    const int count = P.jobs[3 * blockIdx.x + 2];
    if (role == 0) {
        tlm_end_block<DIM3>(P, index, step, col, red);
    } else if (role == 1) {
        tlm_lumped_block<DIM3>(P, index, col, red);
    } else {
        tlm_sources_block<DIM3>(P, index, count, col);
    }
}

// a0: the step within the chunk (P.step0[0] + a0 indexes the guide ends' current
// history), a1: column of the chunk.
extern "C" __global__ void __launch_bounds__(TLM_PORT_THREADS) tlm_scn_ports(TlmPtrs P, int a0, int a1) { tlm_ports<true>(P, P.step0[0] + a0, a1); }
extern "C" __global__ void __launch_bounds__(TLM_PORT_THREADS) tlm_shunt_ports(TlmPtrs P, int a0, int a1) { tlm_ports<false>(P, P.step0[0] + a0, a1); }

// One guide port per block, after the swap (P.b: the pulses just emitted, P.nb:
// the last step's). 3D: scn.rs sample_wg, from the pulses crossing the face.
// 2D: shunt2d.rs sample_wg, on the node layer of the reference plane.
template <bool DIM3>
__device__ void tlm_sample(const TlmPtrs& P, int col) {
    __shared__ double red[TLM_PORT_THREADS];
    const TlmWg W = P.wgs[P.wg_list[blockIdx.x]];
    const TlmDesign* D = P.designs + W.design;
    const float* up_l = P.b + W.link_up * P.L + D->off;
    const float* dn_l = P.b + W.link_down * P.L + D->off;
    double v = 0.0;
    double i = 0.0;
    for (int t = threadIdx.x; t < W.terms; t += blockDim.x) {
        const double w = P.wg_w[W.term_off + t];
        if (DIM3) {
            const double up = (double)up_l[P.wg_lo[W.term_off + t]];
            const double down = (double)dn_l[P.wg_hi[W.term_off + t]];
            v += (up + down) * w * W.dw;
            i += (up - down) / W.z * w * W.de;
        } else {
            const int node = P.wg_lo[W.term_off + t];
            const long long L = P.L;
            const long long g = D->off + node;
            const unsigned m = P.meta[g] & ~TLM_SPECIAL;
            const unsigned kind = m >> TLM_KIND_SHIFT;
            const float* k = P.coef + (long long)(D->coef_off + (int)kind) * TLM_COEF2;
            const int st[3] = {D->stride[0], D->stride[1], D->stride[2]};
            float a[4];
            shunt_gather(P.nb, L, g, st, m, k, a);
            const int qn = W.link_down;
            const int qp = W.link_up;
            const double an = (double)a[qn];
            const double ap = (double)a[qp];
            const double bn = (double)P.b[qn * L + g];
            const double bp = (double)P.b[qp * L + g];
            const double bn0 = (double)P.nb[qn * L + g];
            const double bp0 = (double)P.nb[qp * L + g];
            v += 0.5 * ((an + bn) + (ap + bp)) * w * W.dw;
            i += 0.5 * ((an - bn0) + (bp0 - ap)) / W.z * w * W.de;
        }
    }
    v = tlm_block_sum(v, red);
    i = tlm_block_sum(i, red);
    if (threadIdx.x == 0) {
        P.tv[W.slot * P.tstride + col] = W.norm * v;
        P.ti[W.slot * P.tstride + col] = W.norm * W.inward * i;
    }
}

extern "C" __global__ void __launch_bounds__(TLM_PORT_THREADS) tlm_scn_sample(TlmPtrs P, int a0, int a1) { tlm_sample<true>(P, a1); }
extern "C" __global__ void __launch_bounds__(TLM_PORT_THREADS) tlm_shunt_sample(TlmPtrs P, int a0, int a1) { tlm_sample<false>(P, a1); }

// Stored energy of the designs due for a check (scn.rs tlm_scn_energy,
// shunt2d.rs tlm_shunt_energy): pulses squared plus stub energies, per design.
template <bool DIM3>
__device__ void tlm_energy(const TlmPtrs& P) {
    __shared__ double red[TLM_THREADS];
    const int d = P.blocks[2 * blockIdx.x];
    const int lb = P.blocks[2 * blockIdx.x + 1];
    if (!P.due[d]) return;  // uniform over the block
    const TlmDesign* D = P.designs + d;
    const int links = DIM3 ? 12 : 4;
    double acc = 0.0;
    for (int r = 0; r < TLM_NPT; ++r) {
        const int i = (lb * TLM_NPT + r) * TLM_THREADS + (int)threadIdx.x;
        if (i >= D->nodes) continue;
        const long long g = D->off + i;
        for (int q = 0; q < links; ++q) {
            const double x = (double)P.b[q * P.L + g];
            acc += x * x;
        }
        if (D->loaded) {
            const unsigned kind = P.meta[g] >> TLM_KIND_SHIFT;
            const float* sp = P.stub + D->soff + i;
            const long long LS = P.LS;
            if (DIM3) {
                const float* k = P.coef + (long long)(D->coef_off + (int)kind) * TLM_COEF3;
                for (int e = 0; e < 3; ++e) {
                    const float c = sp[e * LS];
                    const float l = sp[(3 + e) * LS];
                    acc += (double)(k[e] * c * c);
                    if (k[6 + e] > 0.0f) acc += (double)(l * l / k[6 + e]);
                }
            } else {
                const float* k = P.coef + (long long)(D->coef_off + (int)kind) * TLM_COEF2;
                const bool sh = (P.meta[g] & TLM_SHORT) != 0;
                float st[4];
                shunt_stub_states(sp, LS, sh, st);
                acc = shunt_stub_energy(acc, k, st, sh);
            }
        }
    }
    const double s = tlm_block_sum(acc, red);
    if (threadIdx.x == 0) atomicAdd(P.energy + d, s);
}

extern "C" __global__ void TLM_NODE_BOUNDS tlm_scn_energy(TlmPtrs P, int a0, int a1) { tlm_energy<true>(P); }
extern "C" __global__ void TLM_NODE_BOUNDS tlm_shunt_energy(TlmPtrs P, int a0, int a1) { tlm_energy<false>(P); }
