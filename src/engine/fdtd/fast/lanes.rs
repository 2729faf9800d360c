//! The vector loops: one CPML-free run of a row, H or E, over contiguous x.
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

/// Cells `i..i+W` of an H run (fixed width, so each line is one vector operation).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn h_block<const W: usize, A: Inv, B: Inv>(h: &mut [f32], eb0: &[f32], eb1: &[f32], ea0: &[f32], ea1: &[f32], ia: A, ib: B, db: f32, i: usize) {
    let h: &mut [f32; W] = (&mut h[i..i + W]).try_into().unwrap();
    let eb0: &[f32; W] = eb0[i..i + W].try_into().unwrap();
    let eb1: &[f32; W] = eb1[i..i + W].try_into().unwrap();
    let ea0: &[f32; W] = ea0[i..i + W].try_into().unwrap();
    let ea1: &[f32; W] = ea1[i..i + W].try_into().unwrap();
    for l in 0..W {
        let t1 = (eb1[l] - eb0[l]) * ia.at(i + l);
        let t2 = (ea1[l] - ea0[l]) * ib.at(i + l);
        h[l] -= db * (t1 - t2);
    }
}

/// `h[i] -= db * ((eb1 - eb0) * ia - (ea1 - ea0) * ib)` over the run: all
/// slices as long as `h` (the reference's H update without CPML). Blocks of
/// 16, then 8, 4 and single cells, so short rows stay vectorised.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn h_run<A: Inv, B: Inv>(h: &mut [f32], eb0: &[f32], eb1: &[f32], ea0: &[f32], ea1: &[f32], ia: A, ib: B, db: f32) {
    let n = h.len();
    let mut i = 0;
    while i + 16 <= n {
        h_block::<16, A, B>(h, eb0, eb1, ea0, ea1, ia, ib, db, i);
        i += 16;
    }
    if i + 8 <= n {
        h_block::<8, A, B>(h, eb0, eb1, ea0, ea1, ia, ib, db, i);
        i += 8;
    }
    if i + 4 <= n {
        h_block::<4, A, B>(h, eb0, eb1, ea0, ea1, ia, ib, db, i);
        i += 4;
    }
    while i < n {
        h_block::<1, A, B>(h, eb0, eb1, ea0, ea1, ia, ib, db, i);
        i += 1;
    }
}

/// Cells `i..i+W` of an E run.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn e_block<const W: usize, A: Inv, B: Inv>(e: &mut [f32], hb0: &[f32], hb1: &[f32], ha0: &[f32], ha1: &[f32], ia: A, ib: B, ca: f32, cb: f32, i: usize) {
    let e: &mut [f32; W] = (&mut e[i..i + W]).try_into().unwrap();
    let hb0: &[f32; W] = hb0[i..i + W].try_into().unwrap();
    let hb1: &[f32; W] = hb1[i..i + W].try_into().unwrap();
    let ha0: &[f32; W] = ha0[i..i + W].try_into().unwrap();
    let ha1: &[f32; W] = ha1[i..i + W].try_into().unwrap();
    for l in 0..W {
        let t1 = (hb0[l] - hb1[l]) * ia.at(i + l);
        let t2 = (ha0[l] - ha1[l]) * ib.at(i + l);
        e[l] = ca * e[l] + cb * (t1 - t2);
    }
}

/// `e[i] = ca * e[i] + cb * ((hb0 - hb1) * ia - (ha0 - ha1) * ib)` over a run
/// of one material (the reference's E update without CPML; `*0` at the
/// sample, `*1` one cell below along the derivative axis), in blocks as `h_run`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn e_run<A: Inv, B: Inv>(e: &mut [f32], hb0: &[f32], hb1: &[f32], ha0: &[f32], ha1: &[f32], ia: A, ib: B, ca: f32, cb: f32) {
    let n = e.len();
    let mut i = 0;
    while i + 16 <= n {
        e_block::<16, A, B>(e, hb0, hb1, ha0, ha1, ia, ib, ca, cb, i);
        i += 16;
    }
    if i + 8 <= n {
        e_block::<8, A, B>(e, hb0, hb1, ha0, ha1, ia, ib, ca, cb, i);
        i += 8;
    }
    if i + 4 <= n {
        e_block::<4, A, B>(e, hb0, hb1, ha0, ha1, ia, ib, ca, cb, i);
        i += 4;
    }
    while i < n {
        e_block::<1, A, B>(e, hb0, hb1, ha0, ha1, ia, ib, ca, cb, i);
        i += 1;
    }
}
