//! The memory check: a grid is refused from its cell count alone, before
//! anything is allocated or looped over for it, when even the least an engine
//! needs per cell would exceed the memory available: the smallest of the
//! machine's memory, the cgroup's memory limit (containers, cluster jobs) and
//! what the process's address-space limit (`ulimit -v`) leaves, or a smaller
//! budget a caller sets.

use super::error::DesignError;

/// The least any engine keeps per cell, in bytes: FDTD's six f32 field
/// components (24), its three edge-material bytes and the cell's material byte.
/// TLM needs more (twelve or more f32 pulses per node); a refusal rests on the
/// lower bound, so it never refuses a grid that could run.
pub const MIN_BYTES_PER_CELL: u64 = 28;

/// Memory a design's grids may use, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryBudget {
    pub bytes: u64,
    /// Where the figure comes from, for the message ("this machine's 23.4 GiB").
    pub source: &'static str,
}

impl MemoryBudget {
    /// The memory this process may use: the smallest of the machine's
    /// physical memory (Linux: `MemTotal` of /proc/meminfo), the cgroup
    /// memory limit (v2 `memory.max`, v1 `memory.limit_in_bytes`) and what
    /// the address-space limit (`RLIMIT_AS`) leaves beyond what the process
    /// already maps; where none is known, the largest allocation Rust allows
    /// (`isize::MAX` bytes).
    pub fn machine() -> MemoryBudget {
        let limits = [
            machine_memory().map(|b| MemoryBudget { bytes: b, source: "this machine's memory" }),
            cgroup_limit().map(|b| MemoryBudget { bytes: b, source: "the cgroup memory limit (memory.max / memory.limit_in_bytes)" }),
            address_space_left().map(|b| MemoryBudget { bytes: b, source: "what the address-space limit (ulimit -v) leaves" }),
        ];
        limits
            .into_iter()
            .flatten()
            .min_by_key(|b| b.bytes)
            .unwrap_or(MemoryBudget { bytes: isize::MAX as u64, source: "the largest allocation possible" })
    }

    /// A budget of `bytes` (tests, or a caller that shares the machine).
    pub fn bytes(bytes: u64) -> MemoryBudget {
        MemoryBudget { bytes, source: "the memory budget" }
    }

    /// What to change besides the grid, when this budget refuses it.
    fn remedy(&self) -> &'static str {
        if self.source.contains("ulimit") {
            ", or raise the limit (ulimit -v)"
        } else if self.source.contains("cgroup") {
            ", or give the job a larger memory limit"
        } else {
            ""
        }
    }
}

/// Physical memory in bytes, where the system says.
fn machine_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// The memory limit of this process's cgroup, where one is set: v2 names the
/// group in /proc/self/cgroup (`0::/path`); inside a container the group is
/// usually the root of /sys/fs/cgroup, so that file is read too. v1 keeps it
/// in the memory controller's directory. "max" and v1's huge "unlimited"
/// value are no limit.
fn cgroup_limit() -> Option<u64> {
    let read = |p: &str| std::fs::read_to_string(p).ok().and_then(|t| t.trim().parse::<u64>().ok());
    let mut found: Vec<u64> = vec![];
    if let Ok(groups) = std::fs::read_to_string("/proc/self/cgroup") {
        for line in groups.lines() {
            if let Some(path) = line.strip_prefix("0::") {
                found.extend(read(&format!("/sys/fs/cgroup{}/memory.max", path.trim_end_matches('/'))));
            }
        }
    }
    found.extend(read("/sys/fs/cgroup/memory.max"));
    found.extend(read("/sys/fs/cgroup/memory/memory.limit_in_bytes"));
    // v1 writes "no limit" as the largest page-aligned i64.
    found.into_iter().filter(|&b| b < (1 << 60)).min()
}

