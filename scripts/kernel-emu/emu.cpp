// CPU emulation of the CUDA FDTD batch (see src/dev/kernel_emu.rs): reads
// the packed batch written by `emvolve kernel-emu`, runs the launch sequence
// of the backend (step kernels, inject, sample; energy at the end) with the
// kernels of kernels/fdtd.cu, and writes the final fields, port samples and
// energies. Build: scripts/kernel-emu.sh (g++ -std=c++20, tile via -D).
#include "cuda_shim.h"
#include "../../kernels/fdtd.cu"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <string>

static std::map<std::string, std::vector<char>> rec;

template <class T>
T* get(const char* n) {
    auto it = rec.find(n);
    if (it == rec.end()) {
        fprintf(stderr, "missing record %s\n", n);
        exit(2);
    }
    return reinterpret_cast<T*>(it->second.data());
}

static void put(std::ofstream& o, const std::string& n, const void* p, size_t bytes) {
    uint32_t nl = n.size();
    uint64_t b = bytes;
    o.write((const char*)&nl, 4);
    o.write(n.data(), nl);
    o.write((const char*)&b, 8);
    o.write((const char*)p, bytes);
}

int main(int argc, char** argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: emu IN OUT\n");
        return 2;
    }
    std::ifstream in(argv[1], std::ios::binary);
    std::vector<char> all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t p = 0;
    while (p < all.size()) {
        uint32_t nl;
        memcpy(&nl, &all[p], 4);
        p += 4;
        std::string name(&all[p], nl);
        p += nl;
        uint64_t n;
        memcpy(&n, &all[p], 8);
        p += 8;
        rec[name] = std::vector<char>(all.begin() + p, all.begin() + p + n);
        rec[name].resize(n + 16);  // never empty: valid pointers for empty tables
        p += n;
    }
    const long long* prm = get<long long>("params");
    const size_t fl = prm[0], psil = prm[1];
    const int nd = prm[2], np = prm[3], nsrc = prm[4], steps = prm[5], fused = prm[6], tx = prm[7], ty = prm[8], nblocks = prm[9],
              any_pmc = prm[10];
    if (tx != EMV_TX || ty != EMV_TY) {
        fprintf(stderr, "emulator built for tile %dx%d, batch packed for %dx%d\n", EMV_TX, EMV_TY, tx, ty);
        return 2;
    }
    std::vector<float> E[2][3], H[2][3];
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (int c = 0; c < 3; ++c) {
        std::string en = "e" + std::to_string(c), hn = "h" + std::to_string(c);
        E[0][c].assign(get<float>(en.c_str()), get<float>(en.c_str()) + fl);
        H[0][c].assign(get<float>(hn.c_str()), get<float>(hn.c_str()) + fl);
        // Poison the write-only set of the fused scheme: unwritten positions show up as NaN.
        E[1][c].assign(fl, fused ? nan : 0.f);
        H[1][c].assign(fl, fused ? nan : 0.f);
    }
    std::vector<float> psi_e(psil + 1, 0.f), psi_h[2] = {std::vector<float>(psil + 1, 0.f), std::vector<float>(psil + 1, 0.f)};
    std::vector<double> tv(np * steps + 1, 0.0), ti(np * steps + 1, 0.0);
    FdtdPtrs P[2];
    PortPtrs Q[2];
    for (int s = 0; s < 2; ++s) {
        const int o = 1 - s;
        FdtdPtrs& x = P[s];
        for (int c = 0; c < 3; ++c) {
            x.e[c] = E[s][c].data();
            x.h[c] = H[s][c].data();
            x.e_out[c] = E[o][c].data();
            x.h_out[c] = H[o][c].data();
            std::string mn = "mat" + std::to_string(c);
            x.mat[c] = get<unsigned char>(mn.c_str());
        }
        x.ca = get<float>("ca");
        x.cb = get<float>("cb");
        x.eps = get<float>("eps");
        x.pe_b = get<float>("pe_b");
        x.pe_c = get<float>("pe_c");
        x.pe_k = get<float>("pe_k");
        x.ph_b = get<float>("ph_b");
        x.ph_c = get<float>("ph_c");
        x.ph_k = get<float>("ph_k");
        x.slab_e = get<int>("slab_e");
        x.slab_h = get<int>("slab_h");
        x.psi_e = psi_e.data();
        x.psi_h = psi_h[s].data();
        x.psi_h_out = psi_h[o].data();
        x.designs = get<FdtdDesign>("designs");
        x.blocks = get<int>("blocks");
        x.inv_e = get<float>("inv_e");
        x.inv_h = get<float>("inv_h");
        x.rel_e = get<float>("rel_e");
        x.rel_h = get<float>("rel_h");
        PortPtrs& q = Q[s];
        for (int c = 0; c < 3; ++c) {
            q.e[c] = E[s][c].data();
            q.h[c] = H[s][c].data();
        }
        q.designs = x.designs;
        q.ports = get<FdtdPort>("ports");
        q.t_idx0 = get<int>("t_idx0");
        q.t_idx1 = get<int>("t_idx1");
        q.t_idx2 = get<int>("t_idx2");
        q.t_w = get<double>("t_w");
        q.src_design = get<int>("src_design");
        q.src_comp = get<int>("src_comp");
        q.src_idx = get<int>("src_idx");
        q.src_coef = get<float>("src_coef");
        q.gval = get<float>("gval");
        static std::vector<int> active;
        active.assign(nd, 1);
        q.active = active.data();
        q.tv = tv.data();
        q.ti = ti.data();
        q.n_src = nsrc;
        q.n_ports = np;
        q.gstride = steps;
        q.tstride = steps;
    }
    const dim3 tile{(unsigned)EMV_TX, (unsigned)EMV_TY, 1};
    const dim3 grid{(unsigned)nblocks, 1, 1};
    int cur = 0;
    for (int s = 0; s < steps; ++s) {
        if (fused) {
            emu_launch(fdtd_step, grid, tile, P[cur]);
            cur ^= 1;
        } else {
            emu_launch(fdtd_update_h, grid, tile, P[0]);
            if (any_pmc) emu_launch(fdtd_pmc_ghosts, grid, tile, P[0]);
            emu_launch(fdtd_update_e, grid, tile, P[0]);
        }
        if (nsrc > 0)
            emu_launch(fdtd_inject, dim3{(unsigned)((nsrc + EMV_INJECT_THREADS - 1) / EMV_INJECT_THREADS), 1, 1}, dim3{EMV_INJECT_THREADS, 1, 1}, Q[cur], s);
        if (np > 0) emu_launch(fdtd_sample_ports, dim3{(unsigned)np, 1, 1}, dim3{EMV_SAMPLE_THREADS, 1, 1}, Q[cur], s);
    }
    std::vector<double> energy(2 * nd, 0.0);
    emu_launch(fdtd_energy, grid, tile, P[cur], energy.data());
    std::ofstream out(argv[2], std::ios::binary);
    for (int c = 0; c < 3; ++c) {
        put(out, "e" + std::to_string(c), E[cur][c].data(), fl * 4);
        put(out, "h" + std::to_string(c), H[cur][c].data(), fl * 4);
    }
    put(out, "tv", tv.data(), np * steps * 8);
    put(out, "ti", ti.data(), np * steps * 8);
    put(out, "energy", energy.data(), nd * 16);
    return 0;
}
