// Structures shared by the Rust host and the FDTD kernels.
//
// Mirrored by #[repr(C)] structs of the same names in src/engine/cuda/abi.rs;
// a test there parses this file and checks every field's offset and each
// struct's size against the Rust definitions. Keep ONE declaration per line
// (the parser relies on it), only the types int, float, double, long long and
// pointers.
//
// Field layout (see src/engine/fdtd/operator.rs): each component of each
// design is a flat float array over the padded grid (n+2)^3 with one ghost
// layer per side, x fastest. Kernels work in padded coordinates q = logical+1.
// All designs of a batch live in one pool per component, design d starting at
// element FdtdDesign::off. The u8 material arrays use the same offsets.

#ifndef EMV_COMMON_CUH
#define EMV_COMMON_CUH

// Thread-block tile in x and y (threads per block = EMV_TX * EMV_TY, a power
// of two). The host passes both with -D when it compiles a tile variant.
#ifndef EMV_TX
#define EMV_TX 32
#endif
#ifndef EMV_TY
#define EMV_TY 8
#endif

// Threads per block of fdtd_sample_ports (power of two).
#define EMV_SAMPLE_THREADS 128
// Threads per block of fdtd_inject.
#define EMV_INJECT_THREADS 128
// Threads per block of fdtd_dft.
#define EMV_DFT_THREADS 256
#define EMV_EDGE_THREADS 128
#define EMV_SURF_THREADS 128

// One design of the batch: its grid, where its arrays start in the pools and
// how its blocks tile it.
struct FdtdDesign {
    long long off;
    long long psi_off[9];
    int n[3];
    int dims[3];
    int tiles[2];
    int zchunk;
    int nchunks;
    int coef_off;
    int ncoef;
    int pmc;
    int prof_off[3];
    int slab_n[3];
    float db;
    int line_off[3];
    int zcut[2];
    int zn[3];
    int zlen[3];
    int org[2];
};
// off:        element offset of the design's arrays in the field/material pools
// psi_off:    [c*3+a] element offset of the CPML memory of component c along
//             axis a in the psi pools (psi_e, psi_h; same layout), -1 if none.
//             The psi array spans only the slab positions along a (slab_n[a]
//             of them, numbered by slab_e/slab_h) and the padded extent of the
//             two other axes, x fastest.
// n, dims:    cells per axis; padded extents n+2
// tiles:      thread-block tiles along x and y; zchunk: planes per z-chunk;
//             nchunks: chunks along z. Block b of the design covers tile
//             (b % tiles[0], (b / tiles[0]) % tiles[1]), chunk b / (tiles[0]*tiles[1]).
// org:        tile origin along x and y (0 <= org <= T-2): tile i spans padded
//             positions [i*T - org, (i+1)*T - org) clipped to [0, dims), so the
//             first tile may be narrower (batch.rs LeanInfo::with_origin picks
//             an x origin, a multiple of 8, that puts the CPML into fewer tiles;
//             at most T-2 so that no tile's halo is the PMC ghost position 0).
// zcut, zn, zlen: the chunks along z in three segments [0, zcut[0]),
//             [zcut[0], zcut[1]), [zcut[1], dims[2]): segment s has zn[s]
//             chunks of zlen[s] planes (its last one possibly shorter); the
//             middle segment is the design's CPML-free interior, so that
//             its chunks may take the lean step (batch.rs z_segments).
// coef_off:   offset of the design's coefficient table (ca, cb, eps); ncoef entries (<= 256)
// pmc:        bit 2*axis+side set when that face is a PMC
// prof_off:   offset of the axis' CPML profile in the profile tables (n+1
//             entries reserved for both E and H sides), -1: no PML on that axis
// db:         H coefficient dt/mu0
// line_off:   per axis, offset of the design's per-line tables (inv_e, inv_h,
//             rel_e, rel_h of FdtdPtrs), one entry per padded position

// Device pointers of the field kernels (passed by value).
struct FdtdPtrs {
    float* e[3];
    float* h[3];
    float* e_out[3];
    float* h_out[3];
    const unsigned char* mat[3];
    const float* ca;
    const float* cb;
    const float* eps;
    const float* pe_b;
    const float* pe_c;
    const float* pe_k;
    const float* ph_b;
    const float* ph_c;
    const float* ph_k;
    const int* slab_e;
    const int* slab_h;
    float* psi_e;
    float* psi_h;
    float* psi_h_out;
    float* psi_e_out;
    const FdtdDesign* designs;
    const int* blocks;
    const float* inv_e;
    const float* inv_h;
    const float* rel_e;
    const float* rel_h;
};
// e, h:        fields read (the split kernels update them in place)
// e_out,h_out: fields written by the fused fdtd_step (ping-pong)
// pe_*, ph_*:  CPML b, c, 1/kappa at E (node) and H (half-node) positions
// slab_e/h:    slab number of a position along a PML axis, -1 outside the PML
// psi_h_out:   CPML memory of H written by fdtd_step (ping-pong with psi_h)
// psi_e_out:   CPML memory of E written by fdtd_step and the two-step passes
//              (ping-pong with psi_e; the split kernels update psi_e in place)
// blocks:      pairs (design, block within the design), one per thread block
// inv_e/inv_h: per padded position along an axis, 1 / the dual spacing around
//              the line (E side: the E update's H differences) and 1 / the
//              primal spacing of the cell (H side: the H update's E differences)
// rel_e/rel_h: the same dual / primal lengths over the axis' first cell
//              (weights of the energy sum; exactly 1 on a uniform axis)

