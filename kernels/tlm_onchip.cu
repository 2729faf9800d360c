// On-chip path of the 2D shunt-node TLM: one thread block holds one whole
// design's link pulses (both step parities) in shared memory and runs a chunk
// of the stepping loop, one or several energy checks long, in one launch:
// node scatter, guide-end terminations, lumped ports, sources, guide-port
// sampling and the energy checks all inside the loop. Only the port samples
// (per step), the energies (per check), the guide ends' current history and
// the pulses at the chunk end go through global memory. For the GA's 2D iris
// filters (a few thousand nodes, thousands of steps), which the streaming
// kernels of tlm.cu run at launch latency (three launches a step).
//
// CPU twin: src/engine/tlm/shunt2d_onchip.rs tlm_shunt_onchip (tlm_shunt_step
// + tlm_shunt_ports + swap + tlm_shunt_sample per step, tlm_shunt_energy at
// each check). The
// per-node arithmetic is tlm.cu's (shunt_node, shunt_special: the same
// functions over block-local pointers), so the pulses are bit for bit the CPU
// engine's; the f64 sums (mode amplitude, convolution, port signals, energy)
// are added in this kernel's order (rounding only).
//
// Shared memory of a block: the pulses of both parities (4 links x nl each,
// nl: the nodes rounded up to whole warps), the stubs where they fit (7 x nl),
// the design's meta words (nl), its coefficient kinds (TLM_COEF2 floats each)
// and its plain flags (nl / 32 bytes), the design's guide ends and guide
// ports (static). Stubs that do not fit (the iris filter's: all its nodes are
// loaded) stay in registers instead: a thread's first TLM_OC_R ordinary nodes
// and its first special node keep their stub states there for the launch, so
// only the rest (nodes past R x threads, specials past one a thread, lumped
// ports) read and write the pool.
//
// Work of a step, four barriers (two more at an energy check, three with
// register stubs):
//   1. every thread: its share of the ordinary nodes (b -> nb) and of the
//      terms of the sums that read only b: each guide end's mode amplitude and
//      convolution, each lumped port's series-circuit sums; the sums reduced;
//   2. every thread: its share of the special nodes (guide-end faces with
//      their returning pulse and sources, one a thread across the warps;
//      lumped-port nodes) and, from b and nb,
//      of the guide ports' sample terms (behind one more barrier where a
//      sample node is special); the sums reduced, thread 0 stores the samples.
// A sum that fits one warp (a guide end's mode amplitude, a guide port's
// sample) runs on its own warp (oc_base), and warps without terms of a sum
// skip its shuffles (oc_put): the totals are the same.
// Profile (Nsight Compute, one launch, the 2D iris filter at 1,024 threads,
// H100): ~44k warp instructions a step at ~2.5 of 4 IPC, a quarter of the
// stall samples at the reductions' barriers (docs/BENCHMARKS.md).
// The host (src/engine/cuda/tlm/onchip.rs) plans which designs fit and
// computes the same shared-memory size.

#include "tlm.cu"

// Threads per block (a power of two, 64..1024).
#ifndef TLM_OC_NT
#define TLM_OC_NT 512
#endif
#define TLM_OC_NW (TLM_OC_NT / 32)
// Sums one reduction may carry (onchip.rs MAX_SUMS).
#define TLM_OC_MAXV 16
// Words per design of the on-chip table (onchip.rs WORDS):
// stubs on chip, first end, ends, first lumped port, lumped ports, first
// guide port, guide ports, first source, sources, a sample node is special,
// coefficient kinds.
#define TLM_OC_WORDS 11
// History terms of the guide ends' convolution a thread loads at once (half
// of them j's for each of two ends, with their kernel values): loads in flight together.
#define TLM_OC_CONV 8
// Nodes a thread keeps the stub states of in registers across the steps of a
// launch (4 a node: capacitive and the two inductive of a loaded node, or the
// four half-link states of a shorted one), when its design's stubs stay in the
// pool: its ordinary nodes t + r * TLM_OC_NT, r < TLM_OC_R; the rest (special
// nodes, nodes past R * TLM_OC_NT) read and write the pool.
#ifndef TLM_OC_R
#define TLM_OC_R (TLM_OC_NT >= 1024 ? 3 : 5120 / TLM_OC_NT)
#endif

