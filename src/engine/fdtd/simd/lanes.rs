//! The vector operations the row kernels (`rows.rs`) are written in, one
//! implementation per instruction-set level: AVX-512 (16 lanes, mask
//! registers for the row tails, material coefficients by permutes), AVX2 (8
//! lanes, masked loads and stores) and a portable 4-lane one (plain arrays
//! that LLVM turns into SSE2 / NEON). Only add, subtract and multiply, each a
//! separate rounding (no fused multiply-add), so every level gives the
//! reference's bits.

/// The widest instruction set the vector loops may use on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// The compile-time baseline (SSE2 on x86-64): the portable 4-lane code.
    Base,
    Avx2,
    Avx512,
}

impl Level {
    /// The best level this CPU supports (runtime detection).
    pub fn detect() -> Level {
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx512f")
                && std::is_x86_feature_detected!("avx512vl")
                && std::is_x86_feature_detected!("avx512bw")
                && std::is_x86_feature_detected!("avx2")
                && std::is_x86_feature_detected!("fma")
            {
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

/// The material coefficient table as the vector lookups want it: padded to
/// 32 entries (indices at or beyond `len` are never looked up).
#[derive(Debug, Clone)]
pub struct Coefs {
    pub ca: [f32; 32],
    pub cb: [f32; 32],
    /// Entries in the operator's table (may exceed 32: then looked up one by one).
    pub len: usize,
}

impl Coefs {
    pub fn new(ca: &[f32], cb: &[f32]) -> Coefs {
        let mut t = Coefs { ca: [0.0; 32], cb: [0.0; 32], len: ca.len() };
        for (i, (&a, &b)) in ca.iter().zip(cb).take(32).enumerate() {
            t.ca[i] = a;
            t.cb[i] = b;
        }
        t
    }
}

/// One instruction-set level's vectors. Every function is `unsafe`: the
/// caller runs at that level (see `sweep.rs`) and passes pointers valid for
/// the lanes it reads or writes (`n` lanes where a count is given).
pub trait Simd {
    /// Lanes per vector.
    const W: usize;
    type V: Copy;
    /// The first `n` lanes (1 <= n <= W) of a tail.
    type M: Copy;
    unsafe fn splat(x: f32) -> Self::V;
    unsafe fn load(p: *const f32) -> Self::V;
    unsafe fn store(p: *mut f32, v: Self::V);
    unsafe fn mask(n: usize) -> Self::M;
    /// The masked lanes of `p` (the others zero, never read from memory).
    unsafe fn load_m(p: *const f32, m: Self::M) -> Self::V;
    unsafe fn store_m(p: *mut f32, v: Self::V, m: Self::M);
    unsafe fn add(a: Self::V, b: Self::V) -> Self::V;
    unsafe fn sub(a: Self::V, b: Self::V) -> Self::V;
    unsafe fn mul(a: Self::V, b: Self::V) -> Self::V;
    /// `v` with lane `l` (< W) set to `x`.
    unsafe fn set_lane(v: Self::V, l: usize, x: f32) -> Self::V;
    /// `(ca[mat[l]], cb[mat[l]])` for the lanes `l < n` (n = W: all).
    unsafe fn coefs(t: &Coefs, full_ca: &[f32], full_cb: &[f32], mat: *const u8, n: usize, m: Self::M) -> (Self::V, Self::V);
}

/// Lane by lane lookups into a buffer (tables too large for the permutes).
#[inline(always)]
unsafe fn fill_coefs<const W: usize>(full_ca: &[f32], full_cb: &[f32], mat: *const u8, n: usize) -> ([f32; W], [f32; W]) {
    let (mut a, mut b) = ([0.0f32; W], [0.0f32; W]);
    for l in 0..n.min(W) {
        let m = *mat.add(l) as usize;
        a[l] = *full_ca.get_unchecked(m);
        b[l] = *full_cb.get_unchecked(m);
    }
    (a, b)
}

/// Portable 4 lanes (plain arrays; LLVM vectorises them at the baseline).
pub struct Base;

impl Simd for Base {
    const W: usize = 4;
    type V = [f32; 4];
    type M = usize;
    #[inline(always)]
    unsafe fn splat(x: f32) -> [f32; 4] {
        [x; 4]
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> [f32; 4] {
        std::ptr::read_unaligned(p as *const [f32; 4])
    }
    #[inline(always)]
    unsafe fn store(p: *mut f32, v: [f32; 4]) {
        std::ptr::write_unaligned(p as *mut [f32; 4], v)
    }
    #[inline(always)]
    unsafe fn mask(n: usize) -> usize {
        n
    }
    #[inline(always)]
    unsafe fn load_m(p: *const f32, n: usize) -> [f32; 4] {
        let mut v = [0.0; 4];
        for (l, x) in v.iter_mut().enumerate().take(n) {
            *x = *p.add(l);
        }
        v
    }
    #[inline(always)]
    unsafe fn store_m(p: *mut f32, v: [f32; 4], n: usize) {
        for (l, x) in v.iter().enumerate().take(n) {
            *p.add(l) = *x;
        }
    }
    #[inline(always)]
    unsafe fn add(a: [f32; 4], b: [f32; 4]) -> [f32; 4] {
        std::array::from_fn(|l| a[l] + b[l])
    }
    #[inline(always)]
    unsafe fn sub(a: [f32; 4], b: [f32; 4]) -> [f32; 4] {
        std::array::from_fn(|l| a[l] - b[l])
    }
    #[inline(always)]
    unsafe fn mul(a: [f32; 4], b: [f32; 4]) -> [f32; 4] {
        std::array::from_fn(|l| a[l] * b[l])
    }
    #[inline(always)]
    unsafe fn set_lane(mut v: [f32; 4], l: usize, x: f32) -> [f32; 4] {
        v[l] = x;
        v
    }
    #[inline(always)]
    unsafe fn coefs(_t: &Coefs, full_ca: &[f32], full_cb: &[f32], mat: *const u8, n: usize, _m: usize) -> ([f32; 4], [f32; 4]) {
        fill_coefs::<4>(full_ca, full_cb, mat, n)
    }
}

#[cfg(target_arch = "x86_64")]
pub use x86::{Avx2, Avx512};

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{fill_coefs, Coefs, Simd};
    use std::arch::x86_64::*;

    /// AVX2: 8 lanes; tails by `vmaskmovps`.
    pub struct Avx2;

    impl Simd for Avx2 {
        const W: usize = 8;
        type V = __m256;
        type M = __m256i;
        #[inline(always)]
        unsafe fn splat(x: f32) -> __m256 {
            _mm256_set1_ps(x)
        }
        #[inline(always)]
        unsafe fn load(p: *const f32) -> __m256 {
            _mm256_loadu_ps(p)
        }
        #[inline(always)]
        unsafe fn store(p: *mut f32, v: __m256) {
            _mm256_storeu_ps(p, v)
        }
        #[inline(always)]
        unsafe fn mask(n: usize) -> __m256i {
            _mm256_cmpgt_epi32(_mm256_set1_epi32(n as i32), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))
        }
        #[inline(always)]
        unsafe fn load_m(p: *const f32, m: __m256i) -> __m256 {
            _mm256_maskload_ps(p, m)
        }
        #[inline(always)]
        unsafe fn store_m(p: *mut f32, v: __m256, m: __m256i) {
            _mm256_maskstore_ps(p, m, v)
        }
        #[inline(always)]
        unsafe fn add(a: __m256, b: __m256) -> __m256 {
            _mm256_add_ps(a, b)
        }
        #[inline(always)]
        unsafe fn sub(a: __m256, b: __m256) -> __m256 {
            _mm256_sub_ps(a, b)
        }
        #[inline(always)]
        unsafe fn mul(a: __m256, b: __m256) -> __m256 {
            _mm256_mul_ps(a, b)
        }
        #[inline(always)]
        unsafe fn set_lane(v: __m256, l: usize, x: f32) -> __m256 {
            let at = _mm256_cmpeq_epi32(_mm256_set1_epi32(l as i32), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
            _mm256_blendv_ps(v, _mm256_set1_ps(x), _mm256_castsi256_ps(at))
        }
        #[inline(always)]
        unsafe fn coefs(t: &Coefs, full_ca: &[f32], full_cb: &[f32], mat: *const u8, n: usize, _m: __m256i) -> (__m256, __m256) {
            if t.len <= 8 {
                let idx = if n >= 8 {
                    _mm256_cvtepu8_epi32(_mm_loadl_epi64(mat as *const __m128i))
                } else {
                    // The tail's bytes only (the row may end the array).
                    let mut b = 0u64;
                    for l in 0..n {
                        b |= (*mat.add(l) as u64) << (8 * l);
                    }
                    _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(b as i64))
                };
                (_mm256_permutevar8x32_ps(_mm256_loadu_ps(t.ca.as_ptr()), idx), _mm256_permutevar8x32_ps(_mm256_loadu_ps(t.cb.as_ptr()), idx))
            } else {
                let (a, b) = fill_coefs::<8>(full_ca, full_cb, mat, n);
                (_mm256_loadu_ps(a.as_ptr()), _mm256_loadu_ps(b.as_ptr()))
            }
        }
    }

    /// AVX-512: 16 lanes; tails by mask registers, coefficients by `vpermps`.
    pub struct Avx512;

    impl Simd for Avx512 {
        const W: usize = 16;
        type V = __m512;
        type M = __mmask16;
        #[inline(always)]
        unsafe fn splat(x: f32) -> __m512 {
            _mm512_set1_ps(x)
        }
        #[inline(always)]
        unsafe fn load(p: *const f32) -> __m512 {
            _mm512_loadu_ps(p)
        }
        #[inline(always)]
        unsafe fn store(p: *mut f32, v: __m512) {
            _mm512_storeu_ps(p, v)
        }
        #[inline(always)]
        unsafe fn mask(n: usize) -> __mmask16 {
            ((1u32 << n) - 1) as __mmask16
        }
        #[inline(always)]
        unsafe fn load_m(p: *const f32, m: __mmask16) -> __m512 {
            _mm512_maskz_loadu_ps(m, p)
        }
        #[inline(always)]
        unsafe fn store_m(p: *mut f32, v: __m512, m: __mmask16) {
            _mm512_mask_storeu_ps(p, m, v)
        }
        #[inline(always)]
        unsafe fn add(a: __m512, b: __m512) -> __m512 {
            _mm512_add_ps(a, b)
        }
        #[inline(always)]
        unsafe fn sub(a: __m512, b: __m512) -> __m512 {
            _mm512_sub_ps(a, b)
        }
        #[inline(always)]
        unsafe fn mul(a: __m512, b: __m512) -> __m512 {
            _mm512_mul_ps(a, b)
        }
        #[inline(always)]
        unsafe fn set_lane(v: __m512, l: usize, x: f32) -> __m512 {
            _mm512_mask_mov_ps(v, (1u32 << l) as __mmask16, _mm512_set1_ps(x))
        }
        #[inline(always)]
        unsafe fn coefs(t: &Coefs, full_ca: &[f32], full_cb: &[f32], mat: *const u8, n: usize, m: __mmask16) -> (__m512, __m512) {
            if t.len <= 32 {
                let bytes = if n >= 16 { _mm_loadu_si128(mat as *const __m128i) } else { _mm_maskz_loadu_epi8(m, mat as *const i8) };
                let idx = _mm512_cvtepu8_epi32(bytes);
                let ca = _mm512_permutex2var_ps(_mm512_loadu_ps(t.ca.as_ptr()), idx, _mm512_loadu_ps(t.ca.as_ptr().add(16)));
                let cb = _mm512_permutex2var_ps(_mm512_loadu_ps(t.cb.as_ptr()), idx, _mm512_loadu_ps(t.cb.as_ptr().add(16)));
                (ca, cb)
            } else {
                let (a, b) = fill_coefs::<16>(full_ca, full_cb, mat, n);
                (_mm512_loadu_ps(a.as_ptr()), _mm512_loadu_ps(b.as_ptr()))
            }
        }
    }
}
