//! The memory check: a grid is refused from its cell count alone, before
//! anything is allocated or looped over for it, when even the least an engine
//! needs per cell would exceed the memory available (the machine's, or a
//! smaller budget a caller sets).

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
    /// The machine's physical memory (Linux: `MemTotal` of /proc/meminfo);
    /// elsewhere, the largest allocation Rust allows (`isize::MAX` bytes).
    pub fn machine() -> MemoryBudget {
        match machine_memory() {
            Some(bytes) => MemoryBudget { bytes, source: "this machine's memory" },
            None => MemoryBudget { bytes: isize::MAX as u64, source: "the largest allocation possible" },
        }
    }

    /// A budget of `bytes` (tests, or a caller that shares the machine).
    pub fn bytes(bytes: u64) -> MemoryBudget {
        MemoryBudget { bytes, source: "the memory budget" }
    }
}

/// Physical memory in bytes, where the system says.
fn machine_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
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
                    "the grid of {} x {} x {} = {cells_text} cells needs at least {} ({MIN_BYTES_PER_CELL} bytes a cell), more than {} ({}): use a larger cell or a smaller domain",
                    n[0],
                    n[1],
                    n[2],
                    need.map_or_else(|| "more than any machine has".to_string(), |b| gib(b as f64)),
                    budget.source,
                    gib(budget.bytes as f64)
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
}
