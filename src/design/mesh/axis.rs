//! One axis of the automatic mesher: lines on every metal edge and material
//! interface, graded cells in between (used by [`super::auto::AutoMesher`]).
//!
//! What an openEMS or CST user expects of a mesher, in the form a genetic
//! algorithm needs (docs/ACCURACY.md has the measurements behind the choices):
//! - *anchors*: lines exactly on material interfaces, sheet planes, ports and
//!   domain faces; at a metal edge either a line on the edge or a pair of lines
//!   1/3 of a cell inside and 2/3 outside the metal (openEMS's "thirds rule",
//!   which cancels most of the first-order error of a singular edge field);
//! - between anchors, cells graded smoothly (neighbours differ by at most
//!   `max_ratio`) from the anchors' own cell size up to `max_cell`: the cell
//!   size grows linearly with the distance from an anchor, which gives
//!   geometric grading, and the lines are the equal steps of the cumulative
//!   density, so they move continuously when the anchors do;
//! - counts that change only where an interval's need crosses a whole cell:
//!   between those points a parameter change moves the lines and none appears
//!   or vanishes, so neighbouring candidates get neighbouring meshes;
//! - a *reference topology* ([`Topology`], the counts of the design at its
//!   parameters' midpoint) that a candidate keeps wherever those counts still
//!   honour the largest cell, the smallest cell and the grading: then no line
//!   appears or vanishes over wide stretches of the parameter space, only
//!   where a count stops fitting, and a GA's batch shares its grid sizes.

/// How a metal edge gets its lines.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum EdgeRule {
    /// One line on the edge.
    OnEdge,
    /// Lines at 1/3 of the edge cell inside the metal and 2/3 outside.
    Thirds,
    /// Lines at this fraction `f` (0 < f < 1/2) of the edge cell inside the
    /// metal and `1 - f` outside; `Thirds` is `Inside(1/3)`.
    Inside(f64),
}

impl EdgeRule {
    /// The fraction of the edge cell that lies inside the metal (0: on the edge).
    pub fn inside(self) -> f64 {
        match self {
            EdgeRule::OnEdge => 0.0,
            EdgeRule::Thirds => 1.0 / 3.0,
            EdgeRule::Inside(f) => f,
        }
    }
}

/// What happens at a coordinate along the axis.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    /// A plane that must carry a line exactly: domain face, material interface,
    /// sheet plane, port plane or position.
    Exact,
    /// The plane of a sheet lying across the axis: a line exactly on it, with
    /// cells of size `h` on both sides (the field is singular near the
    /// sheet's edges, so the mesh is refined normal to the sheet too).
    Sheet { h: f64 },
    /// A metal edge (face of a PEC solid or edge of a sheet) with the metal on
    /// the low side (`below`) or the high side, meshed by `rule` with cells of
    /// size `h` next to it.
    Metal { below: bool, rule: EdgeRule, h: f64 },
}

/// One coordinate the mesh must respect; `key` identifies it across parameter
/// values (e.g. primitive index and face), so a topology can be reused.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Feature {
    pub pos: f64,
    pub kind: Kind,
    pub key: u64,
}

/// A range that must hold at least `cells` cells (a dielectric slab's thickness).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MinCells {
    pub lo: f64,
    pub hi: f64,
    pub cells: usize,
}

/// The cell counts of an axis' intervals, keyed by the identities of the
/// anchors at their two ends (stable across parameter values).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Topology(pub std::collections::BTreeMap<(u64, u64), usize>);

impl Topology {
    /// Cells in all.
    pub fn cells(&self) -> usize {
        self.0.values().sum()
    }
}

/// Settings of one axis (metres).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AxisOptions {
    pub max_cell: f64,
    pub min_cell: f64,
    pub max_ratio: f64,
}

/// A line the mesh keeps, with the cell size wanted next to it.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Anchor {
    pos: f64,
    h: f64,
    /// Feature key * 4 + role (0 exact / on edge, 1 inside, 2 outside).
    id: u64,
    /// Which anchor survives when two come too close: exact lines first.
    prio: u8,
}

/// Why an axis cannot be meshed.
#[derive(Debug, Clone, PartialEq)]
pub enum MeshProblem {
    /// Two things the mesh must resolve lie closer than the minimum cell.
    TooClose { a: f64, b: f64, min_cell: f64 },
    /// A cell below the minimum.
    CellTooSmall { at: f64, size: f64, min_cell: f64 },
    /// Neighbouring cells differ by more than the allowed ratio.
    Grading { at: f64, ratio: f64, max_ratio: f64 },
    /// A feature outside the axis' range.
    Outside { pos: f64 },
    /// Options that cannot work (non-positive sizes, ratio <= 1, ...).
    Options(String),
}

impl std::fmt::Display for MeshProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mm = |x: f64| format!("{:.6} mm", x * 1e3);
        match self {
            MeshProblem::TooClose { a, b, min_cell } => write!(
                f,
                "features at {} and {} are closer than the minimum cell ({}): lower `min_cell` or move them apart",
                mm(*a),
                mm(*b),
                mm(*min_cell)
            ),
            MeshProblem::CellTooSmall { at, size, min_cell } => {
                write!(f, "cell at {} is {} wide, below the minimum cell {}", mm(*at), mm(*size), mm(*min_cell))
            }
            MeshProblem::Grading { at, ratio, max_ratio } => write!(
                f,
                "neighbouring cells at {} differ by a ratio of {ratio:.3}, above the limit {max_ratio}",
                mm(*at)
            ),
            MeshProblem::Outside { pos } => write!(f, "feature at {} lies outside the domain", mm(*pos)),
            MeshProblem::Options(s) => write!(f, "{s}"),
        }
    }
}

