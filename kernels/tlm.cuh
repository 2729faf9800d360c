// Structures shared by the Rust host and the TLM kernels (kernels/tlm.cu).
//
// Mirrored by #[repr(C)] structs of the same names in
// src/engine/cuda/tlm/abi.rs; a test there parses this file and checks every
// field's offset and each struct's size. Keep ONE declaration per line, only
// the types int, float, double, long long and pointers.
//
// Layout: every link of every design of a batch lives in one pool per step
// parity, link l of node i of design d at b[l*L + off_d + i] (structure of
// arrays: a warp reads 32 consecutive nodes of one link). off_d is a multiple
// of 128. Nodes are numbered as the CPU engine numbers them (3D: x fastest;
// 2D: p fastest over the grid nodes of the mesh plane, cells + 1 per axis). Stubs of loaded designs: stub[s*LS + soff_d + i]
// (3D: s = 0..3 capacitive, 3..6 inductive; 2D: s = 0 capacitive, 1..3
// inductive, 3..7 the half-link stub states of shorted nodes).
// The per-node word meta[off_d + i] is described in src/engine/tlm/pack.rs.

#ifndef EMV_TLM_CUH
#define EMV_TLM_CUH

// Threads per block of the node kernels (step, energy) and nodes per thread.
#ifndef TLM_THREADS
#define TLM_THREADS 256
#endif
#ifndef TLM_NPT
#define TLM_NPT 1
#endif
// Minimum resident blocks per SM asked of the compiler for the node kernels
// (0: none); caps their registers at 65536 / (TLM_THREADS * TLM_MINB).
#ifndef TLM_MINB
#define TLM_MINB 0
#endif
#if TLM_MINB > 0
#define TLM_NODE_BOUNDS __launch_bounds__(TLM_THREADS, TLM_MINB)
#else
#define TLM_NODE_BOUNDS __launch_bounds__(TLM_THREADS)
#endif
// 1: interior nodes of a node kernel take a separate gather without wall
// tests (a warp mixing wall and interior nodes then runs both); 0: one
// branch-free gather for every node.
#ifndef TLM_SPLIT
#define TLM_SPLIT 0
#endif
// Threads per block of the port kernels (power of two).
#ifndef TLM_PORT_THREADS
#define TLM_PORT_THREADS 128
#endif

#define TLM_DEAD (1u << 12)
// Bit 12 in 2D: a shorted node (V = 0: each half-link ends in the short
// through half its line pair's series stub, or returns inverted without one).
#define TLM_SHORT (1u << 12)
#define TLM_SPECIAL (1u << 13)
#define TLM_KIND_SHIFT 14
#define TLM_COEF3 24
#define TLM_COEF2 12

// One design of the batch.
struct TlmDesign {
    long long off;
    long long soff;
    int nodes;
    int stride[3];
    int coef_off;
    int src_e;
    int loaded;
    int pad;
};
// off:      node offset of the design in the link pools (and meta)
// soff:     node offset in the stub pools (loaded designs), else -1
// stride:   3D (1, nx, nx*ny); 2D strides of the mesh axes p, q
// coef_off: first coefficient kind of the design in the coefficient table
// src_e:    E axis of the driven guide port's sources (3D)
// loaded:   1 when the design has stubs (then stub pools are read and written)

// A modal guide end (TE10 termination by running convolution).
struct TlmEnd {
    double phi2;
    double rho;
    double eta_l;
    double z0;
    double g;
    long long hist_off;
    long long kern_off;
    int design;
    int link;
    int slot_off;
    int slots;
    int kern_len;
    int spec_off;
    int spec_n;
    int pad;
};
// slots: face nodes end_node[slot_off + s] with profile end_phi[slot_off + s];
// the returning pulse of slot s goes to end_a[slot_off + s].
// hist: the mode current history end_hist[hist_off + step];
// kern: end_kern[kern_off + k] = wc dt J1(wc (k+1) dt), k < kern_len.
// spec_off, spec_n: the special nodes whose overriding pulse comes from this end.

// A node updated by the port kernel: source weight and override slot.
struct TlmSpecial {
    float w;
    int node;
    int design;
    int over_link;
    int over_slot;
    int pad;
};
// over_link: incident link replaced by end_a[over_slot], -1 for none.

// A lumped port: a series source + resistor through a column of nodes.
struct TlmLumped {
    double r;
    double z;
    int design;
    int axis;
    int node_off;
    int nodes;
    int slot;
    int drive;
};
// z: link impedance (eta0 in 3D, Z0 of the 2D mesh); slot: trace slot;
// drive: 1 when the port is the design's driven port.

// A waveguide port's sampling terms.
struct TlmWg {
    double dw;
    double de;
    double z;
    double norm;
    double inward;
    int design;
    int link_up;
    int link_down;
    int term_off;
    int terms;
    int slot;
};
// 3D: term t: nodes wg_lo/wg_hi[term_off + t] below/above the reference face,
// weight wg_w[term_off + t]; V = norm sum (up + down) w dw,
// I = norm inward sum (up - down) / z w de.
// 2D: term t: node wg_lo[term_off + t] on the reference plane (wg_hi the same);
// V from this step's incident and reflected pulses of its two normal links,
// I from the incident ones against last step's reflected (shunt2d.rs sample_wg).

// Device pointers and strides (passed by value).
struct TlmPtrs {
    const float* b;
    float* nb;
    float* stub;
    const unsigned int* meta;
    const unsigned char* plain;
    const float* coef;
    const TlmDesign* designs;
    const int* blocks;
    const int* jobs;
    const TlmEnd* ends;
    const int* end_node;
    const double* end_phi;
    const double* end_kern;
    double* end_hist;
    float* end_a;
    const TlmSpecial* specials;
    const TlmLumped* lumped;
    const int* lumped_node;
    const TlmWg* wgs;
    const int* wg_list;
    const int* wg_lo;
    const int* wg_hi;
    const double* wg_w;
    const double* gval;
    const int* due;
    double* tv;
    double* ti;
    double* energy;
    const int* step0;
    long long L;
    long long LS;
    int gstride;
    int tstride;
};
// step0:   the first step of the chunk in flight (the port kernels' a0 counts from it,
//          so that a chunk's launches are the same every time: CUDA graphs replay them)
// b, nb:   reflected pulses of the last step (read) and of this step (written);
//          the sample kernels run after the swap (b: this step's, nb: the last)
// plain:   per 32 nodes of the pool: 1 when all their meta words are 0
// blocks:  pairs (design, block of TLM_THREADS*TLM_NPT nodes) of the node kernels
// jobs:    triples (role, index, count) of the port kernel: role 0 guide end,
//          1 lumped port, 2 `count` special nodes from `index`
// wg_list: the guide ports to sample, one block each
// gval:    source value per design and step of the chunk [design*gstride + s]
// due:     per design, 1 when the energy kernel must sum it
// tv, ti:  port samples [slot*tstride + s]; energy: per design (atomic sums)

#endif
