//! The `qa-loop` binary: the command line over the library.

fn main() -> std::process::ExitCode {
    qa_loop::commands::main()
}