impl AxisOptions {
    fn check(&self) -> Result<(), MeshProblem> {
        let bad = |s: String| Err(MeshProblem::Options(s));
        if !(self.max_cell > 0.0 && self.max_cell.is_finite()) {
            return bad(format!("max_cell must be positive (got {})", self.max_cell));
        }
        if !(self.min_cell > 0.0 && self.min_cell <= self.max_cell) {
            return bad(format!("min_cell must be positive and at most max_cell (got {} and {})", self.min_cell, self.max_cell));
        }
        if !(self.max_ratio > 1.0 && self.max_ratio <= 3.0) {
            return bad(format!("max_ratio must lie in (1, 3] (got {})", self.max_ratio));
        }
        Ok(())
    }
}

/// The anchors of `[lo, hi]` for `features`: deduplicated, expanded by the edge
/// rule, and thinned where two come closer than the minimum cell.
fn anchors(lo: f64, hi: f64, features: &[Feature], o: &AxisOptions) -> Result<Vec<Anchor>, MeshProblem> {
    let tol = 1e-9 * (hi - lo).abs().max(1e-12);
    // Lines that ask for no particular cell: the density next to them starts at the maximum.
    let free = o.max_cell * growth(o).exp_m1() / growth(o);
    let mut v = vec![
        Anchor { pos: lo, h: free, id: u64::MAX - 7, prio: 3 },
        Anchor { pos: hi, h: free, id: u64::MAX - 3, prio: 3 },
    ];
    for f in features {
        if !(f.pos >= lo - tol && f.pos <= hi + tol) {
            return Err(MeshProblem::Outside { pos: f.pos });
        }
        let on_face = (f.pos - lo).abs() <= tol || (f.pos - hi).abs() <= tol;
        match f.kind {
            Kind::Exact => v.push(Anchor { pos: f.pos, h: free, id: f.key * 4, prio: 2 }),
            // A sheet on the domain face needs no refinement beside it: only the inside is meshed.
            Kind::Sheet { .. } if on_face => v.push(Anchor { pos: f.pos, h: free, id: f.key * 4, prio: 2 }),
            Kind::Sheet { h } => v.push(Anchor { pos: f.pos, h: h.clamp(o.min_cell, o.max_cell), id: f.key * 4, prio: 2 }),
            // A metal face on the domain face is no edge: the face line holds it.
            Kind::Metal { .. } if on_face => {}
            Kind::Metal { below, rule, h } => match rule.inside() {
                q if q <= 0.0 => v.push(Anchor { pos: f.pos, h: h.clamp(o.min_cell, o.max_cell), id: f.key * 4, prio: 2 }),
                q => {
                    let s = if below { 1.0 } else { -1.0 };
                    let h = h.clamp(o.min_cell, o.max_cell);
                    let inner = f.pos - s * h * q;
                    let outer = f.pos + s * (1.0 - q) * h;
                    // Lines that would leave the domain fall back to the edge itself.
                    if inner <= lo + tol || inner >= hi - tol || outer <= lo + tol || outer >= hi - tol {
                        v.push(Anchor { pos: f.pos, h, id: f.key * 4, prio: 2 });
                    } else {
                        v.push(Anchor { pos: inner, h, id: f.key * 4 + 1, prio: 1 });
                        v.push(Anchor { pos: outer, h, id: f.key * 4 + 2, prio: 1 });
                    }
                }
            },
        }
    }
    // Order by position, identity breaking ties, so the order is deterministic.
    v.sort_by(|a, b| a.pos.total_cmp(&b.pos).then(a.id.cmp(&b.id)));
    // Same place twice (the two irises sharing one aperture): keep one, the
    // finer cell and the higher priority.
    let mut out: Vec<Anchor> = Vec::with_capacity(v.len());
    for a in v {
        match out.last_mut() {
            Some(p) if (a.pos - p.pos).abs() <= tol => {
                p.h = p.h.min(a.h);
                if a.prio > p.prio || (a.prio == p.prio && a.id < p.id) {
                    p.id = a.id;
                    p.prio = a.prio;
                }
            }
            _ => out.push(a),
        }
    }
    // Closer than the minimum cell: two lines that must both be exact (exact
    // lines, on-edge metal lines, a domain face) share one line -- the face,
    // or else half-way between them, under the lower identity of the two, so
    // the identity does not depend on which is left of the other and the
    // shared line moves continuously with both -- and the voxeliser snaps
    // both features onto it. Otherwise the lower priority anchor goes (the
    // edge rule's pair gives way to exact lines); between equals the later
    // one. The closest pair is resolved first.
    loop {
        let close = (1..out.len()).filter(|&i| out[i].pos - out[i - 1].pos < o.min_cell * (1.0 - 1e-9)).min_by(|&i, &j| {
            (out[i].pos - out[i - 1].pos).total_cmp(&(out[j].pos - out[j - 1].pos))
        });
        let Some(i) = close else { break };
        let (a, b) = (out[i - 1], out[i]);
        if a.prio == 3 && b.prio == 3 {
            // The domain itself is narrower than the minimum cell.
            return Err(MeshProblem::TooClose { a: a.pos, b: b.pos, min_cell: o.min_cell });
        }
        if a.prio >= 2 && b.prio >= 2 {
            let (pos, id, prio) = if a.prio == 3 {
                (a.pos, a.id, 3)
            } else if b.prio == 3 {
                (b.pos, b.id, 3)
            } else {
                (0.5 * (a.pos + b.pos), a.id.min(b.id), 2)
            };
            out[i - 1] = Anchor { pos, h: a.h.min(b.h), id, prio };
            out.remove(i);
            continue;
        }
        let drop = if a.prio > b.prio || (a.prio == b.prio && a.id < b.id) { i } else { i - 1 };
        let keep = if drop == i { i - 1 } else { i };
        out[keep].h = out[keep].h.min(out[drop].h);
        out.remove(drop);
    }
    Ok(out)
}

