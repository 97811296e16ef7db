//! The `shardwright` binary: see the library's [`run_with`](shardwright_cli::run_with).
//! Ctrl-C or SIGTERM stops a long command cleanly (exit status 130).

use std::process::ExitCode;

use shardwright_cli::Interrupts;

fn main() -> ExitCode {
    let code = shardwright_cli::run_with(std::env::args_os(), Interrupts::Signals);
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}