#ifdef EMV_EMU
#define TLM_OC_SMEM float* smem = (float*)emu_dyn_smem();
#else
#define TLM_OC_SMEM                                      \
    extern __shared__ __align__(16) float tlm_oc_smem[]; \
    float* smem = tlm_oc_smem;
#endif

// Sum over the warp; lane 0 gets the total (every thread of the block calls it).
__device__ __forceinline__ double oc_warp_sum(double x) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) x += __shfl_down_sync(0xffffffffu, x, o);
    return x;
}

// Thread's partial x of sum v: its warp's total into red[v][warp]. Only
// threads lo..hi-1 hold terms of the sum: a warp outside them stores its
// total, 0.0 (the sum of its zero partials), without the shuffles. (The
// emulation's shuffle is block-wide: there every warp shuffles.)
__device__ __forceinline__ void oc_put(double x, int v, double* red, int lo, int hi) {
#ifndef EMV_EMU
    const int w0 = (int)(threadIdx.x & ~31u);
    if (w0 >= hi || w0 + 32 <= lo) {
        if ((threadIdx.x & 31) == 0) red[v * TLM_OC_NW + (threadIdx.x >> 5)] = 0.0;
        return;
    }
#endif
    x = oc_warp_sum(x);
    if ((threadIdx.x & 31) == 0) red[v * TLM_OC_NW + (threadIdx.x >> 5)] = x;
}

// After oc_put of sums 0..n-1 by every thread: their totals into out[]
// (visible to all threads on return). Two barriers.
__device__ __forceinline__ void oc_reduce(int n, double* red, double* out) {
    __syncthreads();
    const int w = threadIdx.x >> 5;
    const int lane = threadIdx.x & 31;
    for (int v0 = 0; v0 < n; v0 += TLM_OC_NW) {
        const int v = v0 + w;
        double x = (v < n && lane < TLM_OC_NW) ? red[v * TLM_OC_NW + lane] : 0.0;
        x = oc_warp_sum(x);
        if (lane == 0 && v < n) out[v] = x;
    }
    __syncthreads();
}

// The convolution sums of two guide ends over one kernel table (tlm.cu
// tlm_end_block: sum_j kern[j] hist[step - 1 - j], j < K; a design's ends
// share the table when their cut-off and run length agree; an end alone
// passes its history twice): each kernel value loaded once, the thread's
// terms TLM_OC_CONV / 2 j at a time so that their loads overlap. This sum
// streams the histories and the table from global memory every step (O(step)
// bytes): with a population running, it is the step's bulk.
__device__ __forceinline__ void oc_conv2(const double* __restrict__ kern, const double* __restrict__ h0, const double* __restrict__ h1, int step, int K, double& c0, double& c1) {
    c0 = 0.0;
    c1 = 0.0;
    int j = threadIdx.x;
    constexpr int U = TLM_OC_CONV / 2;
    for (; j + (U - 1) * TLM_OC_NT < K; j += U * TLM_OC_NT) {
        double kk[U];
        double a[U];
        double b[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            kk[u] = kern[j + u * TLM_OC_NT];
            a[u] = h0[step - 1 - j - u * TLM_OC_NT];
            b[u] = h1[step - 1 - j - u * TLM_OC_NT];
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            c0 += kk[u] * a[u];
            c1 += kk[u] * b[u];
        }
    }
    for (; j < K; j += TLM_OC_NT) {
        const double k = kern[j];
        c0 += k * h0[step - 1 - j];
        c1 += k * h1[step - 1 - j];
    }
}