/// The cell size wanted at `x` in an interval `[a, b]` whose ends want `ha`
/// and `hb`: grows linearly away from each end (geometric grading) up to `cap`.
/// `k`: [`end_scale`] of `g`.
#[inline]
#[allow(clippy::too_many_arguments)]
fn density_h(x: f64, a: f64, b: f64, ha: f64, hb: f64, g: f64, k: f64, cap: f64) -> f64 {
    (k * ha + g * (x - a)).min(k * hb + g * (b - x)).min(cap)
}

/// A cell starting where the density is h0 spans h0 (e^g - 1) / g; scaling
/// the ends by the inverse makes the cell next to an anchor the anchor's size.
#[inline]
fn end_scale(g: f64) -> f64 {
    g / g.exp_m1()
}

/// Samples per interval of the cumulative density (placement resolution).
const SAMPLES: usize = 128;

/// The sample points of `[a, b]`.
#[inline]
fn sample(a: f64, b: f64, k: usize) -> f64 {
    a + (b - a) * k as f64 / SAMPLES as f64
}

/// The cumulative count of cells `F(x) = int_a^x dx / h(x)` on `SAMPLES + 1`
/// points (trapezoids); `F(b)` is the smallest cell count that honours `h`.
fn cumulative(a: f64, b: f64, ha: f64, hb: f64, g: f64, cap: f64) -> (Vec<f64>, Vec<f64>) {
    let k = end_scale(g);
    let xs: Vec<f64> = (0..=SAMPLES).map(|j| sample(a, b, j)).collect();
    let mut fs = vec![0.0; SAMPLES + 1];
    let mut h0 = density_h(xs[0], a, b, ha, hb, g, k, cap);
    for j in 1..=SAMPLES {
        let h1 = density_h(xs[j], a, b, ha, hb, g, k, cap);
        fs[j] = fs[j - 1] + 0.5 * (xs[j] - xs[j - 1]) * (1.0 / h0 + 1.0 / h1);
        h0 = h1;
    }
    (xs, fs)
}

/// `F(b)` of [`cumulative`], the same sum without keeping the samples (the
/// counts and caps evaluate it many times per interval).
fn count(a: f64, b: f64, ha: f64, hb: f64, g: f64, cap: f64) -> f64 {
    let k = end_scale(g);
    let mut x0 = sample(a, b, 0);
    let mut h0 = density_h(x0, a, b, ha, hb, g, k, cap);
    let mut f = 0.0;
    for j in 1..=SAMPLES {
        let x1 = sample(a, b, j);
        let h1 = density_h(x1, a, b, ha, hb, g, k, cap);
        f += 0.5 * (x1 - x0) * (1.0 / h0 + 1.0 / h1);
        (x0, h0) = (x1, h1);
    }
    f
}

/// Growth per unit length that keeps neighbouring cells within `ratio`
/// (with a margin for the discrete placement).
fn growth(o: &AxisOptions) -> f64 {
    0.92 * o.max_ratio.ln()
}

