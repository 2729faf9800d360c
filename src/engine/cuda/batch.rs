//! Host side of a CUDA batch: packs the [`Operator`]s of many jobs into the
//! flat pools and small tables that the kernels of `kernels/fdtd.cu` read.
//! Pure Rust, so it is tested without a GPU.
//!
//! Every design keeps the operator's own layout (padded grid, x fastest);
//! design `d` starts at element `designs[d].off` of each field pool and of
//! each material pool. The CPML memories (`psi`) are stored only over the
//! slab positions of each PML axis (where the profile's `b > 0`).

use super::abi::{FdtdDesign, FdtdPort};
use crate::engine::fdtd::Operator;
use crate::job::Pulse;

/// Thread-block tile of the field kernels (threads along x and y) and the
/// fused kernel's pipeline: `ns` shared-memory stages (planes in flight + 2),
/// `minb` minimum resident blocks per SM asked of the compiler (0: default).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Tile {
    pub tx: usize,
    pub ty: usize,
    pub ns: usize,
    pub minb: usize,
}

impl Default for Tile {
    fn default() -> Tile {
        Tile::DEFAULT
    }
}

impl Tile {
    pub const DEFAULT: Tile = Tile { tx: 32, ty: 8, ns: 4, minb: 0 };
    pub fn threads(&self) -> usize {
        self.tx * self.ty
    }
    /// A benchmark's tile choice: "auto" (the backend's default: the default
    /// tile fitted to the designs, z re-chunked as they finish), "auto/TILE"
    /// (the same starting from TILE) or a fixed TILE. Returns (tile, adapt).
    pub fn parse_choice(s: &str) -> Result<(Tile, bool), String> {
        match (s, s.strip_prefix("auto/")) {
            ("auto", _) => Ok((Tile::DEFAULT, true)),
            (_, Some(t)) => Ok((Tile::parse(t)?, true)),
            _ => Ok((Tile::parse(s)?, false)),
        }
    }
    /// Parse "TXxTY[:NS[:MINB]]", e.g. "32x8" or "32x8:3:4".
    pub fn parse(s: &str) -> Result<Tile, String> {
        let bad = || format!("tile '{s}': expected TXxTY[:STAGES[:MINBLOCKS]], e.g. 32x8 or 32x8:4:3");
        let mut parts = s.split(':');
        let (a, b) = parts.next().unwrap_or("").split_once('x').ok_or_else(bad)?;
        let num = |x: &str| x.trim().parse::<usize>().map_err(|_| bad());
        let mut t = Tile { tx: num(a)?, ty: num(b)?, ..Tile::DEFAULT };
        if let Some(ns) = parts.next() {
            t.ns = num(ns)?;
        }
        if let Some(mb) = parts.next() {
            t.minb = num(mb)?;
        }
        if parts.next().is_some() {
            return Err(bad());
        }
        t.validate()?;
        Ok(t)
    }
    pub fn validate(&self) -> Result<(), String> {
        let n = self.threads();
        if self.tx < 2 || self.ty < 2 || !n.is_power_of_two() || n > 1024 || n < self.tx + self.ty + 3 {
            return Err(format!(
                "tile {self}: both sides >= 2, a power-of-two thread count <= 1024 and at least tx + ty + 3 threads required"
            ));
        }
        if !(3..=8).contains(&self.ns) {
            return Err(format!("tile {self}: 3 to 8 pipeline stages"));
        }
        Ok(())
    }
    /// NVRTC defines for this variant.
    pub fn defines(&self) -> Vec<String> {
        let mut d = vec![format!("-DEMV_TX={}", self.tx), format!("-DEMV_TY={}", self.ty), format!("-DEMV_NS={}", self.ns)];
        if self.minb > 0 {
            d.push(format!("-DEMV_MINB={}", self.minb));
        }
        d
    }
}

impl std::fmt::Display for Tile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}x{}", self.tx, self.ty)?;
        if self.ns != Tile::DEFAULT.ns || self.minb != 0 {
            write!(f, ":{}", self.ns)?;
        }
        if self.minb != 0 {
            write!(f, ":{}", self.minb)?;
        }
        Ok(())
    }
}

/// How a design's per-step source value follows from its pulse (cpu.rs fdtd_inject).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Drive {
    None,
    /// `Vs / len`, as f32.
    Lumped { len: usize },
    /// `g`, as f32.
    Guide,
}

/// Field arrays are aligned to this many elements (128 bytes).
const ALIGN: usize = 32;

/// Elements of a 32-byte DRAM sector: automatic tile origins along x are multiples of it.
const SECTOR: usize = 8;

/// Elements of the compact CPML memory of one design (same for psi_e and psi_h).
pub fn psi_elems(op: &Operator) -> usize {
    let mut tot = 0;
    for c in 0..3 {
        for a in 0..3 {
            if a != c {
                if let Some(s) = slab_count(op, a) {
                    tot += s * op.dims[(a + 1) % 3] * op.dims[(a + 2) % 3];
                }
            }
        }
    }
    tot
}

/// Slab positions along axis a (max of the E and H sides), None without PML.
pub fn slab_count(op: &Operator, a: usize) -> Option<usize> {
    let p = op.pml[a].as_ref()?;
    let ne = p.e_b.iter().filter(|b| **b > 0.0).count();
    let nh = p.h_b.iter().filter(|b| **b > 0.0).count();
    let s = ne.max(nh);
    (s > 0).then_some(s)
}

/// Device bytes a design needs (two field sets, materials, CPML memories:
/// two sets of psi_e and of psi_h, the fused step's ping-pong).
pub fn device_bytes(op: &Operator) -> usize {
    let len = op.len.div_ceil(ALIGN) * ALIGN;
    len * (2 * 6 * 4 + 3) + psi_elems(op) * 4 * 4 + 4096
}

/// Bytes one step must move through device memory, per scheme (each input
/// read once, each output written once; halos, caches and the per-line
/// spacing tables, a few floats per line, not counted).
pub fn step_bytes(ops: &[&Operator], fused: bool) -> f64 {
    let mut b = 0.0;
    for op in ops {
        // fused: read E, H (24), materials (3), write E, H (24); split: H pass reads E, H and
        // writes H (36), E pass reads H, E, materials and writes E (39).
        let per = if fused { 51.0 } else { 75.0 };
        // Each psi element is read and written once per step on each side.
        b += op.len as f64 * per + psi_elems(op) as f64 * 2.0 * 8.0;
    }
    b
}

/// The packed batch.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    pub designs: Vec<FdtdDesign>,
    pub blocks_per_design: Vec<usize>,
    /// The tile the plan was packed for.
    pub tile: Tile,
    /// Per design, what the lean kernel's block test needs (lean_block).
    pub lean: Vec<LeanInfo>,
    /// Elements per component pool (and bytes per material pool).
    pub field_len: usize,
    /// Elements of each psi pool.
    pub psi_len: usize,
    pub mat: [Vec<u8>; 3],
    pub ca: Vec<f32>,
    pub cb: Vec<f32>,
    pub eps: Vec<f32>,
    pub pe_b: Vec<f32>,
    pub pe_c: Vec<f32>,
    pub pe_k: Vec<f32>,
    pub ph_b: Vec<f32>,
    pub ph_c: Vec<f32>,
    pub ph_k: Vec<f32>,
    pub slab_e: Vec<i32>,
    pub slab_h: Vec<i32>,
    /// Per design and axis (from `FdtdDesign::line_off`), one entry per padded
    /// position: the operator's `inv_e`, `inv_h`, `rel_e`, `rel_h`.
    pub inv_e: Vec<f32>,
    pub inv_h: Vec<f32>,
    pub rel_e: Vec<f32>,
    pub rel_h: Vec<f32>,
    pub ports: Vec<FdtdPort>,
    /// Per design, per port of its job: index into `ports` (None: the port samples nothing).
    pub port_slot: Vec<Vec<Option<usize>>>,
    pub t_idx0: Vec<i32>,
    pub t_idx1: Vec<i32>,
    pub t_idx2: Vec<i32>,
    pub t_w: Vec<f64>,
    pub src_design: Vec<i32>,
    pub src_comp: Vec<i32>,
    pub src_idx: Vec<i32>,
    pub src_coef: Vec<f32>,
    pub drive: Vec<Drive>,
}