// tlm.cu shunt_node with the stub states in registers s (oc_stub_load's
// layout): the same arithmetic. Node i of the block's design (D->off 0).
__device__ __forceinline__ void oc_node_reg(const TlmPtrs& P, const TlmDesign* D, const int st[3], int i, float s[4]) {
    const float* __restrict__ b = P.b;
    float* __restrict__ nb = P.nb;
    const long long L = P.L;
    const long long g = i;
    const unsigned m = P.plain[g >> 5] ? 0u : P.meta[g];
    if (m & TLM_SPECIAL) return;
    float a[4];
    float o[4];
    const unsigned kind = m >> TLM_KIND_SHIFT;
    const float* __restrict__ k = P.coef + (long long)(D->coef_off + (int)kind) * TLM_COEF2;
    if ((m & 15u) == 0) {
        // No face: shunt_gather's values (its face factor 1.0f is exact) in int arithmetic.
        const int gi = i;
        const int Li = (int)L;
        a[0] = b[Li + gi - st[0]];
        a[1] = b[gi + st[0]];
        a[2] = b[3 * Li + gi - st[1]];
        a[3] = b[2 * Li + gi + st[1]];
    } else {
        shunt_gather(b, L, g, st, m, k, a);
    }
    if ((m & TLM_SHORT) && D->loaded) {
        shunt_scatter_short(a, o, s, k);
    } else if (m & TLM_SHORT) {
#pragma unroll
        for (int q = 0; q < 4; ++q) o[q] = -a[q];
    } else if (kind == 0 || !D->loaded) {
        shunt_scatter_plain(a, o);
    } else {
        float c = s[0];
        float l[2] = {s[1], s[2]};
        shunt_scatter(a, o, &c, l, k, 0.0f);
        s[0] = c;
        s[1] = l[0];
        s[2] = l[1];
    }
#pragma unroll
    for (int q = 0; q < 4; ++q) nb[q * L + g] = o[q];
}

// The pool's stub states of ordinary node i into s (a shorted node's four
// half-link states, else capacitive and the two inductive), or s back to the
// pool (back): special nodes keep theirs in the pool.
__device__ __forceinline__ void oc_stub_move(const TlmPtrs& P, const TlmDesign& G, unsigned m, int i, float s[4], bool back) {
    if (m & TLM_SPECIAL) return;
    float* sp = P.stub + G.soff + i;
    const long long LS = P.LS;
    const int f = (m & TLM_SHORT) ? 3 : 0;
    const int n = (m & TLM_SHORT) ? 4 : 3;
#pragma unroll
    for (int q = 0; q < 4; ++q) {
        if (q < n) {
            if (back) sp[(f + q) * LS] = s[q];
            else s[q] = sp[(f + q) * LS];
        }
    }
}

// Stored energy of node i whose stub states are s (shunt_stub_states' layout):
// tlm.cu tlm_energy, the same terms in the same order.
__device__ __forceinline__ double oc_node_energy_reg(const TlmPtrs& Q, const TlmDesign* D, int i, const float s[4]) {
    double acc = 0.0;
    for (int q = 0; q < 4; ++q) {
        const double x = (double)Q.b[q * Q.L + i];
        acc += x * x;
    }
    if (!D->loaded) return acc;
    const unsigned m = Q.meta[i];
    const float* k = Q.coef + (long long)(D->coef_off + (int)(m >> TLM_KIND_SHIFT)) * TLM_COEF2;
    return shunt_stub_energy(acc, k, s, (m & TLM_SHORT) != 0);
}