/// The largest cell `cap <= max_cell` with which the interval holds exactly
/// `n` cells (the count falls as the cap grows; bisection).
fn cap_for(a: f64, b: f64, ha: f64, hb: f64, n: usize, o: &AxisOptions) -> f64 {
    let g = growth(o);
    if count(a, b, ha, hb, g, o.max_cell) >= n as f64 {
        return o.max_cell;
    }
    let (mut lo, mut hi) = ((b - a) / n as f64 * 0.5, o.max_cell);
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if count(a, b, ha, hb, g, mid) > n as f64 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// Cells an interval needs at least: the density's count, and any slab minimum.
fn needed(a: f64, b: f64, ha: f64, hb: f64, o: &AxisOptions, slabs: &[MinCells]) -> usize {
    // The density's count, rounded: an interval a little longer than its end
    // cells takes one cell a little larger (within the grading limit) rather
    // than two of half the size, which would break the grading against a
    // neighbouring edge cell. Up only where the larger cells would exceed the
    // largest cell or the grading limit against the ends.
    let c = count(a, b, ha, hb, growth(o), o.max_cell);
    let mut n = c.round().max(1.0) as usize;
    let fits = |n: usize| {
        let h = (b - a) / n as f64;
        h <= o.max_cell * (1.0 + 1e-9) && h <= 0.9 * o.max_ratio * ha.min(hb).max(1e-300) || n as f64 >= c - 0.02
    };
    while !fits(n) {
        n += 1;
    }
    // Never cells below the minimum for the sake of the density.
    while n > 1 && (b - a) / (n as f64) < o.min_cell {
        n -= 1;
    }
    let tol = 1e-9 * (b - a).abs();
    for s in slabs {
        if a >= s.lo - tol && b <= s.hi + tol && s.hi > s.lo {
            n = n.max((s.cells as f64 * (b - a) / (s.hi - s.lo) - 1e-6).ceil() as usize);
        }
    }
    n
}

/// Counts, per-interval caps and anchor cell sizes that fit together: an
/// anchor's cell may not exceed `ratio` times the cells on either side of it
/// (an interval with more cells than its density needs has smaller cells), so
/// the anchors shrink until neighbours agree. Every step is continuous in the
/// positions while the counts stay the same.
/// `fixed[i]`: a count interval i keeps (the reference topology's) instead of
/// its own need.
fn solve(an: &[Anchor], o: &AxisOptions, slabs: &[MinCells], fixed: &[Option<usize>]) -> (Vec<usize>, Vec<f64>, Vec<f64>) {
    let m = an.len() - 1;
    let h0: Vec<f64> = an.iter().map(|a| a.h).collect();
    let mut h = h0.clone();
    let mut n: Vec<usize> = vec![1; m];
    let mut cap = vec![o.max_cell; m];
    let r = 0.92 * o.max_ratio;
    // The two lines of one edge (thirds rule) are one cell apart by construction.
    let pair = |i: usize| an[i].id / 4 == an[i + 1].id / 4 && an[i].id % 4 != 0 && an[i + 1].id % 4 != 0;
    // The last need and cap of each interval and the end cells and count they
    // came from: most intervals' ends settle after a pass or two, and the
    // sums behind both are the mesher's cost.
    let mut need_memo: Vec<Option<(f64, f64, usize)>> = vec![None; m];
    let mut cap_memo: Vec<Option<(f64, f64, usize, f64)>> = vec![None; m];
    let mut cap_of = |i: usize, h: &[f64], n: usize| -> f64 {
        match cap_memo[i] {
            Some((ha, hb, k, c)) if ha == h[i] && hb == h[i + 1] && k == n => c,
            _ => {
                let c = cap_for(an[i].pos, an[i + 1].pos, h[i], h[i + 1], n, o);
                cap_memo[i] = Some((h[i], h[i + 1], n, c));
                c
            }
        }
    };
    for _ in 0..16 {
        for i in 0..m {
            if pair(i) {
                n[i] = 1;
                cap[i] = an[i + 1].pos - an[i].pos;
                continue;
            }
            if let Some(nf) = fixed[i] {
                n[i] = nf;
                cap[i] = cap_of(i, &h, nf);
                continue;
            }
            let need = match need_memo[i] {
                Some((ha, hb, k)) if ha == h[i] && hb == h[i + 1] => k,
                _ => {
                    let k = needed(an[i].pos, an[i + 1].pos, h[i], h[i + 1], o, slabs);
                    need_memo[i] = Some((h[i], h[i + 1], k));
                    k
                }
            };
            n[i] = n[i].max(need);
            cap[i] = cap_of(i, &h, n[i]);
        }
        let mut changed = false;
        for k in 0..=m {
            let mut hk = h0[k];
            if k > 0 {
                hk = hk.min(r * cap[k - 1]);
            }
            if k < m {
                hk = hk.min(r * cap[k]);
            }
            if (hk - h[k]).abs() > 1e-12 * hk {
                changed = true;
            }
            h[k] = hk;
        }
        if !changed {
            break;
        }
    }
    (n, cap, h)
}

/// `n - 1` line positions strictly inside `[a, b]` (n cells): the inverse of
/// the cumulative density at equal steps, so lines move continuously with a, b.
fn place(a: f64, b: f64, ha: f64, hb: f64, cap: f64, n: usize, o: &AxisOptions, out: &mut Vec<f64>) {
    let (xs, fs) = cumulative(a, b, ha, hb, growth(o), cap);
    let total = fs[SAMPLES];
    let mut k = 1;
    for m in 1..n {
        let target = total * m as f64 / n as f64;
        while k < SAMPLES && fs[k] < target {
            k += 1;
        }
        let (f0, f1) = (fs[k - 1], fs[k]);
        let t = if f1 > f0 { (target - f0) / (f1 - f0) } else { 0.0 };
        out.push(xs[k - 1] + t * (xs[k] - xs[k - 1]));
    }
}

/// The mesh lines of `[lo, hi]`: anchors, and graded lines between them.
pub fn lines(lo: f64, hi: f64, features: &[Feature], slabs: &[MinCells], o: &AxisOptions) -> Result<Vec<f64>, MeshProblem> {
    lines_following(lo, hi, features, slabs, o, None).map(|(v, _)| v)
}

/// Whether `n` cells may fill `[a, b]` in place of its own need: cells no
/// larger on average than the largest cell (the rule the own count follows),
/// none below the smallest, at least a slab's minimum.
fn count_fits(a: f64, b: f64, n: usize, o: &AxisOptions, slabs: &[MinCells]) -> bool {
    let avg = (b - a) / n.max(1) as f64;
    let tol = 1e-9 * (b - a).abs();
    let slab_ok = slabs.iter().all(|s| {
        !(a >= s.lo - tol && b <= s.hi + tol && s.hi > s.lo) || n as f64 >= s.cells as f64 * (b - a) / (s.hi - s.lo) - 1e-6
    });
    n >= 1 && avg <= o.max_cell * (1.0 + 1e-9) && avg >= o.min_cell && slab_ok
}

/// How far over the largest cell a kept (reference) count may stretch a cell.
const KEPT_MAX_OVER: f64 = 1.01;

/// [`lines`] keeping the counts of `prefer` (a reference topology) wherever
/// they fit: an interval between the same two anchors takes the reference's
/// count unless that breaks the largest cell, the smallest cell or the
/// grading there, in which case it takes its own need (as without a
/// reference). Returns the lines and this mesh's own topology.
pub fn lines_following(
    lo: f64,
    hi: f64,
    features: &[Feature],
    slabs: &[MinCells],
    o: &AxisOptions,
    prefer: Option<&Topology>,
) -> Result<(Vec<f64>, Topology), MeshProblem> {
    lines_with(lo, hi, features, slabs, o, prefer, false)
}

/// [`lines_following`] for crowded features, where it breaks the grading:
/// two lines between one and two minimum cells apart next to a cell of about
/// the minimum can be neither one cell (too large beside the small one) nor
/// two (each below the minimum). Here such a gap takes two cells, down to half
/// the minimum cell; lines closer than the minimum still share one line.
pub fn lines_crowded(
    lo: f64,
    hi: f64,
    features: &[Feature],
    slabs: &[MinCells],
    o: &AxisOptions,
    prefer: Option<&Topology>,
) -> Result<(Vec<f64>, Topology), MeshProblem> {
    lines_with(lo, hi, features, slabs, o, prefer, true)
}

fn lines_with(
    lo: f64,
    hi: f64,
    features: &[Feature],
    slabs: &[MinCells],
    o: &AxisOptions,
    prefer: Option<&Topology>,
    crowded: bool,
) -> Result<(Vec<f64>, Topology), MeshProblem> {
    o.check()?;
    let an = anchors(lo, hi, features, o)?;
    // The fill's rules: the anchors' own minimum, or half of it when crowded.
    let fill = if crowded { AxisOptions { min_cell: 0.5 * o.min_cell, ..*o } } else { *o };
    let o = &fill;
    let keys: Vec<(u64, u64)> = an.windows(2).map(|w| (w[0].id, w[1].id)).collect();
    let mut fixed: Vec<Option<usize>> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| prefer.and_then(|t| t.0.get(k).copied()).filter(|&nf| count_fits(an[i].pos, an[i + 1].pos, nf, o, slabs)))
        .collect();
    loop {
        let (n, cap, h) = solve(&an, o, slabs, &fixed);
        let mut out = Vec::new();
        // owner[j]: the interval of cell j (between out[j] and out[j + 1]).
        let mut owner = Vec::new();
        for i in 0..an.len() - 1 {
            out.push(an[i].pos);
            let before = out.len();
            place(an[i].pos, an[i + 1].pos, h[i], h[i + 1], cap[i], n[i], o, &mut out);
            owner.extend(std::iter::repeat_n(i, out.len() - before + 1));
        }
        out.push(hi);
        let mut bad = violations(&out, &owner, o);
        // A kept count may not stretch a cell beyond the largest cell (1 %
        // over, as the own counts' rounding allows).
        for (j, w) in out.windows(2).enumerate() {
            if fixed[owner[j]].is_some() && w[1] - w[0] > o.max_cell * KEPT_MAX_OVER {
                bad.push(owner[j]);
            }
        }
        if bad.is_empty() {
            return Ok((out, Topology(keys.into_iter().zip(n).collect())));
        }
        // Release the reference counts where the mesh breaks a rule; a rule
        // broken with no reference count involved is released everywhere
        // (the neighbours' counts shape the anchors' cells); with none left,
        // the axis is what its own needs give, and its error is the answer.
        let mut released = false;
        for i in bad {
            released |= fixed[i].take().is_some();
        }
        if !released {
            if fixed.iter().any(Option::is_some) {
                fixed.iter_mut().for_each(|f| *f = None);
                continue;
            }
            let mut n = n;
            if crowded {
                let mut anchor: Vec<bool> = (0..out.len()).map(|j| j == 0 || j == out.len() - 1 || owner[j - 1] != owner[j]).collect();
                repair(&mut out, &mut anchor, o);
                // The counts as repaired.
                n.clear();
                let mut c = 0;
                for &at in &anchor[1..] {
                    c += 1;
                    if at {
                        n.push(c);
                        c = 0;
                    }
                }
            }
            check_lines(&out, o.min_cell, o.max_ratio)?;
            return Ok((out, Topology(keys.into_iter().zip(n).collect())));
        }
    }
}

