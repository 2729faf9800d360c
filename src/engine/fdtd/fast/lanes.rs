//! The vector loops: one run of a row, H or E, over contiguous x, each
//! derivative through its CPML tap (none, one per row, or one per cell).
//! Written as plain indexed loops over equal-length slices with the row's
//! constants hoisted, which LLVM turns into packed AVX-512 / AVX2 code in the
//! `#[target_feature]` sweeps of `sweep.rs`. The arithmetic is the
//! reference's, operation for operation (Rust never contracts a * b + c into
//! a fused multiply-add, so the results are the same bits on every level).

/// The widest instruction set the vector loops may use on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// The compile-time baseline (SSE2 on x86-64).
    Base,
    Avx2,
    Avx512,
}

impl Level {
    /// The best level this CPU supports (runtime detection).
    pub fn detect() -> Level {
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("avx512vl") && std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
                return Level::Avx512;
            }
            if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
                return Level::Avx2;
            }
        }
        Level::Base
    }

    /// Every level this CPU can run (for the tests).
    pub fn available() -> Vec<Level> {
        let best = Level::detect();
        [Level::Base, Level::Avx2, Level::Avx512].into_iter().filter(|&l| l as u8 <= best as u8).collect()
    }
}

/// An inverse spacing along a row: one value (the row's y or z spacing) or
/// one per cell (x).
pub trait Inv: Copy {
    /// The value at cell `i` of the run (`i` < the run's length).
    fn at(self, i: usize) -> f32;
}

impl Inv for f32 {
    #[inline(always)]
    fn at(self, _i: usize) -> f32 {
        self
    }
}

impl Inv for &[f32] {
    #[inline(always)]
    fn at(self, i: usize) -> f32 {
        debug_assert!(i < self.len());
        // SAFETY: the caller passes a slice as long as the run.
        unsafe { *self.get_unchecked(i) }
    }
}

/// How a derivative is stretched along a run (`cpu::stretch`, vectorised):
/// not at all, with the row's one CPML coefficient set (y or z layers), or
/// per cell (x layers).
pub trait Tap: Copy {
    /// The stretched derivative at cell `i` of the run, its memory updated.
    ///
    /// # Safety
    /// The tap's pointers cover the run, and its memories are this thread's.
    unsafe fn apply(self, t: f32, i: usize) -> f32;
}

/// No CPML on this axis here.
#[derive(Clone, Copy)]
pub struct Plain;

impl Tap for Plain {
    #[inline(always)]
    unsafe fn apply(self, t: f32, _i: usize) -> f32 {
        t
    }
}

/// Inside a y or z layer: one coefficient set for the row (`b > 0`), the
/// memory per cell from `psi` (the run's first cell).
#[derive(Clone, Copy)]
pub struct Row {
    pub b: f32,
    pub c: f32,
    pub kinv: f32,
    pub psi: *mut f32,
}

impl Tap for Row {
    #[inline(always)]
    unsafe fn apply(self, t: f32, i: usize) -> f32 {
        let s = self.psi.add(i);
        *s = self.b * *s + self.c * t;
        t * self.kinv + *s
    }
}

/// Along x: coefficients per cell (from the run's first cell); only cells
/// with `b > 0` are stretched and have their memory written, as in the
/// reference (selects, so the loop stays vectorised).
#[derive(Clone, Copy)]
pub struct Line {
    pub b: *const f32,
    pub c: *const f32,
    pub kinv: *const f32,
    pub psi: *mut f32,
}

impl Tap for Line {
    #[inline(always)]
    unsafe fn apply(self, t: f32, i: usize) -> f32 {
        let (b, s) = (*self.b.add(i), self.psi.add(i));
        let old = *s;
        let new = b * old + *self.c.add(i) * t;
        let out = t * *self.kinv.add(i) + new;
        let inside = b > 0.0;
        *s = if inside { new } else { old };
        if inside {
            out
        } else {
            t
        }
    }
}

/// Cells `i..i+W` of an H run (fixed width, so each line is one vector operation).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn h_block<const W: usize, A: Inv, B: Inv, TA: Tap, TB: Tap>(h: &mut [f32], eb0: &[f32], eb1: &[f32], ea0: &[f32], ea1: &[f32], ia: A, ib: B, ta: TA, tb: TB, db: f32, i: usize) {
    let h: &mut [f32; W] = (&mut h[i..i + W]).try_into().unwrap();
    let eb0: &[f32; W] = eb0[i..i + W].try_into().unwrap();
    let eb1: &[f32; W] = eb1[i..i + W].try_into().unwrap();
    let ea0: &[f32; W] = ea0[i..i + W].try_into().unwrap();
    let ea1: &[f32; W] = ea1[i..i + W].try_into().unwrap();
    for l in 0..W {
        // SAFETY: the taps cover the run (see `Tap`).
        let t1 = unsafe { ta.apply((eb1[l] - eb0[l]) * ia.at(i + l), i + l) };
        let t2 = unsafe { tb.apply((ea1[l] - ea0[l]) * ib.at(i + l), i + l) };
        h[l] -= db * (t1 - t2);
    }
}