/// Where the tiles of a design's xy plane start (FdtdDesign::org): `Auto`
/// lets LeanInfo choose per design, `Fixed([ox, oy])` shifts every design's
/// tiles by that much (`[0, 0]`: tiles at multiples of the tile size, as
/// before origins existed; a benchmark's and the kernel emulation's choice).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Origin {
    #[default]
    Auto,
    Fixed([usize; 2]),
}

impl Origin {
    /// "auto" or "X,Y".
    pub fn parse(s: &str) -> Result<Origin, String> {
        if s == "auto" {
            return Ok(Origin::Auto);
        }
        let bad = || format!("origin '{s}': expected auto or X,Y (tile origin in cells, e.g. 0,0 or 9,1)");
        let (a, b) = s.split_once(',').ok_or_else(bad)?;
        let num = |x: &str| x.trim().parse::<usize>().map_err(|_| bad());
        Ok(Origin::Fixed([num(a)?, num(b)?]))
    }
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Auto => write!(f, "auto"),
            Origin::Fixed([x, y]) => write!(f, "{x},{y}"),
        }
    }
}

/// Per design: which padded positions along each axis are free of CPML on
/// both sides (E node and H half node), the PMC faces of x and y, and the
/// tiling of the xy plane (origin and tile counts) with the tiles that may
/// take the lean step.
#[derive(Debug, Clone, Default)]
pub struct LeanInfo {
    pub clean: [Vec<bool>; 3],
    pub pmc_xy: bool,
    /// Tile origin along x and y (FdtdDesign::org; at most the tile's size - 2).
    pub org: [usize; 2],
    /// Tiles along x and y (FdtdDesign::tiles).
    pub tiles: [usize; 2],
    /// Per tile of the xy plane (of the plan's tile, x fastest): whether it passes lean_xy.
    pub xy: Vec<bool>,
    /// How many do.
    pub xy_tiles: usize,
}

impl LeanInfo {
    /// One axis (0: x, 1: y) of lean_xy: the tile of `t` positions starting
    /// at padded position `lo`, its halo position lo-1 included, is free of
    /// CPML, and inside the update ranges when x or y has a PMC face.
    fn lean_axis(&self, a: usize, lo: usize, t: usize) -> bool {
        let n = self.clean[a].len();
        // n_a = padded extent - 2.
        (lo.saturating_sub(1)..(lo + t).min(n)).all(|q| self.clean[a][q]) && (!self.pmc_xy || (lo >= 2 && lo + t - 1 <= n - 2))
    }

    /// The x/y part of Plan::lean_block for the tile at (x0, y0).
    pub fn lean_xy(&self, t: Tile, x0: usize, y0: usize) -> bool {
        self.lean_axis(0, x0, t.tx) && self.lean_axis(1, y0, t.ty)
    }

    /// Along axis a with tiles of `t` positions from origin `org`: per tile,
    /// whether it may take the lean step on this axis. The first tile is
    /// narrower when org > 0 ([0, t - org)) and never lean: the lean step
    /// assumes whole tiles (kernels/fdtd_lean.cuh).
    fn axis_tiles(&self, a: usize, t: usize, org: usize) -> Vec<bool> {
        let n = self.clean[a].len();
        (0..(n + org).div_ceil(t)).map(|i| i * t >= org && self.lean_axis(a, i * t - org, t)).collect()
    }

    /// Padded positions [start, end) of tile i along axis a (fdtd.cu load_ctx).
    pub fn tile_span(&self, a: usize, t: usize, i: usize) -> (usize, usize) {
        let n = self.clean[a].len();
        ((i * t).saturating_sub(self.org[a]), ((i + 1) * t - self.org[a]).min(n))
    }

    pub fn new(op: &Operator, tile: Tile) -> LeanInfo {
        LeanInfo::with_origin(op, tile, Origin::Auto)
    }

    /// With `Origin::Auto`, the x origin whose tiling costs least by
    /// choose_zchunk's model (a tile-plane costs 4, LEAN_QUARTERS on the lean
    /// step, which only the lean z range takes): a CPML slab of 10 cells then
    /// fills one tile column of 32 instead of spilling into a second (the
    /// 256^3 box: 7 of 9 tile columns lean instead of 6). Only multiples of
    /// SECTOR: a tile whose rows start off the 32-byte sector grid reads a
    /// sector more per row (measured on one H100: origin 9 made the 256^3 and
    /// 320^3 CPML boxes 5-8 % slower, origin 16 1-8 % faster from 320^3 down
    /// to 128^3). The y origin stays 0: shifting it gained nothing beyond the
    /// x shift on those boxes and cost the shipped low-pass 1 %. Ties keep the
    /// smaller origin, so designs without CPML along x keep origin 0.
    pub fn with_origin(op: &Operator, tile: Tile, origin: Origin) -> LeanInfo {
        let mut li = LeanInfo { clean: cpml_free(op), pmc_xy: op.pmc[0].iter().chain(&op.pmc[1]).any(|&x| x), ..LeanInfo::default() };
        let ts = [tile.tx, tile.ty];
        li.org = match origin {
            // At most t-2: a first tile one position wide would leave the
            // second tile's halo on the ghost position 0, whose PMC mirror
            // the fused step's halo work does not compute (it takes H there as 0).
            Origin::Fixed(o) => [(o[0] % ts[0]).min(ts[0] - 2), (o[1] % ts[1]).min(ts[1] - 2)],
            Origin::Auto => match lean_z_range(&li, op.n[2]) {
                None => [0, 0],
                Some((l, r)) => {
                    // Per origin: (tiles, lean tiles); a tile's lean test is separable in x and y.
                    let count = |f: Vec<bool>| (f.len() as u64, f.iter().filter(|&&x| x).count() as u64);
                    let (ny, ly) = count(li.axis_tiles(1, ts[1], 0));
                    let (zall, zlean) = (op.dims[2] as u64, (r - l) as u64);
                    let mut best = (u64::MAX, 0);
                    for ox in (0..ts[0] - 1).step_by(SECTOR) {
                        let (nx, lx) = count(li.axis_tiles(0, ts[0], ox));
                        let cost = 4 * nx * ny * zall - (4 - LEAN_QUARTERS) * lx * ly * zlean;
                        if cost < best.0 {
                            best = (cost, ox);
                        }
                    }
                    [best.1, 0]
                }
            },
        };
        let fx = li.axis_tiles(0, ts[0], li.org[0]);
        let fy = li.axis_tiles(1, ts[1], li.org[1]);
        li.tiles = [fx.len(), fy.len()];
        li.xy = fy.iter().flat_map(|&y| fx.iter().map(move |&x| x && y)).collect();
        li.xy_tiles = li.xy.iter().filter(|&&x| x).count();
        li
    }
}

/// Per axis and padded position: free of CPML on both sides (E node and H
/// half node; LeanInfo::clean, slim.rs lean blocks).
pub fn cpml_free(op: &Operator) -> [Vec<bool>; 3] {
    std::array::from_fn(|a| {
        (0..op.dims[a])
            .map(|q| match &op.pml[a] {
                None => true,
                // Padded q is node q-1 (E, q = 1..n+1) and half node q-1 (H, q = 1..n);
                // the kernels test b > 0 as the slab tables do (Plan::new).
                Some(p) => {
                    let e = q >= 1 && q <= op.n[a] + 1 && p.e_b[q - 1] > 0.0;
                    let h = q >= 1 && q <= op.n[a] && p.h_b[q - 1] > 0.0;
                    !e && !h
                }
            })
            .collect()
    })
}

