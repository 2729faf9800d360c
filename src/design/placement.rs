//! Rigid motions of geometry (the `transform` of `Group` and `Repeat`): a
//! 3x3 orthogonal matrix and a translation, composed and applied in metres.

use crate::job::Axis;

/// `x -> m x + t`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Affine {
    pub m: [[f64; 3]; 3],
    pub t: [f64; 3],
}

impl Affine {
    pub const IDENTITY: Affine = Affine { m: [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]], t: [0.0; 3] };

    pub fn translate(t: [f64; 3]) -> Affine {
        Affine { t, ..Affine::IDENTITY }
    }

    /// Reflection in the plane `axis = at`.
    pub fn mirror(axis: Axis, at: f64) -> Affine {
        let mut a = Affine::IDENTITY;
        let i = axis.index();
        a.m[i][i] = -1.0;
        a.t[i] = 2.0 * at;
        a
    }

    /// Right-handed rotation by `deg` degrees about the line along `axis`
    /// through `about`. Multiples of 90 degrees are exact (entries snapped),
    /// so a quarter turn keeps boxes boxes.
    pub fn rotate(axis: Axis, deg: f64, about: [f64; 3]) -> Affine {
        let th = deg.to_radians();
        let snap = |x: f64| {
            if x.abs() < 1e-12 {
                0.0
            } else if (x.abs() - 1.0).abs() < 1e-12 {
                x.signum()
            } else {
                x
            }
        };
        let (s, c) = (snap(th.sin()), snap(th.cos()));
        let (p, q) = axis.others();
        let (p, q) = (p.index(), q.index());
        let mut m = Affine::IDENTITY.m;
        // (p, q) is right-handed about `axis`: p -> q is the positive turn.
        m[p][p] = c;
        m[p][q] = -s;
        m[q][p] = s;
        m[q][q] = c;
        let r = Affine { m, t: [0.0; 3] };
        Affine::translate(about).then_after(&r).then_after(&Affine::translate(about.map(|x| -x)))
    }

    /// `self` applied after `inner`: x -> self(inner(x)).
    pub fn then_after(&self, inner: &Affine) -> Affine {
        let mut m = [[0.0; 3]; 3];
        let mut t = self.t;
        for i in 0..3 {
            for j in 0..3 {
                m[i][j] = (0..3).map(|k| self.m[i][k] * inner.m[k][j]).sum();
            }
            t[i] += (0..3).map(|k| self.m[i][k] * inner.t[k]).sum::<f64>();
        }
        Affine { m, t }
    }

    pub fn apply(&self, x: [f64; 3]) -> [f64; 3] {
        std::array::from_fn(|i| (0..3).map(|k| self.m[i][k] * x[k]).sum::<f64>() + self.t[i])
    }

    /// The axis `a` is carried onto, if onto an axis (either direction).
    pub fn map_axis(&self, a: Axis) -> Option<Axis> {
        let j = a.index();
        (0..3).find(|&i| (self.m[i][j].abs() - 1.0).abs() < 1e-9).map(Axis::from_index)
    }

    /// Whether every axis goes onto an axis (boxes stay boxes).
    pub fn keeps_axes(&self) -> bool {
        Axis::ALL.iter().all(|&a| self.map_axis(a).is_some())
    }

    pub fn is_identity(&self) -> bool {
        *self == Affine::IDENTITY
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quarter_turns_are_exact_and_compose() {
        let r = Affine::rotate(Axis::Z, 90.0, [1.0, 0.0, 0.0]);
        assert_eq!(r.apply([2.0, 0.0, 5.0]), [1.0, 1.0, 5.0]);
        assert_eq!(r.map_axis(Axis::X), Some(Axis::Y));
        let half = r.then_after(&r);
        assert_eq!(half.apply([2.0, 0.0, 0.0]), [0.0, 0.0, 0.0]);
        let m = Affine::mirror(Axis::X, 1.0);
        assert_eq!(m.apply([3.0, 2.0, 1.0]), [-1.0, 2.0, 1.0]);
        let tilt = Affine::rotate(Axis::X, 30.0, [0.0; 3]);
        assert!(!tilt.keeps_axes() && tilt.map_axis(Axis::X) == Some(Axis::X) && tilt.map_axis(Axis::Z).is_none());
        let y = tilt.apply([0.0, 1.0, 0.0]);
        assert!((y[1] - 30f64.to_radians().cos()).abs() < 1e-15 && (y[2] - 0.5).abs() < 1e-15);
    }
}