// A port as the sampling kernel sees it.
struct FdtdPort {
    double dl;
    double d_a;
    double d_b;
    double i_sign;
    int design;
    int kind;
    int comp_e;
    int comp_h;
    int term_off;
    int n_terms;
    int mid;
    int s_a;
    int s_b;
    int pad;
};
// kind 0 (lumped): terms = edge indices (t_idx0) with their lengths over dl
//   (t_w, 1 for equal edges), V = -sum(t_w E) dl,
//   I = (H_b[mid] - H_b[mid - s_a]) d_b - (H_a[mid] - H_a[mid - s_b]) d_a,
//   (a, b) = ((c+1)%3, (c+2)%3), c = comp_e.
// kind 1 (TE10 guide): terms (t_idx0 = E index, t_idx1/2 = H below/above,
//   t_w = weight), V = sum w E, I = i_sign * sum w 0.5 (H_lo + H_hi).

// Device pointers of the port kernels (passed by value).
struct PortPtrs {
    float* e[3];
    float* h[3];
    const FdtdDesign* designs;
    const FdtdPort* ports;
    const int* t_idx0;
    const int* t_idx1;
    const int* t_idx2;
    const double* t_w;
    const int* src_design;
    const int* src_comp;
    const int* src_idx;
    const float* src_coef;
    const float* gval;
    const int* active;
    double* tv;
    double* ti;
    int n_src;
    int n_ports;
    int gstride;
    int tstride;
};
// src_*:  source points of the driven ports: E[comp][idx] += coef * gval[design*gstride + step]
// active: 1 while a design still runs
// tv, ti: port voltage/current samples [port*tstride + step]

// Edge currents (fdtd_edges, fdtd_edges.cuh; built by cuda/edges.rs from
// each operator's fdtd::edges::EdgeTerms, poles and edges of every design
// concatenated): per edge design, comp, idx, s, g0, inv_den, first (edges+1,
// into the pole arrays), e_prev; per pole kp, kd, q0, q1 and memories p, dd.
struct EdgePtrs {
    float* e[3];
    const FdtdDesign* designs;
    const int* active;
    const int* design;
    const int* comp;
    const int* idx;
    const float* s;
    const float* g0;
    const float* inv_den;
    const int* first;
    float* e_prev;
    const float* kp;
    const float* kd;
    const float* q0;
    const float* q1;
    float* p;
    float* dd;
    int n_edges;
    int pad;
};

// Tables of the surface-impedance kernel (fdtd_surface, fdtd_surface.cuh;
// built by surface.rs SurfacePlan from src/engine/fdtd/surface.rs).
struct SurfacePtrs {
    float* e[3];
    float* h[3];
    const FdtdDesign* designs;
    const int* active;
    const int* design;
    const int* comp;
    const int* idx;
    const float* k;
    const float* inv_den;
    const float* kb;
    const int* first;
    const int* cell0;
    const float* alpha;
    const float* beta;
    const float* rho;
    float* h_prev;
    float* psi;
    float* dh;
    const int* e_design;
    const int* e_comp;
    const int* e_idx;
    const int* e_first;
    const int* e_term;
    const float* e_w;
    int n_terms;
    int n_reads;
};

// Tables of the conformal-metal kernels (fdtd_conformal.cuh; built by
// conformal.rs ConformalPlan from src/engine/fdtd/conformal.rs).
struct ConformalPtrs {
    float* e[3];
    float* h[3];
    const FdtdDesign* designs;
    const int* active;
    const int* design;
    const int* comp;
    const int* idx;
    const int* src_comp;
    const int* src_idx;
    const float* src_w;
    float* pending;
    const int* e_design;
    const int* e_comp;
    const int* e_idx;
    const int* e_first;
    const int* e_term;
    const float* e_w;
    int n_terms;
    int n_reads;
};

// Tables of the two-step pass for slim designs (fdtd_step2, fdtd_slim.cuh;
// built by slim.rs SlimPlan).
struct SlimPtrs {
    float* se[3];
    float* sh[3];
    const int* blocks;
    const int* dgrp;
    const int* grp;
    const int* src_item;
    const int* tap;
};
// se, sh:   snapshot set (same layout as the field pools): the first step's E
//           and H at the positions the port monitor reads
// blocks:   triples (design, z0, z1), one per thread block
// dgrp:     per design [source groups begin, end, tap groups begin, end)
// grp:      groups (plane, first item, items), sorted by plane per design
// src_item: per source item, its index in PortPtrs' source tables
// tap:      per tap item (field 0..5 = E x,y,z, H x,y,z; in-design index)

// One recorded component of a field DFT monitor of one design (the layout of
// src/engine/fdtd/dft.rs: per sample `taps` flat indices whose mean it is).
struct FdtdDftComp {
    long long acc_off;
    long long tap_off;
    int design;
    int field;
    int n_samples;
    int taps;
    int nf;
    int slot;
    long long sample_off;
};
// acc_off:    offset of the component's sums in acc_re/acc_im, [f][sample]
// tap_off:    offset of its taps in DftPtrs::tap (local indices of the design)
// field:      0..2 = E x,y,z, 3..5 = H x,y,z
// slot:       phase slot of its first frequency (the others follow)
// sample_off: first global sample index (thread) of the component

// Device pointers of the field DFT kernel (passed by value).
struct DftPtrs {
    float* e[3];
    float* h[3];
    const FdtdDesign* designs;
    const FdtdDftComp* comps;
    const int* sample_comp;
    const int* tap;
    const double* phase;
    const int* active;
    double* acc_re;
    double* acc_im;
    long long n_samples;
    int pstride;
    int pad;
};
// sample_comp: per global sample, its component
// phase:       [(slot * pstride + step) * 4 + {0,1,2,3}] = E cos, E sin, H cos, H sin
//              of exp(-j 2 pi f t) for the chunk's steps (dft.rs phases)

#endif