/// [`smooth`], and where moving lines cannot honour the grading (the counts
/// themselves do not fit), the larger cell of each offending pair split in two
/// (down to twice the minimum cell), then smoothed again; a few rounds.
fn repair(v: &mut Vec<f64>, anchor: &mut Vec<bool>, o: &AxisOptions) {
    let limit = o.max_ratio * (1.0 + 1e-9);
    for _ in 0..40 {
        smooth(v, anchor, o);
        let mut split: Vec<usize> = vec![];
        for j in 1..v.len() - 1 {
            let (a, b) = (v[j] - v[j - 1], v[j + 1] - v[j]);
            if ratio(a, b) > limit {
                let k = if a > b { j - 1 } else { j };
                if v[k + 1] - v[k] >= 2.0 * o.min_cell {
                    split.push(k);
                }
            }
        }
        split.dedup();
        if split.is_empty() {
            return;
        }
        for &k in split.iter().rev() {
            v.insert(k + 1, 0.5 * (v[k] + v[k + 1]));
            anchor.insert(k + 1, false);
        }
    }
    smooth(v, anchor, o);
}

/// The larger ratio of two cells.
fn ratio(p: f64, q: f64) -> f64 {
    (p / q).max(q / p)
}

/// Moves the free lines (not `anchor`) of `v` where neighbouring cells break
/// the grading, keeping every count: each free line near a violation goes to
/// where the largest ratio among its two cells and their outer neighbours is
/// least (that ratio is quasi-convex in the line's position: golden-section
/// search), sweeping until the grading holds or no sweep helps. The last
/// resort of a crowded axis, whose counts fit but whose density-placed lines
/// do not (each cell within the grading of its anchor's cell, but the cells
/// on the two sides of an anchor pulled in opposite directions).
fn smooth(v: &mut [f64], anchor: &[bool], o: &AxisOptions) {
    let limit = o.max_ratio * (1.0 + 1e-9);
    let cell = |v: &[f64], j: usize| v[j + 1] - v[j];
    for _ in 0..200 {
        // Free lines within two cells of a violation.
        let mut near = vec![false; v.len()];
        let mut any = false;
        for j in 1..v.len() - 1 {
            if ratio(cell(v, j - 1), cell(v, j)) > limit {
                any = true;
                for k in j.saturating_sub(2)..(j + 3).min(v.len()) {
                    near[k] = true;
                }
            }
        }
        if !any {
            return;
        }
        let before = v.to_vec();
        for j in 1..v.len() - 1 {
            if anchor[j] || !near[j] {
                continue;
            }
            let (l, r) = (v[j - 1], v[j + 1]);
            let outer_l = (j >= 2).then(|| v[j - 1] - v[j - 2]);
            let outer_r = (j + 2 < v.len()).then(|| v[j + 2] - v[j + 1]);
            let worst = |x: f64| {
                let (a, b) = (x - l, r - x);
                let mut w = ratio(a, b);
                if let Some(p) = outer_l {
                    w = w.max(ratio(p, a));
                }
                if let Some(q) = outer_r {
                    w = w.max(ratio(b, q));
                }
                w
            };
            // Neither cell below the minimum nor above the largest.
            let (mut a, mut b) = ((l + o.min_cell).max(r - o.max_cell), (r - o.min_cell).min(l + o.max_cell));
            if a >= b {
                continue;
            }
            let phi = 0.5 * (5f64.sqrt() - 1.0);
            for _ in 0..60 {
                let (x1, x2) = (b - phi * (b - a), a + phi * (b - a));
                if worst(x1) <= worst(x2) {
                    b = x2;
                } else {
                    a = x1;
                }
            }
            let x = 0.5 * (a + b);
            if worst(x) < worst(v[j]) {
                v[j] = x;
            }
        }
        if v == before.as_slice() {
            return;
        }
    }
}

