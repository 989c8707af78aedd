//! `fairbench completions SHELL` and `fairbench man`: shell completion
//! scripts (clap_complete) and the man page (clap_mangen), generated from
//! the same command tree that parses the arguments, so they never drift.

use anyhow::Context;

#[derive(clap::Args, Debug)]
pub struct CompletionsArgs {
    /// The shell to complete in.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(clap::Args, Debug)]
pub struct ManArgs {}

/// Prints the completion script of `cmd` for the shell asked.
pub fn completions(args: CompletionsArgs, mut cmd: clap::Command) -> anyhow::Result<i32> {
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "fairbench", &mut out);
    write_stdout(&out)
}

/// Prints the man page of `cmd` (section 1), its subcommands included.
pub fn man(_: ManArgs, cmd: clap::Command) -> anyhow::Result<i32> {
    let mut out = Vec::new();
    let man = clap_mangen::Man::new(cmd.clone());
    man.render(&mut out).context("cannot render the man page")?;
    // Each subcommand as a section of its own: synopsis, options, examples.
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("fairbench {}", sub.get_name());
        let page = clap_mangen::Man::new(
            sub.clone()
                .display_name(name.clone())
                .bin_name(name.clone()),
        );
        let mut body = Vec::new();
        page.render_synopsis_section(&mut body)?;
        page.render_description_section(&mut body)?;
        page.render_options_section(&mut body)?;
        page.render_extra_section(&mut body)?;
        let body = String::from_utf8_lossy(&body).replace(".SH ", ".SS ");
        out.extend_from_slice(format!(".SH \"{}\"\n", name.to_uppercase()).as_bytes());
        out.extend_from_slice(body.as_bytes());
    }
    // clap_mangen heads `after_help` "EXTRA"; fairbench's are examples.
    let page = String::from_utf8_lossy(&out)
        .replace(".SH EXTRA", ".SH EXAMPLES")
        .replace(".SS EXTRA", ".SS EXAMPLES");
    write_stdout(page.as_bytes())
}

fn write_stdout(bytes: &[u8]) -> anyhow::Result<i32> {
    crate::output::pipe::write_stdout(bytes).context("cannot write to standard output")?;
    Ok(0)
}
