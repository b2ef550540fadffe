//! Command line: `check-config`, `plan`, `apply`, `run`, `smoke`.
use clap::Parser;
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(name = "kuryr-l7-router", version, about)]
pub struct Cli {}

pub fn main() -> ExitCode {
    let _cli = Cli::parse();
    ExitCode::SUCCESS
}
