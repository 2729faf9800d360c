//! The `emvolve` command line: a thin layer over the library.

fn main() {
    std::process::exit(emvolve::cli::main());
}