/// The intervals (by `owner` of their cells) where `v` has a cell below the
/// minimum or neighbouring cells beyond the grading limit (both cells' intervals).
fn violations(v: &[f64], owner: &[usize], o: &AxisOptions) -> Vec<usize> {
    let mut bad = Vec::new();
    for (j, w) in v.windows(2).enumerate() {
        if !(w[1] - w[0] >= o.min_cell * (1.0 - 1e-6)) {
            bad.push(owner[j]);
        }
    }
    for (j, w) in v.windows(3).enumerate() {
        let (d0, d1) = (w[1] - w[0], w[2] - w[1]);
        if (d0 / d1).max(d1 / d0) > o.max_ratio * (1.0 + 1e-6) {
            bad.push(owner[j]);
            bad.push(owner[j + 1]);
        }
    }
    bad.sort_unstable();
    bad.dedup();
    bad
}

/// Lines must increase, with no cell below `min_cell` and neighbouring cells
/// within `max_ratio` (also used for line lists a user forces).
pub fn check_lines(v: &[f64], min_cell: f64, max_ratio: f64) -> Result<(), MeshProblem> {
    for w in v.windows(2) {
        let d = w[1] - w[0];
        if !(d >= min_cell * (1.0 - 1e-6)) {
            return Err(MeshProblem::CellTooSmall { at: w[0], size: d, min_cell });
        }
    }
    for w in v.windows(3) {
        let (d0, d1) = (w[1] - w[0], w[2] - w[1]);
        let r = (d0 / d1).max(d1 / d0);
        if r > max_ratio * (1.0 + 1e-6) {
            return Err(MeshProblem::Grading { at: w[1], ratio: r, max_ratio });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> AxisOptions {
        AxisOptions { max_cell: 1.0, min_cell: 0.05, max_ratio: 1.5 }
    }
    fn metal(pos: f64, below: bool, key: u64) -> Feature {
        Feature { pos, kind: Kind::Metal { below, rule: EdgeRule::Thirds, h: 0.3 }, key }
    }

    fn ratio_max(v: &[f64]) -> f64 {
        v.windows(3).map(|w| ((w[1] - w[0]) / (w[2] - w[1])).max((w[2] - w[1]) / (w[1] - w[0]))).fold(1.0, f64::max)
    }

    #[test]
    fn empty_axis_is_uniform_at_the_max_cell() {
        let v = lines(0.0, 10.0, &[], &[], &opts()).unwrap();
        assert_eq!(v.len(), 11);
        for w in v.windows(2) {
            assert!((w[1] - w[0] - 1.0).abs() < 1e-9);
        }
    }

    #[test]
    fn exact_features_get_lines_and_grading_holds() {
        let f = [Feature { pos: 3.3, kind: Kind::Exact, key: 1 }, Feature { pos: 3.9, kind: Kind::Exact, key: 2 }];
        let v = lines(0.0, 10.0, &f, &[], &opts()).unwrap();
        for x in [3.3, 3.9] {
            assert!(v.iter().any(|&l| (l - x).abs() < 1e-12), "{x} not a line: {v:?}");
        }
        assert!(ratio_max(&v) <= 1.5 + 1e-9, "{v:?}");
        assert!(v.windows(2).all(|w| w[1] - w[0] <= 1.0 + 1e-9));
    }

    #[test]
    fn thirds_rule_puts_the_edge_a_third_into_its_cell() {
        let o = opts();
        // Metal below x = 4: lines at 4 - 0.1 and 4 + 0.2.
        let f = [metal(4.0, true, 7)];
        let v = lines(0.0, 10.0, &f, &[], &o).unwrap();
        let i = v.iter().position(|&x| x > 4.0).unwrap();
        assert!((v[i - 1] - (4.0 - 0.1)).abs() < 1e-12 && (v[i] - (4.0 + 0.2)).abs() < 1e-12, "{v:?}");
        assert!(ratio_max(&v) <= 1.5 + 1e-9);
        // Metal above: mirrored.
        let f = [metal(4.0, false, 7)];
        let v = lines(0.0, 10.0, &f, &[], &o).unwrap();
        let i = v.iter().position(|&x| x > 4.0).unwrap();
        assert!((v[i - 1] - (4.0 - 0.2)).abs() < 1e-12 && (v[i] - (4.0 + 0.1)).abs() < 1e-12, "{v:?}");
    }

    #[test]
    fn lines_move_continuously_between_count_changes() {
        let o = opts();
        let feats = |w: f64| [metal(5.0 - w / 2.0, true, 1), metal(5.0 + w / 2.0, false, 2)];
        let mut prev: Option<Vec<f64>> = None;
        let mut jumps = 0;
        let mut w = 2.0;
        while w <= 4.0 + 1e-9 {
            let v = lines(0.0, 10.0, &feats(w), &[], &o).unwrap();
            if let Some(p) = &prev {
                if p.len() == v.len() {
                    let moved = p.iter().zip(&v).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
                    assert!(moved > 0.0 && moved < 0.03, "w = {w}: largest line move {moved}");
                } else {
                    jumps += 1;
                }
            }
            prev = Some(v);
            w += 0.01;
        }
        // A 2 mm sweep of a 0.3-0.5 mm cell mesh adds a handful of cells, not one per step.
        assert!(jumps <= 8, "{jumps} count changes");
    }

    #[test]
    fn reference_counts_are_kept_while_they_fit_and_released_where_they_do_not() {
        let o = opts();
        let feats = |w: f64| [metal(5.0 - w / 2.0, true, 1), metal(5.0 + w / 2.0, false, 2)];
        let (_, reference) = lines_following(0.0, 10.0, &feats(3.0), &[], &o, None).unwrap();
        // Own counts change several times over the sweep; kept counts far fewer.
        let (mut own_changes, mut kept_changes) = (0, 0);
        let (mut own_prev, mut kept_prev) = (None, None);
        let mut w = 2.6;
        while w <= 3.4 + 1e-9 {
            let (own, t_own) = lines_following(0.0, 10.0, &feats(w), &[], &o, None).unwrap();
            let (kept, t_kept) = lines_following(0.0, 10.0, &feats(w), &[], &o, Some(&reference)).unwrap();
            assert_eq!(t_own.cells(), own.len() - 1);
            assert_eq!(t_kept.cells(), kept.len() - 1);
            // Whatever is kept still honours the rules: grading, and cells at
            // most 1 % over the largest.
            assert!(ratio_max(&kept) <= 1.5 + 1e-9, "w = {w}: {kept:?}");
            assert!(kept.windows(2).all(|c| c[1] - c[0] <= 1.01 + 1e-9), "w = {w}: {kept:?}");
            own_changes += (own_prev.is_some_and(|n| n != own.len())) as usize;
            kept_changes += (kept_prev.is_some_and(|n| n != kept.len())) as usize;
            own_prev = Some(own.len());
            kept_prev = Some(kept.len());
            w += 0.01;
        }
        assert!(kept_changes < own_changes, "kept {kept_changes}, own {own_changes}");
        // At the reference itself the kept mesh is the reference's.
        let (a, _) = lines_following(0.0, 10.0, &feats(3.0), &[], &o, None).unwrap();
        let (b, _) = lines_following(0.0, 10.0, &feats(3.0), &[], &o, Some(&reference)).unwrap();
        assert_eq!(a, b);
        // A reference count that would stretch cells beyond the largest is not kept.
        let mut tight = reference.clone();
        for n in tight.0.values_mut() {
            *n = 1;
        }
        let (v, _) = lines_following(0.0, 10.0, &feats(3.0), &[], &o, Some(&tight)).unwrap();
        assert_eq!(v, a);
    }

    #[test]
    fn exact_features_closer_than_the_minimum_cell_share_one_line() {
        let o = opts();
        let lines_at = |x: f64, swap: bool| {
            let (a, b) = (Feature { pos: 3.0, kind: Kind::Exact, key: 1 }, Feature { pos: x, kind: Kind::Exact, key: 2 });
            let f = if swap { [b, a] } else { [a, b] };
            lines(0.0, 10.0, &f, &[], &o).unwrap()
        };
        let mut prev: Option<f64> = None;
        for k in 0..=40 {
            let x = 3.0 + 0.001 * k as f64;
            let v = lines_at(x, false);
            assert_eq!(v, lines_at(x, true), "x = {x}: the order of the features changed the lines");
            // One line half-way, none at either feature (unless they coincide).
            let mid = 0.5 * (3.0 + x);
            let shared = *v.iter().find(|&&l| (l - mid).abs() < 1e-12).unwrap_or_else(|| panic!("x = {x}: no line at {mid}: {v:?}"));
            assert_eq!(v.iter().filter(|&&l| (2.9..=3.1).contains(&l)).count(), 1, "x = {x}: {v:?}");
            assert!(ratio_max(&v) <= 1.5 + 1e-9);
            // The shared line follows the features continuously.
            if let Some(p) = prev {
                assert!((shared - p - 0.0005).abs() < 1e-12, "x = {x}: the shared line jumped from {p} to {shared}");
            }
            prev = Some(shared);
        }
        // A minimum cell apart, both get their own line.
        let v = lines_at(3.06, false);
        assert!(v.iter().any(|&l| l == 3.0) && v.iter().any(|&l| l == 3.06), "{v:?}");
        // A feature on the domain face merges onto the face, which stays.
        let f = [Feature { pos: 0.02, kind: Kind::Exact, key: 1 }];
        let v = lines(0.0, 10.0, &f, &[], &o).unwrap();
        assert_eq!(v[0], 0.0);
        assert!(v[1] >= o.min_cell, "{v:?}");
    }

    /// Lines as the automatic mesher lays them: its own counts, then the
    /// crowded fallback.
    fn lines_or_crowded(f: &[Feature], o: &AxisOptions) -> Result<Vec<f64>, MeshProblem> {
        lines(0.0, 10.0, f, &[], o).or_else(|_| lines_crowded(0.0, 10.0, f, &[], o, None).map(|(v, _)| v))
    }

    #[test]
    fn crowded_features_never_break_the_grading() {
        use rand::{Rng, SeedableRng};
        let o = AxisOptions { max_cell: 0.66, min_cell: 0.0414, max_ratio: 1.5 };
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(31);
        let (mut crowded, mut over) = (0, 0.0f64);
        for case in 0..1000 {
            // 5-30 metal faces and exact lines 0-3 minimum cells apart,
            // edge cells from the minimum to half the largest cell.
            let mut x = rng.random_range(0.5..2.0);
            let mut f = vec![];
            for key in 0..rng.random_range(5..30) {
                x += rng.random_range(0.0..3.0) * o.min_cell + if rng.random_bool(0.3) { rng.random_range(0.0..0.5) } else { 0.0 };
                if x > 9.5 {
                    break;
                }
                let kind = match rng.random_range(0..3) {
                    0 => Kind::Exact,
                    1 => Kind::Sheet { h: rng.random_range(1.25 * o.min_cell..0.33) },
                    _ => Kind::Metal { below: rng.random_bool(0.5), rule: EdgeRule::OnEdge, h: rng.random_range(1.25 * o.min_cell..0.33) },
                };
                f.push(Feature { pos: x, kind, key });
            }
            crowded += lines(0.0, 10.0, &f, &[], &o).is_err() as usize;
            let v = lines_or_crowded(&f, &o).unwrap_or_else(|e| panic!("case {case}: {e}: {f:?}"));
            // Checked here, not by the mesher's own check.
            assert!(ratio_max(&v) <= 1.5 * (1.0 + 1e-9), "case {case}: ratio {}: {f:?}", ratio_max(&v));
            assert!(v.windows(2).all(|w| w[1] - w[0] >= 0.5 * o.min_cell * (1.0 - 1e-9)), "case {case}: {v:?}");
            // The density's rounding lets a cell exceed the largest by a little (as without crowding).
            let widest = v.windows(2).map(|w| w[1] - w[0]).fold(0.0, f64::max);
            assert!(widest <= 1.02 * o.max_cell, "case {case}: a cell of {widest}: {v:?}");
            over = over.max(widest / o.max_cell);
        }
        eprintln!("{crowded} of 1000 cases crowded; widest cell {over:.4} x the largest");
        // The fallback was needed (the cases are crowded enough to test it).
        assert!(crowded > 0, "no case needed the crowded fallback");
    }

    #[test]
    fn a_sheet_refines_the_mesh_normal_to_it() {
        let o = opts();
        let v = lines(0.0, 10.0, &[Feature { pos: 5.0, kind: Kind::Sheet { h: 0.1 }, key: 0 }], &[], &o).unwrap();
        let i = v.iter().position(|&l| l == 5.0).unwrap();
        assert!((v[i] - v[i - 1] - 0.1).abs() < 0.01 && (v[i + 1] - v[i] - 0.1).abs() < 0.01, "{v:?}");
        assert!(ratio_max(&v) <= 1.5 + 1e-9);
        // An exact line asks for no refinement.
        let v = lines(0.0, 10.0, &[Feature { pos: 5.0, kind: Kind::Exact, key: 0 }], &[], &o).unwrap();
        assert!(v.windows(2).all(|w| w[1] - w[0] > 0.5), "{v:?}");
    }

    #[test]
    fn slab_gets_its_minimum_cells() {
        let o = opts();
        let f = [Feature { pos: 1.6, kind: Kind::Exact, key: 1 }];
        let v = lines(0.0, 10.0, &f, &[MinCells { lo: 0.0, hi: 1.6, cells: 4 }], &o).unwrap();
        assert_eq!(v.iter().filter(|&&x| x < 1.6 - 1e-12).count(), 4, "{v:?}");
    }

    #[test]
    fn bad_input_is_named() {
        let o = opts();
        // The domain narrower than the minimum cell.
        assert!(matches!(lines(0.0, 0.01, &[], &[], &o), Err(MeshProblem::TooClose { .. })));
        let f = [Feature { pos: 11.0, kind: Kind::Exact, key: 1 }];
        assert!(matches!(lines(0.0, 10.0, &f, &[], &o), Err(MeshProblem::Outside { .. })));
        assert!(matches!(check_lines(&[0.0, 1.0, 0.5], 0.01, 1.5), Err(MeshProblem::CellTooSmall { .. })));
        assert!(matches!(check_lines(&[0.0, 1.0, 1.0], 0.01, 1.5), Err(MeshProblem::CellTooSmall { .. })));
        assert!(matches!(check_lines(&[0.0, 1.0, 3.0], 0.01, 1.5), Err(MeshProblem::Grading { .. })));
        let mut bad = o;
        bad.max_ratio = 1.0;
        assert!(matches!(lines(0.0, 10.0, &[], &[], &bad), Err(MeshProblem::Options(_))));
    }
}
