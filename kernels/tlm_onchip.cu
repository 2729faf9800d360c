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
// and its plain flags (nl / 32 bytes): a node's update reads global memory
// only for stubs left in the pool.
//
// Work of a step, four barriers (two more at an energy check):
//   1. every thread: its share of the ordinary nodes (b -> nb) and of the
//      terms of the sums that read only b: each guide end's mode amplitude and
//      convolution, each lumped port's series-circuit sums; the sums reduced;
//   2. every thread: its share of the special nodes (guide-end faces with
//      their returning pulse, sources, lumped-port nodes) and, from b and nb,
//      of the guide ports' sample terms (behind one more barrier where a
//      sample node is special); the sums reduced, thread 0 stores the samples.
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

// Thread's partial x of sum v: its warp's total into red[v][warp].
__device__ __forceinline__ void oc_put(double x, int v, double* red) {
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

// Stored energy of node i (tlm.cu tlm_energy, the same terms in the same order).
__device__ __forceinline__ double oc_node_energy(const TlmPtrs& Q, const TlmDesign* D, int i) {
    double acc = 0.0;
    for (int q = 0; q < 4; ++q) {
        const double x = (double)Q.b[q * Q.L + i];
        acc += x * x;
    }
    if (!D->loaded) return acc;
    const unsigned m = Q.meta[i];
    const float* k = Q.coef + (long long)(D->coef_off + (int)(m >> TLM_KIND_SHIFT)) * TLM_COEF2;
    const float* sp = Q.stub + D->soff + i;
    const long long LS = Q.LS;
    if (m & TLM_SHORT) {
        double e = 0.0;
        for (int q = 0; q < 4; ++q) {
            const float s = sp[(3 + q) * LS];
            if (k[2 + q / 2] > 0.0f) e += (double)(s * s / (0.5f * k[2 + q / 2]));
        }
        acc += e;
    } else {
        const float c = sp[0];
        acc += (double)(k[0] * c * c);
        for (int mm = 0; mm < 2; ++mm) {
            const float l = sp[(1 + mm) * LS];
            if (k[2 + mm] > 0.0f) acc += (double)(l * l / k[2 + mm]);
        }
    }
    return acc;
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
    __syncthreads();
    const int e0 = W[1], ne = W[2], l0 = W[3], nlp = W[4], w0 = W[5], nw = W[6], src0 = W[7], nsrc = W[8];
    const int n0 = P.step0[0];
    float* b = s0;
    float* nb = s1;
    for (int s = 0; s < k; ++s) {
        Q.b = b;
        Q.nb = nb;
        const int step = n0 + s;
        // 1. Ordinary nodes, and the sums over b.
        for (int i = t; i < nodes; i += TLM_OC_NT) shunt_node(Q, &D, st, i);
        int v = 0;
        // Two ends over one kernel table (the usual guide: both its ends) in one pass.
        const bool pair = ne == 2 && P.ends[e0].kern_off == P.ends[e0 + 1].kern_off && P.ends[e0].kern_len == P.ends[e0 + 1].kern_len;
        double cp0 = 0.0, cp1 = 0.0;
        for (int e = 0; e < ne; ++e) {
            const TlmEnd& E = P.ends[e0 + e];
            double acc = 0.0;
            for (int j = t; j < E.slots; j += TLM_OC_NT) acc += (double)b[E.link * nl + P.end_node[E.slot_off + j]] * P.end_phi[E.slot_off + j];
            oc_put(acc, v++, red);
            if (!pair || e == 0) {
                const double* h1 = P.end_hist + P.ends[e0 + (pair ? 1 : e)].hist_off;
                oc_conv2(P.end_kern + E.kern_off, P.end_hist + E.hist_off, h1, step, tlm_imin(step, E.kern_len), cp0, cp1);
            }
            oc_put(pair && e == 1 ? cp1 : cp0, v++, red);
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
            oc_put(s2k, v++, red);
            oc_put(sk, v++, red);
            oc_put(il, v++, red);
        }
        oc_reduce(v, red, sum1);
        // 2. Special nodes, then the samples.
        const float sv = (float)P.gval[d * P.gstride + s];
        for (int e = 0; e < ne; ++e) {
            const TlmEnd& E = P.ends[e0 + e];
            const double bm = sum1[2 * e] / E.phi2;
            const double am = (bm * (E.rho - 1.0) - E.eta_l * sum1[2 * e + 1]) / (1.0 + E.rho);
            if (t == 0) P.end_hist[E.hist_off + step] = (bm - am) / E.z0;
            for (int q = t; q < E.spec_n; q += TLM_OC_NT) {
                const TlmSpecial S = P.specials[E.spec_off + q];
                // tlm.cu tlm_end_block's returning pulse of the special's slot.
                const double bi = (double)b[E.link * nl + P.end_node[S.over_slot]];
                const double ph = P.end_phi[S.over_slot];
                const float over = (float)(E.g * (bi - bm * ph) + am * ph);
                shunt_special(Q, &D, S.node, sv * S.w, 0.0f, S.over_link, over);
            }
        }
        for (int q = t; q < nsrc; q += TLM_OC_NT) {
            const TlmSpecial S = P.specials[src0 + q];
            shunt_special(Q, &D, S.node, sv * S.w, 0.0f, -1, 0.0f);
        }
        v = 0;
        for (int p = 0; p < nlp; ++p) {
            const TlmLumped& L = P.lumped[l0 + p];
            const double s2k = sum1[2 * ne + 3 * p];
            const double sk = sum1[2 * ne + 3 * p + 1];
            const double vs = L.drive ? P.gval[d * P.gstride + s] : 0.0;
            const double i = (vs + s2k) / (L.r + L.z * sk);
            const float inj = (float)(L.z * i);
            double acc = 0.0;
            for (int q = t; q < L.nodes; q += TLM_OC_NT) acc -= (double)shunt_special(Q, &D, P.lumped_node[L.node_off + q], 0.0f, inj, -1, 0.0f);
            oc_put(acc, v++, red);
        }
        // A special sample node's pulses of this step are written above.
        if (W[9]) __syncthreads();
        for (int w = 0; w < nw; ++w) {
            const TlmWg& Wg = P.wgs[w0 + w];
            double vv = 0.0, ii = 0.0;
            for (int j = t; j < Wg.terms; j += TLM_OC_NT) {
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
            oc_put(vv, v++, red);
            oc_put(ii, v++, red);
        }
        oc_reduce(v, red, sum2);
        if (t == 0) {
            for (int p = 0; p < nlp; ++p) {
                const TlmLumped& L = P.lumped[l0 + p];
                P.tv[L.slot * P.tstride + s] = sum2[p];
                P.ti[L.slot * P.tstride + s] = sum1[2 * ne + 3 * p + 2] / L.z;
            }
            for (int w = 0; w < nw; ++w) {
                const TlmWg& Wg = P.wgs[w0 + w];
                P.tv[Wg.slot * P.tstride + s] = Wg.norm * sum2[nlp + 2 * w];
                P.ti[Wg.slot * P.tstride + s] = Wg.norm * Wg.inward * sum2[nlp + 2 * w + 1];
            }
        }
        float* x = b;
        b = nb;
        nb = x;
        if ((s + 1) % ce == 0) {
            Q.b = b;
            double acc = 0.0;
            for (int i = t; i < nodes; i += TLM_OC_NT) acc += oc_node_energy(Q, &D, i);
            oc_put(acc, 0, red);
            oc_reduce(1, red, sum2);
            if (t == 0) en[((s + 1) / ce - 1) * nd + d] = sum2[0];
        }
    }
    // The pulses (and stubs) back to the pool for the next launch and the host.
    float* out = (float*)P.b;
    for (int q = 0; q < 4; ++q)
        for (int i = t; i < nodes; i += TLM_OC_NT) out[q * P.L + G.off + i] = b[q * nl + i];
    if (sstub)
        for (int q = 0; q < 7; ++q)
            for (int i = t; i < nodes; i += TLM_OC_NT) P.stub[q * P.LS + G.soff + i] = sStub[q * nl + i];
}