// The same for a node whose stub states are in the pool.
__device__ __forceinline__ double oc_node_energy(const TlmPtrs& Q, const TlmDesign* D, int i) {
    float st[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (D->loaded) shunt_stub_states(Q.stub + D->soff + i, Q.LS, (Q.meta[i] & TLM_SHORT) != 0, st);
    return oc_node_energy_reg(Q, D, i, st);
}

// First thread of the terms of a sum of cnt terms, the idx-th of its kind: a
// sum that fits one warp goes to warp NW - 1 - idx (mod NW), away from warp 0,
// which runs the first special nodes (one warp's shuffle tree, the same total
// in any warp: the other warps add 0.0); a larger one starts at thread 0.
__device__ __forceinline__ int oc_base(int cnt, int idx) {
    return cnt <= 32 ? 32 * (TLM_OC_NW - 1 - idx % TLM_OC_NW) : 0;
}

// tlm.cu shunt_special of a loaded design (no injection) with node's stub
// states in registers sq (capacitive, the two inductive).
__device__ __forceinline__ void oc_special_reg(const TlmPtrs& P, const TlmDesign* D, const int st[3], int node, float add, int over_link, float over_val, float sq[3]) {
    shunt_special_core(P, D, st, node, add, 0.0f, over_link, over_val, sq);
}

// P: the batch's pointers (P.b: the pulses in and out, P.blocks: one (design,
// 0) pair per block); oc: TLM_OC_WORDS per design; k steps from step
// P.step0[0]; the energy after every ce-th step into en[check * nd + design].
extern "C" __global__ void __launch_bounds__(TLM_OC_NT) tlm_shunt_onchip(TlmPtrs P, const int* oc, int k, int ce, double* en, int nd) {
    TLM_OC_SMEM
    __shared__ double red[TLM_OC_MAXV * TLM_OC_NW];
    // The totals of step part 1 (read in part 2) and of part 2 and the energy.
    __shared__ double sum1[TLM_OC_MAXV];
    __shared__ double sum2[TLM_OC_MAXV];
    // The design's guide ends and guide ports (at most TLM_OC_MAXV / 2 each).
    __shared__ TlmEnd sEnd[TLM_OC_MAXV / 2];
    __shared__ TlmWg sWg[TLM_OC_MAXV / 2];
    const int t = threadIdx.x;
    const int d = P.blocks[2 * blockIdx.x];
    const TlmDesign G = P.designs[d];
    const int* W = oc + d * TLM_OC_WORDS;
    const int nodes = G.nodes;
    // Link stride in shared memory: whole warps of nodes.
    const int nl = (nodes + 31) & ~31;
    const bool sstub = W[0] != 0;
    const int ncoef = W[10];
    float* s0 = smem;
    float* s1 = smem + 4 * nl;
    float* sStub = smem + 8 * nl;
    unsigned* sMeta = (unsigned*)(sStub + (sstub ? 7 * nl : 0));
    float* sCoef = (float*)(sMeta + nl);
    unsigned char* sPlain = (unsigned char*)(sCoef + ncoef * TLM_COEF2);
    // The block's design: node 0 at shared index 0, its own coefficient kinds
    // from 0, its meta words and plain flags (G.off is a multiple of 128) and
    // stubs (where they fit) in shared memory.
    TlmDesign D = G;
    D.off = 0;
    D.coef_off = 0;
    TlmPtrs Q = P;
    Q.meta = sMeta;
    Q.plain = sPlain;
    Q.coef = sCoef;
    Q.L = nl;
    if (sstub) {
        D.soff = 0;
        Q.stub = sStub;
        Q.LS = nl;
    }
    const int st[3] = {G.stride[0], G.stride[1], G.stride[2]};
    for (int q = 0; q < 4; ++q)
        for (int i = t; i < nodes; i += TLM_OC_NT) s0[q * nl + i] = P.b[q * P.L + G.off + i];
    if (sstub)
        for (int q = 0; q < 7; ++q)
            for (int i = t; i < nodes; i += TLM_OC_NT) sStub[q * nl + i] = P.stub[q * P.LS + G.soff + i];
    for (int i = t; i < nl; i += TLM_OC_NT) sMeta[i] = i < nodes ? P.meta[G.off + i] : 0u;
    for (int i = t; i < ncoef * TLM_COEF2; i += TLM_OC_NT) sCoef[i] = P.coef[(long long)G.coef_off * TLM_COEF2 + i];
    for (int i = t; i < nl / 32; i += TLM_OC_NT) sPlain[i] = P.plain[(G.off >> 5) + i];
    // The stub states of the thread's first TLM_OC_R ordinary nodes in registers.
    const bool rstub = !sstub && G.loaded;
    float sr[TLM_OC_R > 0 ? TLM_OC_R : 1][4];
#pragma unroll
    for (int r = 0; r < TLM_OC_R; ++r) {
        const int i = t + r * TLM_OC_NT;
        if (rstub && i < nodes) oc_stub_move(P, G, P.meta[G.off + i], i, sr[r], false);
    }
    const int e0 = W[1], ne = W[2], l0 = W[3], nlp = W[4], w0 = W[5], nw = W[6], src0 = W[7], nsrc = W[8];
    if (t < ne) sEnd[t] = P.ends[e0 + t];
    if (t < nw) sWg[t] = P.wgs[w0 + t];
    __syncthreads();
    const int n0 = P.step0[0];
    // Two ends over one kernel table (the usual guide: both its ends) in one pass.
    const bool pair = ne == 2 && sEnd[0].kern_off == sEnd[1].kern_off && sEnd[0].kern_len == sEnd[1].kern_len;
    // Special nodes of a step: the ends' (in end order), then the free sources.
    int nsp = nsrc;
    for (int e = 0; e < ne; ++e) nsp += sEnd[e].spec_n;
    // The thread's first special node (q = t): its end (ne: a free source),
    // entry, returning pulse's link index and slot weight, and (stubs in the
    // pool) its stub states, in registers.
    const bool qreg = t < nsp;
    int qe = ne;
    TlmSpecial qS = {};
    int qbi = 0;
    double qph = 0.0;
    float qst[3] = {0.0f, 0.0f, 0.0f};
    if (qreg) {
        int r = t;
        qe = 0;
        while (qe < ne && r >= sEnd[qe].spec_n) r -= sEnd[qe++].spec_n;
        qS = qe < ne ? P.specials[sEnd[qe].spec_off + r] : P.specials[src0 + r];
        if (qe < ne) {
            qbi = sEnd[qe].link * nl + P.end_node[qS.over_slot];
            qph = P.end_phi[qS.over_slot];
        }
        if (rstub)
            for (int c = 0; c < 3; ++c) qst[c] = P.stub[c * P.LS + G.soff + qS.node];
    }
    float* b = s0;
    float* nb = s1;
    // Steps since the last energy check, checks so far.
    int cs = 0, nck = 0;
    for (int s = 0; s < k; ++s) {
        Q.b = b;
        Q.nb = nb;
        const int step = n0 + s;
        const double gv = P.gval[d * P.gstride + s];
        // 1. Ordinary nodes, and the sums over b.
        if (rstub) {
#pragma unroll
            for (int r = 0; r < TLM_OC_R; ++r) {
                const int i = t + r * TLM_OC_NT;
                if (i < nodes) oc_node_reg(Q, &D, st, i, sr[r]);
            }
            for (int i = t + TLM_OC_R * TLM_OC_NT; i < nodes; i += TLM_OC_NT) shunt_node(Q, &D, st, i);
        } else {
            for (int i = t; i < nodes; i += TLM_OC_NT) shunt_node(Q, &D, st, i);
        }
        int v = 0;
        double cp0 = 0.0, cp1 = 0.0;
        for (int e = 0; e < ne; ++e) {
            const TlmEnd& E = sEnd[e];
            const int eb = oc_base(E.slots, e);
            double acc = 0.0;
            for (int j = t - eb; j >= 0 && j < E.slots; j += TLM_OC_NT) acc += (double)b[E.link * nl + P.end_node[E.slot_off + j]] * P.end_phi[E.slot_off + j];
            oc_put(acc, v++, red, eb, eb + E.slots);
            const int K = tlm_imin(step, E.kern_len);
            if (!pair || e == 0) {
                const double* h1 = P.end_hist + sEnd[pair ? 1 : e].hist_off;
                oc_conv2(P.end_kern + E.kern_off, P.end_hist + E.hist_off, h1, step, K, cp0, cp1);
            }
            oc_put(pair && e == 1 ? cp1 : cp0, v++, red, 0, K);
        }
        for (int p = 0; p < nlp; ++p) {
            const TlmLumped& L = P.lumped[l0 + p];
            double s2k = 0.0, sk = 0.0, il = 0.0;
            for (int q = t; q < L.nodes; q += TLM_OC_NT) {
                const int node = P.lumped_node[L.node_off + q];
                const unsigned m = Q.meta[node] & ~TLM_SPECIAL;
                const float* kc = Q.coef + (long long)(D.coef_off + (int)(m >> TLM_KIND_SHIFT)) * TLM_COEF2;
                float a[4];
                shunt_gather(b, nl, node, st, m, kc, a);
                const float c = D.loaded ? Q.stub[D.soff + node] : 0.0f;
                const double ky = (double)kc[1];
                s2k += 2.0 * ((double)(a[0] + a[1] + a[2] + a[3]) + (double)(kc[0] * c)) * ky;
                sk += ky;
                for (int r = 0; r < 4; ++r) il += (double)(a[r] - b[r * nl + node]);
            }
            oc_put(s2k, v++, red, 0, L.nodes);
            oc_put(sk, v++, red, 0, L.nodes);
            oc_put(il, v++, red, 0, L.nodes);
        }
        oc_reduce(v, red, sum1);
        // 2. Special nodes, then the samples.
        const float sv = (float)gv;
        // One special a thread, across the warps (the ends' and the sources' at once).
        if (qreg) {
            if (qe < ne) {
                const TlmEnd& E = sEnd[qe];
                const double bm = sum1[2 * qe] / E.phi2;
                const double am = (bm * (E.rho - 1.0) - E.eta_l * sum1[2 * qe + 1]) / (1.0 + E.rho);
                const double bi = (double)b[qbi];
                const float over = (float)(E.g * (bi - bm * qph) + am * qph);
                if (rstub) oc_special_reg(Q, &D, st, qS.node, sv * qS.w, qS.over_link, over, qst);
                else shunt_special(Q, &D, qS.node, sv * qS.w, 0.0f, qS.over_link, over);
            } else {
                if (rstub) oc_special_reg(Q, &D, st, qS.node, sv * qS.w, -1, 0.0f, qst);
                else shunt_special(Q, &D, qS.node, sv * qS.w, 0.0f, -1, 0.0f);
            }
        }
        for (int q = t + TLM_OC_NT; q < nsp; q += TLM_OC_NT) {
            int e = 0, r = q;
            while (e < ne && r >= sEnd[e].spec_n) r -= sEnd[e++].spec_n;
            if (e < ne) {
                const TlmEnd& E = sEnd[e];
                const double bm = sum1[2 * e] / E.phi2;
                const double am = (bm * (E.rho - 1.0) - E.eta_l * sum1[2 * e + 1]) / (1.0 + E.rho);
                const TlmSpecial S = P.specials[E.spec_off + r];
                // tlm.cu tlm_end_block's returning pulse of the special's slot.
                const double bi = (double)b[E.link * nl + P.end_node[S.over_slot]];
                const double ph = P.end_phi[S.over_slot];
                const float over = (float)(E.g * (bi - bm * ph) + am * ph);
                shunt_special(Q, &D, S.node, sv * S.w, 0.0f, S.over_link, over);
            } else {
                const TlmSpecial S = P.specials[src0 + r];
                shunt_special(Q, &D, S.node, sv * S.w, 0.0f, -1, 0.0f);
            }
        }
        // Thread e: end e's current history.
        if (t < ne) {
            const TlmEnd& E = sEnd[t];
            const double bm = sum1[2 * t] / E.phi2;
            const double am = (bm * (E.rho - 1.0) - E.eta_l * sum1[2 * t + 1]) / (1.0 + E.rho);
            P.end_hist[E.hist_off + step] = (bm - am) / E.z0;
        }
        v = 0;
        for (int p = 0; p < nlp; ++p) {
            const TlmLumped& L = P.lumped[l0 + p];
            const double s2k = sum1[2 * ne + 3 * p];
            const double sk = sum1[2 * ne + 3 * p + 1];
            const double vs = L.drive ? gv : 0.0;
            const double i = (vs + s2k) / (L.r + L.z * sk);
            const float inj = (float)(L.z * i);
            double acc = 0.0;
            for (int q = t; q < L.nodes; q += TLM_OC_NT) acc -= (double)shunt_special(Q, &D, P.lumped_node[L.node_off + q], 0.0f, inj, -1, 0.0f);
            oc_put(acc, v++, red, 0, L.nodes);
        }
        // A special sample node's pulses of this step are written above.
        if (W[9]) __syncthreads();
        for (int w = 0; w < nw; ++w) {
            const TlmWg& Wg = sWg[w];
            const int wb = oc_base(Wg.terms, w);
            double vv = 0.0, ii = 0.0;
            for (int j = t - wb; j >= 0 && j < Wg.terms; j += TLM_OC_NT) {
                // tlm.cu tlm_sample (2D): b the last step's pulses, nb this step's.
                const double wt = P.wg_w[Wg.term_off + j];
                const int node = P.wg_lo[Wg.term_off + j];
                const unsigned m = Q.meta[node] & ~TLM_SPECIAL;
                const float* kc = Q.coef + (long long)(D.coef_off + (int)(m >> TLM_KIND_SHIFT)) * TLM_COEF2;
                float a[4];
                shunt_gather(b, nl, node, st, m, kc, a);
                const int qn = Wg.link_down;
                const int qp = Wg.link_up;
                const double an = (double)a[qn];
                const double ap = (double)a[qp];
                const double bn = (double)nb[qn * nl + node];
                const double bp = (double)nb[qp * nl + node];
                const double bn0 = (double)b[qn * nl + node];
                const double bp0 = (double)b[qp * nl + node];
                vv += 0.5 * ((an + bn) + (ap + bp)) * wt * Wg.dw;
                ii += 0.5 * ((an - bn0) + (bp0 - ap)) / Wg.z * wt * Wg.de;
            }
            oc_put(vv, v++, red, wb, wb + Wg.terms);
            oc_put(ii, v++, red, wb, wb + Wg.terms);
        }
        oc_reduce(v, red, sum2);
        if (t == 0) {
            for (int p = 0; p < nlp; ++p) {
                const TlmLumped& L = P.lumped[l0 + p];
                P.tv[L.slot * P.tstride + s] = sum2[p];
                P.ti[L.slot * P.tstride + s] = sum1[2 * ne + 3 * p + 2] / L.z;
            }
            for (int w = 0; w < nw; ++w) {
                const TlmWg& Wg = sWg[w];
                P.tv[Wg.slot * P.tstride + s] = Wg.norm * sum2[nlp + 2 * w];
                P.ti[Wg.slot * P.tstride + s] = Wg.norm * Wg.inward * sum2[nlp + 2 * w + 1];
            }
        }
        float* x = b;
        b = nb;
        nb = x;
        if (++cs == ce) {
            cs = 0;
            // The register stub states of the first special nodes to the pool, for their energy.
            if (rstub && qreg)
                for (int c = 0; c < 3; ++c) P.stub[c * P.LS + G.soff + qS.node] = qst[c];
            if (rstub) __syncthreads();
            Q.b = b;
            double acc = 0.0;
            if (rstub) {
#pragma unroll
                for (int r = 0; r < TLM_OC_R; ++r) {
                    const int i = t + r * TLM_OC_NT;
                    if (i < nodes) acc += (Q.meta[i] & TLM_SPECIAL) ? oc_node_energy(Q, &D, i) : oc_node_energy_reg(Q, &D, i, sr[r]);
                }
                for (int i = t + TLM_OC_R * TLM_OC_NT; i < nodes; i += TLM_OC_NT) acc += oc_node_energy(Q, &D, i);
            } else {
                for (int i = t; i < nodes; i += TLM_OC_NT) acc += oc_node_energy(Q, &D, i);
            }
            oc_put(acc, 0, red, 0, nodes);
            oc_reduce(1, red, sum2);
            if (t == 0) en[nck * nd + d] = sum2[0];
            ++nck;
        }
    }
    if (rstub && qreg)
        for (int c = 0; c < 3; ++c) P.stub[c * P.LS + G.soff + qS.node] = qst[c];
    // The pulses (and stubs) back to the pool for the next launch and the host.
    float* out = (float*)P.b;
    for (int q = 0; q < 4; ++q)
        for (int i = t; i < nodes; i += TLM_OC_NT) out[q * P.L + G.off + i] = b[q * nl + i];
    if (sstub)
        for (int q = 0; q < 7; ++q)
            for (int i = t; i < nodes; i += TLM_OC_NT) P.stub[q * P.LS + G.soff + i] = sStub[q * nl + i];
#pragma unroll
    for (int r = 0; r < TLM_OC_R; ++r) {
        const int i = t + r * TLM_OC_NT;
        if (rstub && i < nodes) oc_stub_move(P, G, P.meta[G.off + i], i, sr[r], true);
    }
}