/// The design's lean z range (lean_z_range) when some xy tile may take the
/// lean step, else None: what set_segments and choose_zchunk cut and cost by.
fn tile_lean_range(li: &LeanInfo, n_z: usize) -> Option<(usize, usize)> {
    if li.xy_tiles > 0 { lean_z_range(li, n_z) } else { None }
}

/// The planes a lean chunk may own along z: [L, R) with every plane of
/// [L-1, R) free of CPML and inside every component's range (L >= 2,
/// R <= n_z + 1; Plan::lean_block), the longest such run; None if shorter than 2.
pub fn lean_z_range(li: &LeanInfo, n_z: usize) -> Option<(usize, usize)> {
    let c = &li.clean[2];
    let mut best: Option<(usize, usize)> = None;
    let mut q = 1;
    while q <= n_z {
        if !c[q] {
            q += 1;
            continue;
        }
        let a = q;
        while q <= n_z && c[q] {
            q += 1;
        }
        // Clean planes a..q-1 (inside 1..=n_z): owned planes a+1..q.
        let (l, r) = ((a + 1).max(2), q.min(n_z + 1));
        if r >= l + 2 && best.is_none_or(|(bl, br)| r - l > br - bl) {
            best = Some((l, r));
        }
    }
    best
}

/// Set `ds`'s chunks along z (zcut, zn, zlen, nchunks) for chunks of about
/// `zchunk` planes: the lean z range (lean_z_range) gets chunks of its own
/// when some xy tile may take the lean step,
/// so that its tiles' blocks may all take the lean step; the planes below
/// and above it (CPML, ghost planes) form the other two segments. Each
/// segment of length m has ceil(m / zchunk) chunks of ceil(m / count) planes.
/// The segments are kept only where the model of choose_zchunk says they
/// pay: a design with few lean tiles or a short lean range (a 3D microstrip
/// filter: CPML on five faces, 23 planes) runs faster in one segment, its
/// extra chunk ends (halo plane, set-up) costing more than the lean blocks save.
pub fn set_segments(ds: &mut FdtdDesign, li: &LeanInfo, zchunk: usize) {
    let zchunk = zchunk.max(1);
    let dz = ds.dims[2] as usize;
    // Without a tile that may take the lean step, one segment (no extra chunk ends).
    let lean = tile_lean_range(li, ds.n[2] as usize);
    let one = fill_segments(ds, dz, dz, zchunk);
    if let Some((l, r)) = lean {
        let three = fill_segments(ds, l, r, zchunk);
        if segment_cost(&three, li, (l, r)) < segment_cost(&one, li, (l, r)) {
            *ds = three;
            return;
        }
    }
    *ds = one;
}

/// `ds` with segments [0, l), [l, r), [r, dims z) in chunks of about `zchunk` planes.
fn fill_segments(ds: &FdtdDesign, l: usize, r: usize, zchunk: usize) -> FdtdDesign {
    let mut ds = *ds;
    let dz = ds.dims[2] as usize;
    let bounds = [(0, l), (l, r), (r, dz)];
    ds.zcut = [l as i32, r as i32];
    ds.zchunk = zchunk as i32;
    for (s, &(a, b)) in bounds.iter().enumerate() {
        let m = b - a;
        let count = m.div_ceil(zchunk);
        ds.zn[s] = count as i32;
        ds.zlen[s] = if count == 0 { 1 } else { m.div_ceil(count) as i32 };
    }
    ds.nchunks = ds.zn.iter().sum();
    ds
}

/// Cost of one block of planes [z0, z1) in quarter planes (choose_zchunk's
/// model): its planes + 2 (the halo plane and about one plane's worth of
/// set-up), times LEAN_QUARTERS / 4 on the lean step.
fn block_cost(z0: usize, z1: usize, lean: bool) -> u64 {
    (z1 - z0 + 2) as u64 * if lean { LEAN_QUARTERS } else { 4 }
}

/// The blocks' cost of a chunking (block_cost): a block takes the lean step
/// when its tile may and its planes lie in the lean range `lean`.
fn segment_cost(ds: &FdtdDesign, li: &LeanInfo, lean: (usize, usize)) -> u64 {
    let lean_tiles = li.xy_tiles as u64;
    let other = li.xy.len() as u64 - lean_tiles;
    (0..ds.nchunks as usize)
        .map(|ch| {
            let (z0, z1) = chunk_planes(ds, ch);
            let mid = z0 >= lean.0 && z1 <= lean.1;
            lean_tiles * block_cost(z0, z1, mid) + other * block_cost(z0, z1, false)
        })
        .sum()
}

/// Planes [z0, z1) of chunk `ch` of `ds` (fdtd.cu load_ctx).
pub fn chunk_planes(ds: &FdtdDesign, ch: usize) -> (usize, usize) {
    let (mut base, mut end, mut len, mut k) = (0usize, ds.zcut[0] as usize, ds.zlen[0] as usize, ch);
    if k >= ds.zn[0] as usize {
        k -= ds.zn[0] as usize;
        (base, end, len) = (ds.zcut[0] as usize, ds.zcut[1] as usize, ds.zlen[1] as usize);
        if k >= ds.zn[1] as usize {
            k -= ds.zn[1] as usize;
            (base, end, len) = (ds.zcut[1] as usize, ds.dims[2] as usize, ds.zlen[2] as usize);
        }
    }
    let z0 = base + k * len;
    (z0, (z0 + len).min(end))
}

fn i32_of(x: usize, what: &str) -> Result<i32, String> {
    i32::try_from(x).map_err(|_| format!("{what} = {x} exceeds the 32-bit range of the CUDA kernels"))
}

impl Plan {
    /// Pack `ops` (design d driving port `drives[d]`) for tiles `tile` and
    /// chunks of `zchunk` planes (the fused kernel needs >= 2: chunk 0 owns
    /// planes 0 and 1).
    pub fn new(ops: &[&Operator], drives: &[usize], tile: Tile, zchunk: usize) -> Result<Plan, String> {
        Plan::with_origin(ops, drives, tile, zchunk, Origin::Auto)
    }

