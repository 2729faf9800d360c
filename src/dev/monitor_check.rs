//! Field DFT monitors in the device harnesses: the monitors attached to the
//! check jobs (a Huygens-like plane inside, a box of all six components at a
//! corner, a plane on the low x face whose averaged components read the ghost
//! layer, and the absorbed power of the lossy parts) and how a device's monitor results are held against the CPU's:
//! per monitor max |X_dev - X_cpu| / max |X_cpu| over every component,
//! sample and frequency; a different layout is infinitely far.

use crate::job::{Axis, DftFields, Monitor, MonitorOutput, SimJob};

/// Give `job` the four check monitors at frequencies of its band.
pub fn attach(job: &mut SimJob) {
    let n = job.mesh.n();
    let f = |k: usize| job.freqs[(k * job.freqs.len() / 4).min(job.freqs.len().saturating_sub(1))];
    let (f1, f2, f3) = (f(1), f(2), f(3));
    job.monitors = vec![
        Monitor::FieldDft {
            name: "mid z plane".into(),
            lo: [1.min(n[0]), 1.min(n[1]), n[2] / 2],
            hi: [n[0].saturating_sub(1).max(1.min(n[0])), n[1].saturating_sub(1).max(1.min(n[1])), n[2] / 2],
            fields: DftFields::Tangential(Axis::Z),
            freqs: vec![f1, f3],
        },
        Monitor::FieldDft { name: "corner box".into(), lo: [0; 3], hi: [n[0].min(4), n[1].min(3), n[2].min(3)], fields: DftFields::All, freqs: vec![f2] },
        Monitor::FieldDft { name: "x0 face".into(), lo: [0; 3], hi: [0, n[1], n[2]], fields: DftFields::Tangential(Axis::X), freqs: vec![f1, f2] },
        // The whole grid of a small job (its lossy walls, media and loads), a corner of a large one.
        Monitor::Absorbed {
            name: "absorbed power".into(),
            lo: [0; 3],
            hi: if job.mesh.cells() <= 200_000 { n } else { n.map(|x| x.min(16)) },
            freqs: vec![f1, f3],
        },
    ];
}

/// The worst relative difference over the monitors of one job.
pub fn diff(cpu: &[MonitorOutput], dev: &[MonitorOutput]) -> f64 {
    if cpu.len() != dev.len() {
        return f64::INFINITY;
    }
    let mut worst = 0.0f64;
    for (c, d) in cpu.iter().zip(dev) {
        let (MonitorOutput::FieldDft { freqs: fc, components: cc, .. }, MonitorOutput::FieldDft { freqs: fd, components: cd, .. }) = (c, d) else {
            worst = worst.max(absorbed_diff(c, d));
            continue;
        };
        if fc != fd || cc.len() != cd.len() {
            return f64::INFINITY;
        }
        let (mut dmax, mut vmax) = (0.0f64, 0.0f64);
        for (a, b) in cc.iter().zip(cd) {
            if (a.field, a.axis, a.first, a.count, a.at_nodes) != (b.field, b.axis, b.first, b.count, b.at_nodes) || a.values.len() != b.values.len() {
                return f64::INFINITY;
            }
            for (x, y) in a.values.iter().zip(&b.values) {
                let dd = (x - y).norm();
                dmax = if dd.is_nan() { f64::INFINITY } else { dmax.max(dd) };
                vmax = vmax.max(x.norm());
            }
        }
        worst = worst.max(if vmax > 0.0 { dmax / vmax } else { dmax });
    }
    worst
}

/// Two absorbed-power results: max |P_dev - P_cpu| / max |P_cpu| over the
/// three losses and the frequencies; other pairs are infinitely far.
fn absorbed_diff(c: &MonitorOutput, d: &MonitorOutput) -> f64 {
    let (
        MonitorOutput::Absorbed { freqs: fc, conductor: c1, dielectric: c2, loads: c3, .. },
        MonitorOutput::Absorbed { freqs: fd, conductor: d1, dielectric: d2, loads: d3, .. },
    ) = (c, d)
    else {
        return f64::INFINITY;
    };
    if fc != fd {
        return f64::INFINITY;
    }
    let (mut dmax, mut vmax) = (0.0f64, 0.0f64);
    for (a, b) in [(c1, d1), (c2, d2), (c3, d3)] {
        for (x, y) in a.iter().zip(b) {
            let dd = (x - y).abs();
            dmax = if dd.is_nan() { f64::INFINITY } else { dmax.max(dd) };
            vmax = vmax.max(x.abs());
        }
    }
    if vmax > 0.0 { dmax / vmax } else { dmax }
}

#[cfg(test)]
mod tests {
    use super::*;
    use num_complex::Complex64;

    #[test]
    fn monitor_differences_are_relative_and_layouts_must_agree() {
        let mut job = crate::bench::box_job(8, 2);
        attach(&mut job);
        let op = crate::engine::fdtd::Operator::new(&job).unwrap();
        let mut f = crate::dev::device_check::random_fields(&op, 5);
        let a = crate::engine::fdtd::cpu_batch::run_from(&job, &op, &mut f).unwrap().monitors;
        assert_eq!(a.len(), 4);
        assert_eq!(diff(&a, &a), 0.0);
        let mut b = a.clone();
        let MonitorOutput::FieldDft { components, .. } = &mut b[1] else { panic!("a field monitor") };
        let vmax = components.iter().flat_map(|c| &c.values).fold(0.0f64, |m, v| m.max(v.norm()));
        assert!(vmax > 0.0);
        components[0].values[0] += Complex64::new(0.0, 1e-3 * vmax);
        assert!((diff(&a, &b) - 1e-3).abs() < 1e-9);
        let MonitorOutput::FieldDft { components, .. } = &mut b[1] else { panic!("a field monitor") };
        components[0].count[0] += 1;
        assert_eq!(diff(&a, &b), f64::INFINITY);
        assert_eq!(diff(&a, &a[..2]), f64::INFINITY);
        // The absorbed power compares relatively too; a field output against it is infinitely far.
        let MonitorOutput::Absorbed { dielectric, .. } = &mut b[3] else { panic!("an absorbed-power monitor") };
        assert!(dielectric.iter().all(|&p| p > 0.0), "the box job's lossy medium absorbs");
        let mut c = a.clone();
        let MonitorOutput::Absorbed { dielectric, .. } = &mut c[3] else { panic!("an absorbed-power monitor") };
        dielectric[0] *= 1.0 + 1e-3;
        assert!(diff(&a, &c) > 0.0 && diff(&a, &c) <= 1e-3 + 1e-12);
        let mut e = a.clone();
        e[3] = a[0].clone();
        assert_eq!(diff(&a, &e), f64::INFINITY);
    }
}