/// `h[i] -= db * ((eb1 - eb0) * ia - (ea1 - ea0) * ib)` over the run: all
/// slices as long as `h` (the reference's H update; each difference through its CPML tap). Blocks of
/// 16, then 8, 4 and single cells, so short rows stay vectorised.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn h_run<A: Inv, B: Inv, TA: Tap, TB: Tap>(h: &mut [f32], eb0: &[f32], eb1: &[f32], ea0: &[f32], ea1: &[f32], ia: A, ib: B, ta: TA, tb: TB, db: f32) {
    let n = h.len();
    let mut i = 0;
    while i + 16 <= n {
        h_block::<16, A, B, TA, TB>(h, eb0, eb1, ea0, ea1, ia, ib, ta, tb, db, i);
        i += 16;
    }
    if i + 8 <= n {
        h_block::<8, A, B, TA, TB>(h, eb0, eb1, ea0, ea1, ia, ib, ta, tb, db, i);
        i += 8;
    }
    if i + 4 <= n {
        h_block::<4, A, B, TA, TB>(h, eb0, eb1, ea0, ea1, ia, ib, ta, tb, db, i);
        i += 4;
    }
    while i < n {
        h_block::<1, A, B, TA, TB>(h, eb0, eb1, ea0, ea1, ia, ib, ta, tb, db, i);
        i += 1;
    }
}

/// Cells `i..i+W` of an E run.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn e_block<const W: usize, A: Inv, B: Inv, TA: Tap, TB: Tap>(e: &mut [f32], hb0: &[f32], hb1: &[f32], ha0: &[f32], ha1: &[f32], ia: A, ib: B, ta: TA, tb: TB, ca: f32, cb: f32, i: usize) {
    let e: &mut [f32; W] = (&mut e[i..i + W]).try_into().unwrap();
    let hb0: &[f32; W] = hb0[i..i + W].try_into().unwrap();
    let hb1: &[f32; W] = hb1[i..i + W].try_into().unwrap();
    let ha0: &[f32; W] = ha0[i..i + W].try_into().unwrap();
    let ha1: &[f32; W] = ha1[i..i + W].try_into().unwrap();
    for l in 0..W {
        // SAFETY: as in `h_block`.
        let t1 = unsafe { ta.apply((hb0[l] - hb1[l]) * ia.at(i + l), i + l) };
        let t2 = unsafe { tb.apply((ha0[l] - ha1[l]) * ib.at(i + l), i + l) };
        e[l] = ca * e[l] + cb * (t1 - t2);
    }
}

/// `e[i] = ca * e[i] + cb * ((hb0 - hb1) * ia - (ha0 - ha1) * ib)` over a run
/// of one material (the reference's E update, the differences through their CPML taps; `*0` at the
/// sample, `*1` one cell below along the derivative axis), in blocks as `h_run`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn e_run<A: Inv, B: Inv, TA: Tap, TB: Tap>(e: &mut [f32], hb0: &[f32], hb1: &[f32], ha0: &[f32], ha1: &[f32], ia: A, ib: B, ta: TA, tb: TB, ca: f32, cb: f32) {
    let n = e.len();
    let mut i = 0;
    while i + 16 <= n {
        e_block::<16, A, B, TA, TB>(e, hb0, hb1, ha0, ha1, ia, ib, ta, tb, ca, cb, i);
        i += 16;
    }
    if i + 8 <= n {
        e_block::<8, A, B, TA, TB>(e, hb0, hb1, ha0, ha1, ia, ib, ta, tb, ca, cb, i);
        i += 8;
    }
    if i + 4 <= n {
        e_block::<4, A, B, TA, TB>(e, hb0, hb1, ha0, ha1, ia, ib, ta, tb, ca, cb, i);
        i += 4;
    }
    while i < n {
        e_block::<1, A, B, TA, TB>(e, hb0, hb1, ha0, ha1, ia, ib, ta, tb, ca, cb, i);
        i += 1;
    }
}