    /// [`Plan::new`] with the tiles' origin chosen by `origin` (LeanInfo::with_origin).
    pub fn with_origin(ops: &[&Operator], drives: &[usize], tile: Tile, zchunk: usize, origin: Origin) -> Result<Plan, String> {
        tile.validate()?;
        if zchunk < 1 {
            return Err("zchunk 0".into());
        }
        if drives.len() != ops.len() {
            return Err(format!("{} drives for {} designs", drives.len(), ops.len()));
        }
        let mut pl = Plan { tile, ..Plan::default() };
        let mut off = 0usize;
        for (d, op) in ops.iter().enumerate() {
            i32_of(op.len, "padded cells of one design")?;
            let li = LeanInfo::with_origin(op, tile, origin);
            let mut ds = FdtdDesign {
                off: off as i64,
                psi_off: [-1; 9],
                n: [0; 3],
                dims: [0; 3],
                tiles: [li.tiles[0] as i32, li.tiles[1] as i32],
                zchunk: zchunk as i32,
                nchunks: 0,
                coef_off: pl.ca.len() as i32,
                ncoef: op.ca.len() as i32,
                pmc: 0,
                prof_off: [-1; 3],
                slab_n: [0; 3],
                db: op.db,
                line_off: [0; 3],
                zcut: [0; 2],
                zn: [0; 3],
                zlen: [1; 3],
                org: [li.org[0] as i32, li.org[1] as i32],
            };

            for a in 0..3 {
                ds.n[a] = i32_of(op.n[a], "cells")?;
                ds.dims[a] = op.dims[a] as i32;
                for s in 0..2 {
                    if op.pmc[a][s] {
                        ds.pmc |= 1 << (2 * a + s);
                    }
                }
            }
            set_segments(&mut ds, &li, zchunk);
            for a in 0..3 {
                ds.line_off[a] = i32_of(pl.inv_e.len(), "per-line table entries")?;
                pl.inv_e.extend_from_slice(&op.inv_e[a]);
                pl.inv_h.extend_from_slice(&op.inv_h[a]);
                pl.rel_e.extend_from_slice(&op.rel_e[a]);
                pl.rel_h.extend_from_slice(&op.rel_h[a]);
            }
            pl.ca.extend_from_slice(&op.ca);
            pl.cb.extend_from_slice(&op.cb);
            pl.eps.extend_from_slice(&op.eps);
            // CPML profiles: n+1 entries reserved for both sides (H has n, padded).
            for a in 0..3 {
                let (Some(p), Some(sn)) = (op.pml[a].as_ref(), slab_count(op, a)) else { continue };
                let n = op.n[a];
                ds.prof_off[a] = pl.pe_b.len() as i32;
                ds.slab_n[a] = sn as i32;
                pl.pe_b.extend_from_slice(&p.e_b);
                pl.pe_c.extend_from_slice(&p.e_c);
                pl.pe_k.extend_from_slice(&p.e_kinv);
                pl.ph_b.extend(p.h_b.iter().copied().chain([0.0]));
                pl.ph_c.extend(p.h_c.iter().copied().chain([0.0]));
                pl.ph_k.extend(p.h_kinv.iter().copied().chain([1.0]));
                let mut k = 0;
                for x in 0..=n {
                    pl.slab_e.push(if p.e_b[x] > 0.0 {
                        k += 1;
                        k - 1
                    } else {
                        -1
                    });
                }
                let mut k = 0;
                for x in 0..=n {
                    pl.slab_h.push(if x < n && p.h_b[x] > 0.0 {
                        k += 1;
                        k - 1
                    } else {
                        -1
                    });
                }
            }
            for c in 0..3 {
                for a in 0..3 {
                    if a != c && ds.prof_off[a] >= 0 {
                        ds.psi_off[c * 3 + a] = pl.psi_len as i64;
                        pl.psi_len += ds.slab_n[a] as usize * op.dims[(a + 1) % 3] * op.dims[(a + 2) % 3];
                    }
                }
            }
            // Ports (cpu.rs fdtd_sample_ports) and the driven port's sources (fdtd_inject).
            let mut slots = vec![];
            for pi in 0..op.lumped.len() {
                let mut port = FdtdPort { design: d as i32, term_off: pl.t_idx0.len() as i32, ..Default::default() };
                if let Some(l) = &op.lumped[pi] {
                    let c = l.comp;
                    let (a, b) = ((c + 1) % 3, (c + 2) % 3);
                    port.kind = 0;
                    port.comp_e = c as i32;
                    port.dl = l.dl;
                    port.d_a = l.loop_d[0];
                    port.d_b = l.loop_d[1];
                    port.mid = i32_of(l.mid, "port index")?;
                    port.s_a = op.stride[a] as i32;
                    port.s_b = op.stride[b] as i32;
                    for (&p, &w) in l.edges.iter().zip(&l.w) {
                        pl.t_idx0.push(p as i32);
                        pl.t_idx1.push(0);
                        pl.t_idx2.push(0);
                        pl.t_w.push(w);
                    }
                    port.n_terms = l.edges.len() as i32;
                } else if let Some(w) = &op.guides[pi] {
                    port.kind = 1;
                    port.comp_e = w.comp_e as i32;
                    port.comp_h = w.comp_h as i32;
                    port.i_sign = w.i_sign;
                    for m in 0..w.v_idx.len() {
                        pl.t_idx0.push(w.v_idx[m] as i32);
                        pl.t_idx1.push(w.h_lo[m] as i32);
                        pl.t_idx2.push(w.h_hi[m] as i32);
                        pl.t_w.push(w.weight[m]);
                    }
                    port.n_terms = w.v_idx.len() as i32;
                } else {
                    slots.push(None);
                    continue;
                }
                slots.push(Some(pl.ports.len()));
                pl.ports.push(port);
            }
            pl.port_slot.push(slots);
            let mut drive = Drive::None;
            let dp = drives[d];
            if dp < op.lumped.len() {
                if let Some(l) = &op.lumped[dp] {
                    for (&p, &src) in l.edges.iter().zip(&l.src) {
                        pl.src_design.push(d as i32);
                        pl.src_comp.push(l.comp as i32);
                        pl.src_idx.push(p as i32);
                        // e - src*vs == e + (-src)*vs exactly.
                        pl.src_coef.push(-src);
                    }
                    drive = Drive::Lumped { len: l.len };
                }
                if let Some(w) = &op.guides[dp] {
                    for (&p, &amp) in w.src_idx.iter().zip(&w.src_amp) {
                        pl.src_design.push(d as i32);
                        pl.src_comp.push(w.comp_e as i32);
                        pl.src_idx.push(p as i32);
                        pl.src_coef.push(amp);
                    }
                    drive = Drive::Guide;
                }
            }
            pl.drive.push(drive);
            pl.blocks_per_design.push(ds.tiles[0] as usize * ds.tiles[1] as usize * ds.nchunks as usize);
            pl.designs.push(ds);
            pl.lean.push(li);
            off += op.len.div_ceil(ALIGN) * ALIGN;
        }
        pl.field_len = off;
        pl.mat = [vec![0u8; off], vec![0u8; off], vec![0u8; off]];
        for (op, ds) in ops.iter().zip(&pl.designs) {
            for c in 0..3 {
                pl.mat[c][ds.off as usize..ds.off as usize + op.len].copy_from_slice(&op.mat[c]);
            }
        }
        Ok(pl)
    }

    /// (design, block within design) pairs of the designs still running.
    pub fn block_table(&self, active: &[bool]) -> Vec<i32> {
        let mut t = vec![];
        for (d, &nb) in self.blocks_per_design.iter().enumerate() {
            if active[d] {
                for b in 0..nb {
                    t.push(d as i32);
                    t.push(b as i32);
                }
            }
        }
        t
    }

    /// Whether block `lb` of design `d` may run the lean kernel
    /// (kernels/fdtd_lean.cuh): every position it computes, the recomputed
    /// plane z0-1 and the halo column and row included, is free of CPML;
    /// its planes lie inside every component's z range (no ghost plane, so
    /// z0 >= 2 and z1 <= n_z + 1); and where x or y has a PMC face, its
    /// columns lie inside every component's x and y ranges (no PMC ghost).
    pub fn lean_block(&self, d: usize, lb: usize) -> bool {
        let (ds, li) = (&self.designs[d], &self.lean[d]);
        let tpp = ds.tiles[0] as usize * ds.tiles[1] as usize;
        let (ch, r) = (lb / tpp, lb % tpp);
        let (z0, z1) = chunk_planes(ds, ch);
        let nz = ds.n[2] as usize;
        li.xy[r] && z0 >= 2 && z1 <= nz + 1 && (z0 - 1..z1).all(|q| li.clean[2][q])
    }

    /// [`Plan::block_table`] with the blocks that may take the lean step
    /// flagged (`abi::LEAN_FLAG` on the local block number) when `lean`:
    /// (table, flagged blocks).
    pub fn block_tables(&self, active: &[bool], lean: bool) -> (Vec<i32>, usize) {
        let mut t = self.block_table(active);
        let mut n = 0;
        for e in t.chunks_mut(2) {
            if lean && self.lean_block(e[0] as usize, e[1] as usize) {
                e[1] |= super::abi::LEAN_FLAG;
                n += 1;
            }
        }
        (t, n)
    }

    /// Re-chunk every design along z (same layout, same tiles): the block
    /// table then follows. Used when few designs remain, so that their planes
    /// spread over more blocks.
    pub fn set_zchunk(&mut self, zchunk: usize) {
        let zchunk = zchunk.max(1);
        for ((ds, nb), li) in self.designs.iter_mut().zip(self.blocks_per_design.iter_mut()).zip(&self.lean) {
            set_segments(ds, li, zchunk);
            *nb = ds.tiles[0] as usize * ds.tiles[1] as usize * ds.nchunks as usize;
        }
    }