/// The address space `RLIMIT_AS` leaves to new allocations (the limit less
/// what is mapped now: code, thread stacks, the allocator's arenas); None
/// without a limit.
fn address_space_left() -> Option<u64> {
    let mut r = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes one rlimit struct, which `r` is.
    if unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut r) } != 0 || r.rlim_cur == libc::RLIM_INFINITY {
        return None;
    }
    let limit = r.rlim_cur as u64;
    // /proc/self/statm: total mapped pages first.
    let mapped = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|t| t.split_whitespace().next().and_then(|p| p.parse::<u64>().ok()))
        .map_or(0, |pages| pages.saturating_mul(4096));
    Some(limit.saturating_sub(mapped))
}

/// Check a grid of `n` cells per axis against `budget` before it exists.
/// Counts may be anything a design produces (a saturated `usize` from an
/// absurd cell size included); the product is formed without overflow.
/// Returns the cell count.
pub fn check_grid(n: [usize; 3], budget: MemoryBudget, file: &str) -> Result<usize, DesignError> {
    let cells = n.iter().try_fold(1u128, |acc, &k| acc.checked_mul(k as u128));
    let need = cells.and_then(|c| c.checked_mul(MIN_BYTES_PER_CELL as u128));
    match (cells, need) {
        (Some(c), Some(b)) if b <= budget.bytes as u128 && c <= usize::MAX as u128 => Ok(c as usize),
        _ => {
            let cells_text = cells.map_or_else(|| "more than 10^38".to_string(), |c| format!("{c}"));
            Err(DesignError::invalid(
                file,
                "engine.cell",
                format!(
                    "the grid of {} x {} x {} = {cells_text} cells needs at least {} ({MIN_BYTES_PER_CELL} bytes a cell), more than {} ({}): use a larger cell, a smaller domain or less absorbing padding (engine.pml){}",
                    n[0],
                    n[1],
                    n[2],
                    need.map_or_else(|| "more than any machine has".to_string(), |b| gib(b as f64)),
                    budget.source,
                    gib(budget.bytes as f64),
                    budget.remedy()
                ),
            ))
        }
    }
}

fn gib(bytes: f64) -> String {
    format!("{:.1} GiB", bytes / (1u64 << 30) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_from_the_count_alone_and_never_overflows() {
        let b = MemoryBudget::bytes(1 << 30);
        assert_eq!(check_grid([100, 100, 100], b, "f.ron").unwrap(), 1_000_000);
        // 40 million cells need 1.1 GB > 1 GiB.
        let e = check_grid([400, 100, 1000], b, "f.ron").unwrap_err().to_string();
        assert!(e.starts_with("f.ron: engine.cell: the grid of 400 x 100 x 1000 = 40000000 cells"), "{e}");
        assert!(e.contains("the memory budget (1.0 GiB)"), "{e}");
        let e = check_grid([usize::MAX, usize::MAX, 3], b, "f.ron").unwrap_err().to_string();
        assert!(e.contains("more than 10^38") && e.contains("more than any machine has"), "{e}");
        assert!(MemoryBudget::machine().bytes > 1 << 20);
    }

    #[test]
    fn the_budget_is_at_most_the_address_space_limit() {
        // tests/it/design_errors.rs runs the binary under `ulimit -v`; here the parts agree.
        let m = MemoryBudget::machine();
        assert!(m.bytes <= machine_memory().unwrap_or(u64::MAX), "{m:?}");
        if let Some(left) = address_space_left() {
            // `left` is read later, after more may be mapped: a little slack.
            assert!(m.bytes <= left + (256 << 20), "{m:?} above {left}");
        }
        if let Some(c) = cgroup_limit() {
            assert!(m.bytes <= c, "{m:?} above the cgroup's {c}");
        }
        let e = check_grid([2000, 2000, 2000], MemoryBudget { bytes: 4 << 30, source: "what the address-space limit (ulimit -v) leaves" }, "f.ron")
            .unwrap_err()
            .to_string();
        assert!(e.contains("needs at least 208.6 GiB") && e.contains("what the address-space limit (ulimit -v) leaves (4.0 GiB)") && e.ends_with("or raise the limit (ulimit -v)"), "{e}");
    }
}
