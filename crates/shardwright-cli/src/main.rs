//! The `shardwright` binary: see the library's [`run`](shardwright_cli::run).

use std::process::ExitCode;

fn main() -> ExitCode {
    let code = shardwright_cli::run(std::env::args_os());
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}
