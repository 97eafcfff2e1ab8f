//! `gpuaudit completions` and `gpuaudit man`: made from the command line's own definition, so
//! every subcommand is in them; they need no ledger and no configuration.

use super::{gpuaudit, stdout, workdir};

const SUBCOMMANDS: &[&str] =
    &["import", "ledger", "summary", "waste", "reconcile", "cost", "export", "config", "formats"];

#[test]
fn completions_for_every_shell_and_the_man_page_name_every_subcommand() {
    let dir = workdir();
    // A broken configuration does not stop them.
    std::fs::write(dir.path().join("gpuaudit.toml"), "garbage = [").unwrap();
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let out = gpuaudit(dir.path(), &["completions", shell]);
        assert!(out.status.success(), "{shell}");
        let text = stdout(&out);
        for sub in SUBCOMMANDS {
            assert!(text.contains(sub), "{shell} completion lacks {sub}");
        }
        assert!(text.contains("month"), "{shell} completes the options");
    }
    let out = gpuaudit(dir.path(), &["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2), "an unknown shell is a usage error");
    let man = stdout(&gpuaudit(dir.path(), &["man"]));
    assert!(man.contains(".TH gpuaudit 1"), "{}", &man[..man.len().min(300)]);
    for sub in SUBCOMMANDS {
        assert!(man.contains(&format!("gpuaudit\\-{sub}")), "the man page lists {sub}");
    }
    assert!(!dir.path().join(".gpuaudit").exists(), "no ledger was made");
}
