//! `refund-agent`: parse the command line and run it. Everything else lives in the
//! library so tests and the binary share it.

fn main() -> std::process::ExitCode {
    app::cli::main()
}