    /// Source values of steps `n0..n0+k` for every running design (zero for
    /// the others), `[d * stride + s]`, computed exactly as cpu.rs `run_from`
    /// and `fdtd_inject` do; the designs in parallel (a GA generation's
    /// launches of a thousand steps each need about a hundred thousand pulse values).
    pub fn source_values(&self, pulses: &[Pulse], dts: &[f64], n0: usize, k: usize, stride: usize, running: &[bool]) -> Vec<f32> {
        use rayon::prelude::*;
        let mut g = vec![0.0f32; self.designs.len() * stride];
        g.par_chunks_mut(stride.max(1)).enumerate().filter(|(d, _)| running.get(*d).copied().unwrap_or(true)).for_each(|(d, row)| {
            for (s, x) in row.iter_mut().enumerate().take(k) {
                let v = pulses[d].value(((n0 + s) as f64 + 0.5) * dts[d]);
                *x = match self.drive[d] {
                    Drive::None => 0.0,
                    Drive::Lumped { len } => (v / len as f64) as f32,
                    Drive::Guide => v as f32,
                };
            }
        });
        g
    }
}

/// Cost of a lean block in quarters of a general block of the same planes.
/// Alone the lean step needs half the instructions and time per cell (H100,
/// docs/BENCHMARKS.md), but mixed with general blocks in one launch it gains
/// less; of 2, 3 and 4, 3 gave the best box and population (2026-11-26).
const LEAN_QUARTERS: u64 = 3;

/// Designs whose xy plane takes at least this many tiles are "wide" (see
/// WIDE_ZCHUNK).
const WIDE_TILES: usize = 64;

/// Longest z-chunk of a batch whose cells lie mostly in wide designs.
/// Neighbouring blocks of a wide plane share their halo rows through L2
/// only while they work on nearby planes; blocks of long chunks drift apart
/// (lean blocks and the short edge tiles run ahead), and the shared rows are
/// read from DRAM twice. Chunks of at most 12 planes bound the drift. H100,
/// kernel Gcells/s, old choice -> this rule (docs/BENCHMARKS.md,
/// 2026-11-27): 256^3 PEC box 30.2 (64 planes) -> 36.9 (12), CPML boxes
/// 128^3 15.3 (15) -> 15.2 (10), 192^3 21.9 (18) -> 22.8 (10), 256^3
/// 24.0 (30) -> 26.4 (12), 320^3 24.2 (38) -> 28.3 (12). Slim designs keep the model's choice: a
/// population of 64 guides of 2 tiles a plane runs 34.3 at its 50 planes
/// and 32.5 at 12 (each chunk's prologue and recomputed plane weigh more
/// than the little halo they share).
const WIDE_ZCHUNK: usize = 12;

/// Planes per z-chunk for a batch: balances the waves of blocks on the
/// device (`resident` blocks at a time) against the extra halo plane each
/// chunk recomputes. The blocks are dispatched in table order to the first
/// free slot, as the GPU's block scheduler does; a block costs block_cost.
/// The chunking whose simulated makespan is shortest wins. Chunkings of more
/// than 16 waves are not tried, unless the batch needs more (a large
/// generation of 3D designs): then those of at most the fewest blocks any
/// chunking gives. A batch whose cells lie mostly in wide designs
/// (WIDE_TILES) takes chunks of at most WIDE_ZCHUNK planes.
pub fn choose_zchunk(ops: &[&Operator], tile: Tile, origin: Origin, resident: usize) -> usize {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let resident = resident.max(1);
    let max_z = ops.iter().map(|o| o.dims[2]).max().unwrap_or(2).max(2);
    // Per design: its chunking inputs and which xy tiles may take the lean step.
    let info: Vec<(LeanInfo, FdtdDesign)> = ops
        .iter()
        .map(|o| (LeanInfo::with_origin(o, tile, origin), FdtdDesign { dims: o.dims.map(|x| x as i32), n: o.n.map(|x| x as i32), ..Default::default() }))
        .collect();
    // Each design's lean z range (lean_block's test, whichever segments set_segments keeps).
    let ranges: Vec<(usize, usize)> = info.iter().map(|(li, ds)| tile_lean_range(li, ds.n[2] as usize).unwrap_or((usize::MAX, 0))).collect();
    let chunking = |l: usize| -> Vec<FdtdDesign> {
        info.iter()
            .map(|(li, ds)| {
                let mut ds = *ds;
                set_segments(&mut ds, li, l);
                ds
            })
            .collect()
    };
    let block_count = |chunked: &[FdtdDesign]| -> usize { chunked.iter().zip(&info).map(|(ds, (li, _))| ds.nchunks as usize * li.xy.len()).sum() };
    // (li.xy: a flag per xy tile of the design's plane)
    let cells: usize = ops.iter().map(|o| o.len).sum();
    let wide: usize = ops.iter().zip(&info).filter(|(_, (li, _))| li.xy.len() >= WIDE_TILES).map(|(o, _)| o.len).sum();
    let top = if 2 * wide >= cells.max(1) { max_z.min(WIDE_ZCHUNK) } else { max_z.min(512) };
    // The longest chunks give the fewest blocks any chunking can.
    let cap = (16 * resident).max(block_count(&chunking(top)));
    let mut best = (u64::MAX, top);
    let mut slots = BinaryHeap::with_capacity(resident);
    let mut last_counts: Vec<[i32; 3]> = vec![];
    for l in 2..=top {
        let chunked = chunking(l);
        if block_count(&chunked) > cap {
            continue;
        }
        // The chunk counts fix the chunking (set_segments): an l that changes none of them is no new candidate.
        let counts: Vec<[i32; 3]> = chunked.iter().map(|ds| ds.zn).collect();
        if counts == last_counts {
            continue;
        }
        last_counts = counts;
        slots.clear();
        slots.extend(std::iter::repeat_n(Reverse(0u64), resident));
        for ((ds, (li, _)), &(lo, hi)) in chunked.iter().zip(&info).zip(&ranges) {
            for ch in 0..ds.nchunks as usize {
                let (z0, z1) = chunk_planes(ds, ch);
                let mid = z0 >= lo && z1 <= hi;
                for &lean_xy in &li.xy {
                    let c = block_cost(z0, z1, mid && lean_xy);
                    let Reverse(t) = slots.pop().unwrap_or(Reverse(0));
                    slots.push(Reverse(t + c));
                }
            }
        }
        let makespan = slots.iter().map(|r| r.0).max().unwrap_or(0);
        if makespan < best.0 {
            best = (makespan, l);
        }
    }
    best.1
}

/// The tile of `tile`'s width that covers the designs' xy planes with the
/// fewest idle threads: thin designs (a 2.5D run has 3 padded rows) waste
/// most of an 8-row tile. Keeps `tile` unless a shorter one idles at least
/// a fifth fewer thread slots.
pub fn fit_tile(ops: &[&Operator], tile: Tile) -> Tile {
    let slots = |t: Tile| -> usize { ops.iter().map(|o| o.dims[0].div_ceil(t.tx) * t.tx * o.dims[1].div_ceil(t.ty) * t.ty).sum() };
    let mut best = (slots(tile), tile);
    let mut t = tile;
    while t.ty > 2 {
        t.ty /= 2;
        if t.validate().is_err() {
            break;
        }
        let s = slots(t);
        if (s as f64) < 0.8 * best.0 as f64 {
            best = (s, t);
        }
    }
    best.1
}

/// The error of a design that cannot fit the device alone (split_to_fit's Err).
pub fn too_big(label: &str, need: usize, device: &str, budget: usize) -> crate::engine::EngineError {
    let gib = |b: usize| b as f64 / (1u64 << 30) as f64;
    crate::engine::EngineError::Cuda(format!("design '{label}' needs {:.2} GiB of device memory, {device} can give {:.2} GiB", gib(need), gib(budget)))
}

/// The jobs of a batch in sub-batches that fit `budget` bytes each (in order).
/// Err names the first design that cannot fit alone.
pub fn split_to_fit(needs: &[usize], budget: usize) -> Result<Vec<std::ops::Range<usize>>, usize> {
    let mut out = vec![];
    let mut start = 0;
    let mut acc = 0usize;
    for (i, &b) in needs.iter().enumerate() {
        if b > budget {
            return Err(i);
        }
        if acc + b > budget {
            out.push(start..i);
            start = i;
            acc = 0;
        }
        acc += b;
    }
    if start < needs.len() {
        out.push(start..needs.len());
    }
    Ok(out)
}

/// Assign jobs to `gpus` devices, balancing `cost` (longest first, to the least loaded).
pub fn spread(cost: &[f64], gpus: usize) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..cost.len()).collect();
    order.sort_by(|a, b| cost[*b].partial_cmp(&cost[*a]).unwrap_or(std::cmp::Ordering::Equal));
    let mut load = vec![0.0f64; gpus.max(1)];
    let mut out = vec![vec![]; gpus.max(1)];
    for j in order {
        let g = (0..load.len()).min_by(|a, b| load[*a].total_cmp(&load[*b])).unwrap_or(0);
        load[g] += cost[j];
        out[g].push(j);
    }
    for o in &mut out {
        o.sort();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::*;

    fn job(n: [usize; 3], bnd: [[Boundary; 2]; 3], pml: [[usize; 2]; 3]) -> SimJob {
        let mut j = crate::bench::box_job(4, 10);
        j.mesh = Mesh::uniform(n, [1e-3; 3], [0.0; 3]);
        j.cell_mat = vec![0; j.mesh.cells()].into();
        j.boundaries = bnd;
        j.pml = pml;
        j.ports = vec![Port { name: "p".into(), kind: PortKind::Lumped { axis: Axis::Z, start: [n[0] / 2, n[1] / 2, n[2] / 2 - 1], len: 2, r_ohm: 50.0 } }];
        j
    }

    #[test]
    fn plan_packs_designs_with_their_own_layout() {
        let a = job([10, 7, 12], [[Boundary::Pmc; 2], [Boundary::Pec; 2], [Boundary::Absorbing; 2]], [[0, 0], [0, 0], [3, 4]]);
        let b = crate::bench::population_jobs(1, 8000, 10).remove(0);
        let c = crate::bench::box_job(20, 10);
        let ops: Vec<Operator> = [&a, &b, &c].iter().map(|j| Operator::new(j).unwrap()).collect();
        let refs: Vec<&Operator> = ops.iter().collect();
        let tile = Tile { tx: 8, ty: 4, ..Tile::DEFAULT };
        let pl = Plan::new(&refs, &[0, 0, 0], tile, 5).unwrap();
        for (d, op) in ops.iter().enumerate() {
            let ds = &pl.designs[d];
            assert_eq!(ds.off as usize % ALIGN, 0);
            if d + 1 < ops.len() {
                assert!(pl.designs[d + 1].off as usize >= ds.off as usize + op.len);
            }
            for c in 0..3 {
                assert_eq!(&pl.mat[c][ds.off as usize..ds.off as usize + op.len], &op.mat[c][..]);
            }
            let co = ds.coef_off as usize;
            assert_eq!(&pl.ca[co..co + op.ca.len()], &op.ca[..]);
            assert_eq!(ds.ncoef as usize, op.ca.len());
            // Slab numbering follows b > 0 exactly and counts up from 0.
            for a in 0..3 {
                match &op.pml[a] {
                    None => assert_eq!(ds.prof_off[a], -1),
                    Some(p) => {
                        let o = ds.prof_off[a] as usize;
                        let mut k = 0;
                        for x in 0..=op.n[a] {
                            assert_eq!(pl.slab_e[o + x] >= 0, p.e_b[x] > 0.0);
                            if pl.slab_e[o + x] >= 0 {
                                assert_eq!(pl.slab_e[o + x], k);
                                k += 1;
                            }
                            assert_eq!(pl.pe_b[o + x], p.e_b[x]);
                            if x < op.n[a] {
                                assert_eq!(pl.slab_h[o + x] >= 0, p.h_b[x] > 0.0);
                                assert_eq!(pl.ph_k[o + x], p.h_kinv[x]);
                            }
                        }
                        assert!(k <= ds.slab_n[a]);
                    }
                }
            }
            // Every tile and chunk appears once in the block table.
            let nb = (ds.tiles[0] * ds.tiles[1] * ds.nchunks) as usize;
            assert_eq!(pl.blocks_per_design[d], nb);
            assert!(ds.tiles[0] as usize * tile.tx >= op.dims[0] && (ds.tiles[0] as usize - 1) * tile.tx < op.dims[0]);
            assert!(ds.nchunks as usize * 5 >= op.dims[2]);
        }
        // Per-line tables: every axis of every design, in order.
        for (d, op) in ops.iter().enumerate() {
            for a in 0..3 {
                let o = pl.designs[d].line_off[a] as usize;
                assert_eq!(&pl.inv_h[o..o + op.dims[a]], &op.inv_h[a][..]);
                assert_eq!(&pl.inv_e[o..o + op.dims[a]], &op.inv_e[a][..]);
                assert_eq!(&pl.rel_e[o..o + op.dims[a]], &op.rel_e[a][..]);
            }
        }
        // psi regions are disjoint and inside the pool.
        let mut regions = vec![];
        for (d, op) in ops.iter().enumerate() {
            let ds = &pl.designs[d];
            for c in 0..3 {
                for a in 0..3 {
                    let o = ds.psi_off[c * 3 + a];
                    assert_eq!(o >= 0, a != c && op.pml[a].is_some(), "design {d} psi ({c},{a})");
                    if o >= 0 {
                        regions.push((o as usize, ds.slab_n[a] as usize * op.dims[(a + 1) % 3] * op.dims[(a + 2) % 3]));
                    }
                }
            }
        }
        regions.sort();
        for w in regions.windows(2) {
            assert!(w[0].0 + w[0].1 <= w[1].0);
        }
        let last = regions.last().unwrap();
        assert_eq!(last.0 + last.1, pl.psi_len);
        assert_eq!(pl.psi_len, ops.iter().map(psi_elems).sum::<usize>());
        // Ports: the lumped port of `a`, the two guides of `b`, the lumped port of `c`.
        assert_eq!(pl.ports.len(), 4);
        assert_eq!(pl.port_slot, vec![vec![Some(0)], vec![Some(1), Some(2)], vec![Some(3)]]);
        let g = ops[1].guides[0].as_ref().unwrap();
        let p1 = &pl.ports[1];
        assert_eq!(p1.kind, 1);
        assert_eq!(p1.n_terms as usize, g.v_idx.len());
        assert_eq!(pl.t_idx2[p1.term_off as usize + 3], g.h_hi[3] as i32);
        // Sources: 2 lumped edges of a, the guide source plane of b, 2 edges of c.
        assert_eq!(pl.src_design.iter().filter(|d| **d == 1).count(), g.src_idx.len());
        assert_eq!(pl.drive, vec![Drive::Lumped { len: 2 }, Drive::Guide, Drive::Lumped { len: 2 }]);
        let l = ops[0].lumped[0].as_ref().unwrap();
        assert_eq!(pl.src_coef[0], -l.src[0]);
        // Block table skips finished designs.
        let t = pl.block_table(&[true, false, true]);
        assert_eq!(t.len() / 2, pl.blocks_per_design[0] + pl.blocks_per_design[2]);
        assert!(t.chunks(2).all(|p| p[0] != 1));
    }

    #[test]
    fn source_values_match_the_cpu_injection() {
        let a = job([8, 8, 8], [[Boundary::Pec; 2]; 3], [[0; 2]; 3]);
        let op = Operator::new(&a).unwrap();
        let pl = Plan::new(&[&op], &[0], Tile::DEFAULT, 4).unwrap();
        let g = pl.source_values(&[a.pulse], &[op.dt], 10, 3, 5, &[true]);
        for s in 0..3 {
            let v = a.pulse.value(((10 + s) as f64 + 0.5) * op.dt);
            assert_eq!(g[s], (v / 2.0) as f32);
        }
        assert_eq!(g[3], 0.0);
    }

    #[test]
    fn batches_split_to_fit_and_spread_over_gpus() {
        assert_eq!(split_to_fit(&[4, 4, 4, 9, 1], 10), Ok(vec![0..2, 2..3, 3..5]));
        assert_eq!(split_to_fit(&[4, 11], 10), Err(1));
        let s = spread(&[5.0, 1.0, 4.0, 2.0], 2);
        assert_eq!(s, vec![vec![0, 1], vec![2, 3]]);
        let mut all: Vec<usize> = spread(&[1.0; 7], 3).concat();
        all.sort();
        assert_eq!(all, (0..7).collect::<Vec<_>>());
    }

    #[test]
    fn thin_designs_get_a_shorter_tile_and_rechunking_matches_a_fresh_plan() {
        // A 2.5D slab (3 padded rows) idles 5 of 8 tile rows: 32x4 idles 1 of 4.
        let thin = job([28, 1, 60], [[Boundary::Pec; 2], [Boundary::Pmc; 2], [Boundary::Pec; 2]], [[0, 0], [0, 0], [0, 0]]);
        let cube = crate::bench::box_job(30, 10);
        let (ot, oc) = (Operator::new(&thin).unwrap(), Operator::new(&cube).unwrap());
        assert_eq!(fit_tile(&[&ot], Tile::DEFAULT), Tile { ty: 4, ..Tile::DEFAULT });
        assert_eq!(fit_tile(&[&oc], Tile::DEFAULT), Tile::DEFAULT);
        // Re-chunking in place gives the tables a plan built with that chunk has.
        let mut pl = Plan::new(&[&ot, &oc], &[0, 0], Tile::DEFAULT, 9).unwrap();
        pl.set_zchunk(3);
        let fresh = Plan::new(&[&ot, &oc], &[0, 0], Tile::DEFAULT, 3).unwrap();
        assert_eq!(pl.blocks_per_design, fresh.blocks_per_design);
        for (a, b) in pl.designs.iter().zip(&fresh.designs) {
            assert_eq!((a.zchunk, a.nchunks), (b.zchunk, b.nchunks));
        }
        assert_eq!(pl.block_table(&[false, true]), fresh.block_table(&[false, true]));
        // One thin design left on a large device: small chunks, many blocks.
        assert!(choose_zchunk(&[&ot], Tile { ty: 4, ..Tile::DEFAULT }, Origin::Auto, 396) <= 4);
    }

    #[test]
    fn zchunk_balances_waves() {
        let c = crate::bench::box_job(40, 1);
        let op = Operator::new(&c).unwrap();
        let l = choose_zchunk(&[&op], Tile::DEFAULT, Origin::Auto, 64);
        assert!((2..=op.dims[2]).contains(&l));
        assert!(l >= 8);
        // 42 planes, 12 tiles a plane: with 12 slots one chunk per column (one wave of
        // 43 planes) beats two waves of 22; with 24 slots two chunks of 21 fill one wave.
        assert_eq!(choose_zchunk(&[&op], Tile::DEFAULT, Origin::Auto, 12), 42);
        assert_eq!(choose_zchunk(&[&op], Tile::DEFAULT, Origin::Auto, 24), 21);
        // A wide design (130 x 130 padded: 85 tiles a plane) takes chunks of at most
        // WIDE_ZCHUNK planes whatever the slots; batched with slim guides holding most
        // of the cells, the model's choice stands.
        let wide = Operator::new(&crate::bench::box_job(128, 1)).unwrap();
        for resident in [12, 396] {
            assert!(choose_zchunk(&[&wide], Tile::DEFAULT, Origin::Auto, resident) <= WIDE_ZCHUNK);
        }
        let guide = Operator::new(&crate::bench::population_jobs(1, 300_000, 1)[0]).unwrap();
        let mut mix: Vec<&Operator> = std::iter::repeat_n(&guide, 10).collect();
        assert!(guide.len * 10 > wide.len);
        mix.push(&wide);
        assert!(choose_zchunk(&mix, Tile::DEFAULT, Origin::Auto, 396) > WIDE_ZCHUNK);
        // A batch whose fewest blocks already make more than 16 waves gets that
        // fewest-block chunking, not 2 planes: 40 guides of 2 tiles a plane in three z
        // segments (240 blocks) on 2 or 12 slots.
        let pop = crate::bench::population_jobs(1, 30_000, 1);
        let op = Operator::new(&pop[0]).unwrap();
        let li = LeanInfo::new(&op, Tile::DEFAULT);
        let chunks = |l: usize| {
            let mut ds = FdtdDesign { dims: op.dims.map(|x| x as i32), n: op.n.map(|x| x as i32), ..Default::default() };
            set_segments(&mut ds, &li, l);
            ds.nchunks
        };
        assert_eq!(chunks(op.dims[2]), 3);
        let many: Vec<&Operator> = std::iter::repeat_n(&op, 40).collect();
        for resident in [2, 12] {
            let l = choose_zchunk(&many, Tile::DEFAULT, Origin::Auto, resident);
            assert_eq!(chunks(l), 3, "chose {l} planes on {resident} slots");
        }
        // A box with few lean tiles (80 cells, CPML 10: 6 of 33) keeps one segment:
        // two more chunk ends a column would cost more than its lean blocks save.
        let b80 = Operator::new(&crate::bench::box_job(80, 1)).unwrap();
        let mut ds = FdtdDesign { dims: b80.dims.map(|x| x as i32), n: b80.n.map(|x| x as i32), ..Default::default() };
        let li80 = LeanInfo::new(&b80, Tile::DEFAULT);
        assert!(li80.xy_tiles > 0);
        set_segments(&mut ds, &li80, 1000);
        assert_eq!((ds.nchunks, ds.zcut[0]), (1, ds.dims[2]));
        assert!(Tile::parse("32x8").is_ok() && Tile::parse("24x8").is_err());
        assert_eq!(Tile::parse("32x8:3:4").unwrap(), Tile { tx: 32, ty: 8, ns: 3, minb: 4 });
        assert_eq!(Tile::parse("32x8:3:4").unwrap().to_string(), "32x8:3:4");
        assert_eq!(Tile::DEFAULT.to_string(), "32x8");
        assert!(Tile::parse("4x2").is_err() && Tile::parse("32x8:2").is_err() && Tile::parse("32x8:4:2:1").is_err());
        assert_eq!(Tile::parse_choice("auto").unwrap(), (Tile::DEFAULT, true));
        assert_eq!(Tile::parse_choice("auto/32x8:4:4").unwrap(), (Tile { minb: 4, ..Tile::DEFAULT }, true));
        assert_eq!(Tile::parse_choice("16x8").unwrap(), (Tile { tx: 16, ..Tile::DEFAULT }, false));
        assert!(Tile::parse_choice("auto/").is_err() && Tile::parse_choice("auto32x8").is_err());
    }

    #[test]
    fn z_segments_partition_the_planes_and_keep_the_cpml_out_of_the_middle() {
        let pop = crate::bench::population_jobs(2, 30_000, 1);
        let ops: Vec<Operator> = pop.iter().map(|j| Operator::new(j).unwrap()).collect();
        let refs: Vec<&Operator> = ops.iter().collect();
        for zchunk in [2, 3, 7, 40, 1000] {
            let pl = Plan::new(&refs, &[0, 0], Tile::DEFAULT, zchunk).unwrap();
            for (d, ds) in pl.designs.iter().enumerate() {
                // Contiguous, covering, chunk 0 with >= 2 planes (the fused step's ghost plane).
                let mut z = 0;
                for ch in 0..ds.nchunks as usize {
                    let (z0, z1) = chunk_planes(ds, ch);
                    assert_eq!(z0, z);
                    assert!(z1 > z0 && z1 - z0 <= zchunk.max(2) + 1, "chunk {ch} of {zchunk}: {z0}..{z1}");
                    z = z1;
                }
                assert_eq!(z, ds.dims[2] as usize);
                assert!(chunk_planes(ds, 0).1 >= 2);
                // The middle segment: CPML-free planes only (the guide's 10-cell CPML at both ends).
                // At 2- and 3-plane chunks the chunk ends already fall close to the range's:
                // one segment costs less there (set_segments), and its inner chunks are lean.
                let (l, r) = (ds.zcut[0] as usize, ds.zcut[1] as usize);
                if zchunk <= 3 && l == ds.dims[2] as usize {
                    assert!((0..pl.blocks_per_design[d]).any(|b| pl.lean_block(d, b)));
                    continue;
                }
                assert!(l >= 12 && r <= ds.n[2] as usize + 1 - 10, "{l}..{r} at {zchunk} planes");
                assert!((l - 1..r).all(|q| pl.lean[d].clean[2][q]));
                // Every block of the middle chunks may take the lean step (PEC walls
                // only along x and y), no block of the end chunks.
                let tpp = (ds.tiles[0] * ds.tiles[1]) as usize;
                for b in 0..pl.blocks_per_design[d] {
                    let (z0, z1) = chunk_planes(ds, b / tpp);
                    assert_eq!(pl.lean_block(d, b), z0 >= l && z1 <= r, "block {b}: {z0}..{z1}");
                }
            }
        }
        // Flagged in the table when asked, and only then.
        let pl = Plan::new(&refs, &[0, 0], Tile::DEFAULT, 40).unwrap();
        let (t, n) = pl.block_tables(&[true, true], true);
        assert!(n > 0 && n == t.chunks(2).filter(|e| e[1] & super::super::abi::LEAN_FLAG != 0).count());
        assert_eq!(pl.block_tables(&[true, true], false), (pl.block_table(&[true, true]), 0));
    }

    #[test]
    fn lean_blocks_keep_off_cpml_and_pmc_faces() {
        // A box with CPML on every face: a lean block's tile, halo column and row included, is CPML-free.
        let op = Operator::new(&crate::bench::box_job(100, 1)).unwrap();
        let pl = Plan::new(&[&op], &[0], Tile::DEFAULT, 20).unwrap();
        let (ds, li) = (&pl.designs[0], &pl.lean[0]);
        assert_ne!(li.org, [0, 0], "the CPML box shifts its tiles");
        let (tx, tpp) = (ds.tiles[0] as usize, (ds.tiles[0] * ds.tiles[1]) as usize);
        let mut lean = 0;
        for b in 0..pl.blocks_per_design[0] {
            if !pl.lean_block(0, b) {
                continue;
            }
            lean += 1;
            let (x0, x1) = li.tile_span(0, 32, b % tpp % tx);
            let (y0, y1) = li.tile_span(1, 8, b % tpp / tx);
            let (z0, z1) = chunk_planes(ds, b / tpp);
            // 10 CPML cells: padded 1..=10 and n-9..=n (E nodes reach n+1); lean tiles are whole.
            assert!(x0 >= 12 && x1 <= 91 && x1 - x0 == 32 && y0 >= 12 && y1 <= 91 && y1 - y0 == 8 && z0 >= 12 && z1 <= 91, "{x0} {y0} {z0}..{z1}");
        }
        assert!(lean > 0);
        // PMC walls along y: no lean block may reach their ghost rows.
        let mut j = crate::bench::box_job_pml(40, 1, 0);
        j.boundaries[1] = [Boundary::Pmc; 2];
        let op = Operator::new(&j).unwrap();
        let pl = Plan::new(&[&op], &[0], Tile { tx: 8, ty: 4, ns: 4, minb: 0 }, 10).unwrap();
        let ds = &pl.designs[0];
        let tpp = (ds.tiles[0] * ds.tiles[1]) as usize;
        let mut lean = 0;
        for b in (0..pl.blocks_per_design[0]).filter(|&b| pl.lean_block(0, b)) {
            lean += 1;
            let (y0, y1) = pl.lean[0].tile_span(1, 4, b % tpp / ds.tiles[0] as usize);
            assert!(y0 >= 2 && y1 - 1 <= 40 && y1 - y0 == 4, "y0 {y0}");
        }
        assert!(lean > 0);
    }

    #[test]
    fn tile_origin_puts_cpml_into_fewer_tiles() {
        // The 256^3 CPML box: tiles from 0 put the x slabs into 3 of 9 tile columns
        // (0..31, 224..255 and the 2-wide 256..257); origin 16 into 2 (0..15, 240..257),
        // the smallest multiple of a sector that does.
        let op = Operator::new(&crate::bench::box_job(256, 1)).unwrap();
        let t = Tile::DEFAULT;
        let old = LeanInfo::with_origin(&op, t, Origin::Fixed([0, 0]));
        let new = LeanInfo::new(&op, t);
        let cols = |li: &LeanInfo| li.axis_tiles(0, 32, li.org[0]).iter().filter(|&&x| x).count();
        assert_eq!((old.tiles, cols(&old)), ([9, 33], 6));
        assert_eq!((new.org, new.tiles, cols(&new)), ([16, 0], [9, 33], 7));
        assert_eq!(new.xy_tiles, 7 * 28);
        assert_eq!(old.xy_tiles, 6 * 28);
        // Without CPML nothing is gained: the origin stays 0.
        let pec = Operator::new(&crate::bench::box_job_pml(64, 1, 0)).unwrap();
        assert_eq!(LeanInfo::new(&pec, t).org, [0, 0]);
        // A design without a lean z range (CPML all through z) keeps origin 0 too.
        let thin = Operator::new(&crate::bench::box_job(20, 1)).unwrap();
        assert_eq!(LeanInfo::new(&thin, t).org, [0, 0]);
    }

    #[test]
    fn tile_spans_partition_the_plane_for_every_origin() {
        let op = Operator::new(&crate::bench::box_job(45, 1)).unwrap();
        for t in [Tile::DEFAULT, Tile { tx: 8, ty: 4, ns: 4, minb: 0 }] {
            for ox in 0..t.tx {
                for oy in [0, 1, t.ty - 1] {
                    let li = LeanInfo::with_origin(&op, t, Origin::Fixed([ox, oy]));
                    assert_eq!(li.xy.len(), li.tiles[0] * li.tiles[1]);
                    for (a, ts) in [(0, t.tx), (1, t.ty)] {
                        let mut end = 0;
                        for i in 0..li.tiles[a] {
                            let (s, e) = li.tile_span(a, ts, i);
                            assert!(s == end && e > s && e - s <= ts, "axis {a} origin {ox},{oy} tile {i}: {s}..{e} after {end}");
                            end = e;
                        }
                        assert_eq!(end, op.dims[a]);
                    }
                    // A narrowed first tile never takes the lean step (the lean step assumes whole tiles).
                    for (i, &l) in li.xy.iter().enumerate() {
                        let (x0, x1) = li.tile_span(0, t.tx, i % li.tiles[0]);
                        let (y0, y1) = li.tile_span(1, t.ty, i / li.tiles[0]);
                        assert!(!l || (x1 - x0 == t.tx || x1 == op.dims[0]) && x0 > 0 && (y1 - y0 == t.ty || y1 == op.dims[1]) && y0 > 0);
                    }
                }
            }
        }
        // An origin of t-1 would make the second tile's halo the PMC ghost position 0: clamped to t-2.
        assert_eq!(LeanInfo::with_origin(&op, Tile::DEFAULT, Origin::Fixed([31, 7])).org, [30, 6]);
        assert_eq!(Origin::parse("9,1"), Ok(Origin::Fixed([9, 1])));
        assert_eq!(Origin::parse("auto"), Ok(Origin::Auto));
        assert!(Origin::parse("9").is_err() && Origin::parse("a,1").is_err() && Origin::parse("-1,0").is_err());
    }
}
